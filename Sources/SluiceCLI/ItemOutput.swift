import Foundation
import SluiceCore

/// The stable JSON shape of an item for `status --json` and `list --json` (documented in README).
struct ItemJSON: Encodable {
    var id: String
    var kind: ItemKind
    var userId: String
    var status: ItemStatus
    var reason: String?
    var provider: String?
    var safeSearch: SafeSearch?
    var exif: ExifFindings?
    var outputs: Outputs
    var original: String?
    var format: String?
    var width: Int?
    var height: Int?
    var sourceBytes: Int?
    var attempts: Int
    var timings: StageTimings
    var createdAt: Date
    var updatedAt: Date
    var history: [ItemEvent]?
    /// Text items: the filter verdict {allowed, reason, matches, censored}, and the message itself.
    var text: TextVerdict?
    var message: TextContent?
    var priority: PriorityVerdict?
    var caption: CaptionOutcome?

    struct Outputs: Encodable {
        var approved: String?
        var thumbnail: String?
        var approvedBytes: Int?
        var thumbnailBytes: Int?
    }

    init(_ item: Item, history: [ItemEvent]? = nil) {
        id = item.id
        kind = item.kind
        userId = item.userId
        status = item.status
        reason = item.reason
        provider = item.provider
        safeSearch = item.safeSearch
        exif = item.exif
        outputs = Outputs(approved: item.outputs.approved, thumbnail: item.outputs.thumbnail,
                          approvedBytes: item.outputs.approvedBytes, thumbnailBytes: item.outputs.thumbnailBytes)
        original = item.original
        format = item.format
        width = item.width
        height = item.height
        sourceBytes = item.sourceBytes
        attempts = item.attempts
        timings = item.timings
        createdAt = item.createdAt
        updatedAt = item.updatedAt
        self.history = history
        text = item.textVerdict
        message = item.content
        priority = item.priority
        caption = item.caption
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, userId, status, reason, provider, safeSearch, exif, outputs, original, format, width, height,
             sourceBytes, attempts, timings, createdAt, updatedAt, history, text, message, priority, caption
    }

    /// Nulls are written out, so every documented field is always present.
    func encode(to encoder: any Encoder) throws {
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
        try c.encodeIfPresent(history, forKey: .history)
        if kind == .text {
            try c.encode(text, forKey: .text)
            try c.encode(message, forKey: .message)
            try c.encode(priority, forKey: .priority)
        } else {
            try c.encode(caption, forKey: .caption)
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)))
        }
        return encoder
    }()
}

/// Prints a value as the CLI's `--json` output: pretty, sorted keys, ISO 8601 dates.
func printJSON<T: Encodable>(_ value: T) throws {
    print(String(decoding: try ItemJSON.encoder.encode(value), as: UTF8.self))
}

/// Aligned plain-text table.
struct TextTable {
    var headers: [String]
    var rows: [[String]] = []

    func render() -> String {
        var widths = headers.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([line(headers)] + rows.map(line)).joined(separator: "\n")
    }
}

extension Item {
    var tableRow: [String] {
        [id, kind.rawValue, status.rawValue,
         safeSearch.map { "\($0.adult.rawValue)/\($0.racy.rawValue)/\($0.violence.rawValue)" } ?? "-",
         exif.map { $0.hadGPS ? "yes" : "no" } ?? "-",
         exif.flatMap { e in [e.make, e.model].compactMap { $0 }.joined(separator: " ").nilIfEmpty } ?? "-",
         outputs.approvedBytes.map { "\($0 / 1024) KiB" } ?? "-",
         reason ?? ""]
    }

    static let tableHeaders = ["ID", "KIND", "STATUS", "ADULT/RACY/VIOLENCE", "GPS", "CAMERA", "OUTPUT", "REASON"]
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
