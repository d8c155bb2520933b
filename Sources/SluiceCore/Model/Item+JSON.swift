import Foundation

/// The item's one JSON shape (README "JSON fields"): every documented field is always present (`null` when
/// unknown); text items carry `text`, `message` and `priority`, images `caption`; `review` only when a person
/// decided. The store's content hash stays internal.
extension Item: Codable {
    enum CodingKeys: String, CodingKey {
        case id, kind, userId, status, reason, provider, safeSearch, exif, outputs, original, format, width, height,
             sourceBytes, attempts, timings, createdAt, updatedAt, text, message, priority, caption, review, conversation, pdq, match, reused
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind, forKey: .kind)
        try c.encode(userId, forKey: .userId)
        try c.encode(status, forKey: .status)
        try c.encode(reason, forKey: .reason)
        try c.encode(provider, forKey: .provider)
        try c.encode(safeSearch, forKey: .safeSearch)
        try c.encode(exif, forKey: .exif)
        try c.encode(outputs, forKey: .outputs)
        try c.encode(original, forKey: .original)
        try c.encode(format, forKey: .format)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(sourceBytes, forKey: .sourceBytes)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(timings, forKey: .timings)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        if kind == .text {
            try c.encode(textVerdict, forKey: .text)
            try c.encode(content, forKey: .message)
            try c.encode(priority, forKey: .priority)
            try c.encodeIfPresent(conversation, forKey: .conversation)
        } else {
            try c.encode(caption, forKey: .caption)
            try c.encode(pdq, forKey: .pdq)
            try c.encode(match, forKey: .match)
            try c.encodeIfPresent(reused, forKey: .reused)
        }
        try c.encodeIfPresent(decision, forKey: .review)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try c.decode(ItemID.self, forKey: .id), kind: try c.decode(ItemKind.self, forKey: .kind),
                  userId: try c.decode(String.self, forKey: .userId), status: try c.decode(ItemStatus.self, forKey: .status),
                  reason: try c.decodeIfPresent(String.self, forKey: .reason),
                  provider: try c.decodeIfPresent(String.self, forKey: .provider),
                  safeSearch: try c.decodeIfPresent(SafeSearch.self, forKey: .safeSearch),
                  exif: try c.decodeIfPresent(ExifFindings.self, forKey: .exif),
                  outputs: try c.decodeIfPresent(ItemOutputs.self, forKey: .outputs) ?? ItemOutputs(),
                  original: try c.decodeIfPresent(String.self, forKey: .original),
                  format: try c.decodeIfPresent(String.self, forKey: .format),
                  width: try c.decodeIfPresent(Int.self, forKey: .width), height: try c.decodeIfPresent(Int.self, forKey: .height),
                  sourceBytes: try c.decodeIfPresent(Int.self, forKey: .sourceBytes),
                  timings: try c.decodeIfPresent(StageTimings.self, forKey: .timings) ?? StageTimings(),
                  attempts: try c.decodeIfPresent(Int.self, forKey: .attempts) ?? 0,
                  createdAt: try c.decode(Date.self, forKey: .createdAt), updatedAt: try c.decode(Date.self, forKey: .updatedAt),
                  content: try c.decodeIfPresent(TextContent.self, forKey: .message),
                  textVerdict: try c.decodeIfPresent(TextVerdict.self, forKey: .text),
                  priority: try c.decodeIfPresent(PriorityVerdict.self, forKey: .priority),
                  caption: try c.decodeIfPresent(CaptionOutcome.self, forKey: .caption),
                  decision: try c.decodeIfPresent(HumanDecision.self, forKey: .review),
                  conversation: try c.decodeIfPresent(ConversationVerdict.self, forKey: .conversation),
                  pdq: try c.decodeIfPresent(PDQFingerprint.self, forKey: .pdq),
                  match: try c.decodeIfPresent(BankMatch.self, forKey: .match),
                  reused: try c.decodeIfPresent(ReusedClassification.self, forKey: .reused))
    }
}
