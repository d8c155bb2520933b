import Foundation
import GRDB
import SluiceCore

/// Reading a store's tables row by row, for `sluice store migrate` (`StoreMigration`).
extension SQLiteStore {
    /// Up to `limit` rows of `table` after `rowid`, as a JSON array of objects with lower-case keys (PostgreSQL's
    /// folded column names): integers and reals as numbers, text as strings (dates are GRDB's UTC text, which
    /// PostgreSQL reads as timestamps), blobs as bytea hex text (`\x…`). Returns the last rowid read. A table
    /// without rowids (the windowed counters: `rateLimit`, `spamCounter`, `spamDistinct`) is read in its key's order,
    /// `rowid` then counting the rows read before.
    func exportRows(_ table: String, after rowid: Int64, limit: Int) async throws(StoreError) -> (json: String, count: Int, last: Int64) {
        try await read("read \(table) for migration") { db in
            let withoutRowid = try Bool.fetchOne(db, sql: "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", arguments: [table]) ?? false
            let rows = withoutRowid
                ? try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY \(try db.primaryKey(table).columns.joined(separator: ", ")) LIMIT ? OFFSET ?",
                                   arguments: [limit, rowid])
                : try Row.fetchAll(db, sql: "SELECT rowid AS sluiceRowid, * FROM \(table) WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                   arguments: [rowid, limit])
            var objects: [[String: Any]] = []
            objects.reserveCapacity(rows.count)
            var last = rowid
            for row in rows {
                var object: [String: Any] = [:]
                for (column, value) in row where column != "sluiceRowid" {
                    switch value.storage {
                    case .null: object[column.lowercased()] = NSNull()
                    case .int64(let number): object[column.lowercased()] = number
                    case .double(let number): object[column.lowercased()] = number
                    case .string(let text): object[column.lowercased()] = text
                    case .blob(let data): object[column.lowercased()] = "\\x" + data.map { String(format: "%02x", $0) }.joined()
                    }
                }
                last = withoutRowid ? last + 1 : row["sluiceRowid"]
                objects.append(object)
            }
            let json = String(decoding: try JSONSerialization.data(withJSONObject: objects), as: UTF8.self)
            return (json, rows.count, last)
        }
    }

    /// How many rows `table` holds.
    func rowCount(_ table: String) async throws(StoreError) -> Int {
        try await read("count \(table)") { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? 0 }
    }
}
