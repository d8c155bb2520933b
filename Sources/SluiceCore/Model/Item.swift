import Foundation

public enum ItemKind: String, Sendable, Codable, CaseIterable {
    case image, text
}

public enum ItemStatus: String, Sendable, Codable, CaseIterable {
    case pending, approved, blocked, review, rejected

    /// A status that ends processing of the current upload.
    public var isFinal: Bool { self != .pending }
}

/// What libexif found in an upload before it was stripped, kept so an operator can audit removals.
public struct ExifFindings: Sendable, Codable, Equatable {
    public var hadGPS: Bool
    public var make: String?
    public var model: String?
    /// EXIF orientation 1...8 as found in the file, nil when absent or invalid.
    public var orientation: Int?

    public init(hadGPS: Bool = false, make: String? = nil, model: String? = nil, orientation: Int? = nil) {
        self.hadGPS = hadGPS
        self.make = make
        self.model = model
        self.orientation = orientation
    }

    public static let none = ExifFindings()
}

extension ExifFindings {
    /// Every field, `null` when unknown (README "JSON fields").
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hadGPS, forKey: .hadGPS)
        try c.encode(make, forKey: .make)
        try c.encode(model, forKey: .model)
        try c.encode(orientation, forKey: .orientation)
    }
}

/// Output files of an approved image, as paths relative to the data root.
public struct ItemOutputs: Sendable, Codable, Equatable {
    public var approved: String?
    public var thumbnail: String?
    public var approvedBytes: Int?
    public var thumbnailBytes: Int?

    public init(approved: String? = nil, thumbnail: String? = nil, approvedBytes: Int? = nil, thumbnailBytes: Int? = nil) {
        self.approved = approved
        self.thumbnail = thumbnail
        self.approvedBytes = approvedBytes
        self.thumbnailBytes = thumbnailBytes
    }
}

extension ItemOutputs {
    /// Every field, `null` when there is no such output.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(approved, forKey: .approved)
        try c.encode(thumbnail, forKey: .thumbnail)
        try c.encode(approvedBytes, forKey: .approvedBytes)
        try c.encode(thumbnailBytes, forKey: .thumbnailBytes)
    }
}

/// Wall-clock time spent per stage, in milliseconds.
public struct StageTimings: Sendable, Codable, Equatable {
    public var decodeMs: Double?
    public var classifyMs: Double?
    public var writeMs: Double?
    public var totalMs: Double?

    public init(decodeMs: Double? = nil, classifyMs: Double? = nil, writeMs: Double? = nil, totalMs: Double? = nil) {
        self.decodeMs = decodeMs
        self.classifyMs = classifyMs
        self.writeMs = writeMs
        self.totalMs = totalMs
    }
}

extension StageTimings {
    /// Every field, `null` for a stage that did not run (text items have none of them).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(decodeMs, forKey: .decodeMs)
        try c.encode(classifyMs, forKey: .classifyMs)
        try c.encode(writeMs, forKey: .writeMs)
        try c.encode(totalMs, forKey: .totalMs)
    }
}

/// A text item's message as received from a queue line.
public struct TextContent: Sendable, Codable, Equatable {
    public var text: String
    public var context: String?
    /// `message`, `post` or `comment`.
    public var kind: String?
    /// `queues/text/{file}:{line}` the message came from.
    public var source: String?
    /// Who the message is for (the rules stage decides whether it may be delivered) and its conversation.
    public var recipientId: String?
    public var conversationId: String?
    /// When the app says the message was sent (`sentAt`); a thread is ordered by it (by arrival without it).
    public var sentAt: Date?
    /// The conversation's members as the line lists them (`members`); senders and recipients are members anyway.
    public var members: [String]?

    public init(text: String, context: String? = nil, kind: String? = nil, source: String? = nil, recipientId: String? = nil,
                conversationId: String? = nil, sentAt: Date? = nil, members: [String]? = nil) {
        self.text = text
        self.context = context
        self.kind = kind
        self.source = source
        self.recipientId = recipientId
        self.conversationId = conversationId
        self.sentAt = sentAt
        self.members = members
    }
}

extension TextContent {
    /// `text`, `context`, `kind` and `source` always (`null` when unknown); the conversation fields when the line had them.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(text, forKey: .text)
        try c.encode(context, forKey: .context)
        try c.encode(kind, forKey: .kind)
        try c.encode(source, forKey: .source)
        try c.encodeIfPresent(recipientId, forKey: .recipientId)
        try c.encodeIfPresent(conversationId, forKey: .conversationId)
        try c.encodeIfPresent(sentAt, forKey: .sentAt)
        try c.encodeIfPresent(members, forKey: .members)
    }
}

/// What a person decided about an item (console, CLI or API). It is part of the item and final: reprocessing
/// skips decided items unless told otherwise, and then a machine verdict that disagrees sends the item to
/// review, never straight to approved. Shown as `review` in the item's JSON.
public struct HumanDecision: Sendable, Codable, Equatable {
    public var by: String
    public var at: Date
    public var note: String?
    /// `approved` or `blocked`; nil for decisions recorded before Sluice kept it (their item's status says it).
    public var decision: ItemStatus?

    public init(by: String, at: Date = Date(), note: String? = nil, decision: ItemStatus? = nil) {
        self.by = by
        self.at = at
        self.note = note
        self.decision = decision
    }

    /// How the decision reads in an item's reason and events: `approved by dana: looks fine`.
    public var summary: String {
        "\(decision?.rawValue ?? "decided") by \(by)" + (note.map { ": \($0)" } ?? "")
    }
}

/// A user's report about a message or image (the API's submit_report).
public struct Report: Sendable, Codable, Equatable {
    public static let categories = ["spam", "harassment", "inappropriate", "other"]
    public var reportId: String
    public var messageId: String
    public var category: String
    public var description: String?
    public var reporterUserId: String?
    public var createdAt: Date
    /// `open` until a person resolves or dismisses it.
    public var status: ReportStatus
    public var resolvedBy: String?
    public var resolvedAt: Date?
    public var resolutionNote: String?
    /// `item` (the default: `messageId` names an item or message) or `user` (`reportUser`: `messageId` is the
    /// reported user's id).
    public var target: String

    public init(reportId: String, messageId: String, category: String, description: String?, reporterUserId: String?, createdAt: Date = Date(),
                status: ReportStatus = .open, resolvedBy: String? = nil, resolvedAt: Date? = nil, resolutionNote: String? = nil,
                target: String = "item") {
        self.reportId = reportId
        self.messageId = messageId
        self.category = category
        self.description = description
        self.reporterUserId = reporterUserId
        self.createdAt = createdAt
        self.status = status
        self.resolvedBy = resolvedBy
        self.resolvedAt = resolvedAt
        self.resolutionNote = resolutionNote
        self.target = target
    }
}

/// One moderated item as the store keeps it; its JSON (`Item+JSON.swift`) is what `sluice status --json` and
/// `sluice list --json` print.
public struct Item: Sendable, Equatable {
    public var id: ItemID
    public var kind: ItemKind
    public var userId: String
    public var status: ItemStatus
    public var reason: String?
    public var provider: String?
    public var safeSearch: SafeSearch?
    public var exif: ExifFindings?
    public var outputs: ItemOutputs
    /// Where the original now lives (quarantine/, review/, rejected/), relative to the data root.
    public var original: String?
    public var format: String?
    public var width: Int?
    public var height: Int?
    public var sourceBytes: Int?
    /// SHA-256 of the upload, so a restart can tell a finished upload from a new one with the same id.
    public var contentHash: String?
    public var timings: StageTimings
    public var attempts: Int
    public var createdAt: Date
    public var updatedAt: Date
    /// Text items: the message and the filter's verdict.
    public var content: TextContent?
    public var textVerdict: TextVerdict?
    /// Text items: urgency.
    public var priority: PriorityVerdict?
    /// Approved images: the caption, or why there is none.
    public var caption: CaptionOutcome?
    /// The human decision that stands for this item's content, when there is one.
    public var decision: HumanDecision?
    /// The rules stage's verdict on a message (blocks, message requests, spam signals), when one applied.
    public var conversation: ConversationVerdict?
    /// Images: the PDQ perceptual hash of the decoded image, a bank match, and a classification taken over
    /// from a near-identical approved image.
    public var pdq: PDQFingerprint?
    public var match: BankMatch?
    public var reused: ReusedClassification?

    public init(id: ItemID, kind: ItemKind, userId: String, status: ItemStatus, reason: String? = nil,
                provider: String? = nil, safeSearch: SafeSearch? = nil, exif: ExifFindings? = nil,
                outputs: ItemOutputs = ItemOutputs(), original: String? = nil, format: String? = nil,
                width: Int? = nil, height: Int? = nil, sourceBytes: Int? = nil, contentHash: String? = nil,
                timings: StageTimings = StageTimings(), attempts: Int = 0,
                createdAt: Date = Date(), updatedAt: Date = Date(), content: TextContent? = nil,
                textVerdict: TextVerdict? = nil, priority: PriorityVerdict? = nil, caption: CaptionOutcome? = nil,
                decision: HumanDecision? = nil, conversation: ConversationVerdict? = nil,
                pdq: PDQFingerprint? = nil, match: BankMatch? = nil, reused: ReusedClassification? = nil) {
        self.conversation = conversation
        self.pdq = pdq
        self.match = match
        self.reused = reused
        self.id = id
        self.kind = kind
        self.userId = userId
        self.status = status
        self.reason = reason
        self.provider = provider
        self.safeSearch = safeSearch
        self.exif = exif
        self.outputs = outputs
        self.original = original
        self.format = format
        self.width = width
        self.height = height
        self.sourceBytes = sourceBytes
        self.contentHash = contentHash
        self.timings = timings
        self.attempts = attempts
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.content = content
        self.textVerdict = textVerdict
        self.priority = priority
        self.caption = caption
        self.decision = decision
    }
}

/// One entry of an item's append-only history.
public struct ItemEvent: Sendable, Codable, Equatable {
    public var itemId: ItemID
    public var at: Date
    /// `received`, `verdict`, `finalized`, `reprocess`, `review`, …
    public var type: String
    public var fromStatus: ItemStatus?
    public var toStatus: ItemStatus?
    public var stage: String?
    public var detail: String?

    public init(itemId: ItemID, at: Date = Date(), type: String, fromStatus: ItemStatus? = nil,
                toStatus: ItemStatus? = nil, stage: String? = nil, detail: String? = nil) {
        self.itemId = itemId
        self.at = at
        self.type = type
        self.fromStatus = fromStatus
        self.toStatus = toStatus
        self.stage = stage
        self.detail = detail
    }
}

extension ItemEvent {
    /// Every field, `null` when the event has no such part.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(itemId, forKey: .itemId)
        try c.encode(at, forKey: .at)
        try c.encode(type, forKey: .type)
        try c.encode(fromStatus, forKey: .fromStatus)
        try c.encode(toStatus, forKey: .toStatus)
        try c.encode(stage, forKey: .stage)
        try c.encode(detail, forKey: .detail)
    }
}

extension Item {
    /// A queue line whose id is already another user's message, recorded as rejected under the line's own id
    /// (`file:line`) instead of taking that message over (its user, text and verdict stay as they were). A line
    /// rejected already keeps its own reason.
    public func refusedAsAnotherUsersID(lineID: ItemID) -> Item {
        let why = status == .rejected ? reason
            : "\(content?.source ?? lineID.rawValue): id \"\(id.rawValue)\" is another user's message; give this one an id of its own"
        return Item(id: lineID, kind: .text, userId: userId, status: .rejected, reason: why,
                    contentHash: contentHash, attempts: 1, createdAt: createdAt, updatedAt: updatedAt)
    }

    /// What a store does with a batch of queue lines inside its write: each item whose id `owner` (the stored user of
    /// an id) says is another user's message is replaced by `refusedAsAnotherUsersID` under its line id (`lineIDs`,
    /// one per item); returns those line ids. A stored line rejected without a user id ("") belongs to no one.
    public static func refuseIDsOfOtherUsers(_ items: inout [Item], lineIDs: [ItemID], owner: (ItemID) -> String?) -> [ItemID] {
        // Found by reading first: the array is written only when a line is refused (almost never). A loop that may
        // write makes the array unique before it starts, which copied every item of a batch the caller still held.
        let current = items
        let indices = current.indices.filter { index in
            guard index < lineIDs.count, let stored = owner(current[index].id) else { return false }
            return !stored.isEmpty && stored != current[index].userId
        }
        for index in indices { items[index] = current[index].refusedAsAnotherUsersID(lineID: lineIDs[index]) }
        return indices.map { lineIDs[$0] }
    }
}
