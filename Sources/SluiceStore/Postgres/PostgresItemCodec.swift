import Foundation
import SluiceCore

/// Items travel to and from PostgreSQL as JSON objects of `ItemRow` (the same row SQLite stores): written with
/// `json_populate_record(NULL::item, $1::json)`, read with `row_to_json(item)`. PostgreSQL folds the schema's
/// unquoted camelCase names to lower case, so the keys are lower-cased here; dates are whole milliseconds since 1970
/// (rounded half up, as GRDB keeps them in SQLite), the `item` table's `BIGINT` date columns.
enum PostgresItemCodec {
    /// The select-list expression that reads a whole `item` row (alias `item`) as JSON text.
    static let column = "row_to_json(item)::text"

    /// ItemRow's property names (its synthesized coding keys) by their lower-case spelling.
    private static let keysByLowercase: [String: String] = {
        let sample = ItemRow(Item(id: "k", kind: .text, userId: "k", status: .pending, attempts: 0,
                                  createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0)))
        var keys: [String: String] = [:]
        for label in Mirror(reflecting: sample).children.compactMap(\.label) { keys[label.lowercased()] = label }
        return keys
    }()

    /// `col = excluded.col` for every column but `id`: an upsert replaces the whole row, as `ItemRow.save` does.
    static let updateAssignments: String = keysByLowercase.keys.filter { $0 != "id" }.sorted()
        .map { "\($0) = excluded.\($0)" }.joined(separator: ", ")

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    static func encode(_ item: Item) throws(StoreError) -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .custom { path in Key(stringValue: (path.last?.stringValue ?? "").lowercased()) }
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(milliseconds(date))
        }
        do {
            return String(decoding: try encoder.encode(ItemRow(item)), as: UTF8.self)
        } catch {
            throw StoreError(operation: "encode item \(item.id) for PostgreSQL", underlying: error)
        }
    }

    static func decode(_ json: String) throws(StoreError) -> Item {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in
            let key = path.last?.stringValue ?? ""
            return Key(stringValue: keysByLowercase[key] ?? key)
        }
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do {
            return try decoder.decode(ItemRow.self, from: Data(json.utf8)).item
        } catch {
            throw StoreError(operation: "read an item from PostgreSQL", underlying: error)
        }
    }

    /// A date as the `item` table keeps it: whole milliseconds, half up.
    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.toNearestOrAwayFromZero))
    }
}
