import Foundation
import SluiceCore

/// `sluice status --json`: the item's one JSON shape (`Item+JSON`) plus its event history.
struct ItemWithHistory: Encodable {
    var item: Item
    var history: [ItemEvent]

    enum CodingKeys: String, CodingKey { case history }

    func encode(to encoder: any Encoder) throws {
        try item.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(history, forKey: .history)
    }
}

/// The CLI's `--json` encoding: pretty, sorted keys, ISO 8601 dates with fractions.
enum CLIJSON {
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
    print(String(decoding: try CLIJSON.encoder.encode(value), as: UTF8.self))
}

/// Aligned plain-text table.
struct TextTable {
    var headers: [String]
    var rows: [[String]] = []

    /// Cells come from outside (file names, reasons): control characters are escaped, so a name cannot move the
    /// cursor, recolour the terminal or start a new row.
    func render() -> String {
        let rows = rows.map { $0.map(Identifiers.terminalSafe) }
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
        [id.rawValue, kind.rawValue, status.rawValue,
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
