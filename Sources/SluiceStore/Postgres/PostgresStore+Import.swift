import Foundation
import PostgresNIO
import SluiceCore

/// Writing rows exported from another store, for `sluice store migrate` (`StoreMigration`). Table names come from
/// `StoreMigration.beforeItems` and `afterItems`, never from input.
extension PostgresStore {
    /// Inserts a JSON array of rows (lower-case keys) into `table`; a row whose key exists is skipped, or replaced
    /// with `replace`. Returns how many rows were written.
    func importRows(_ table: String, json: String, replace: Bool = false) async throws(StoreError) -> Int {
        let conflict = replace ? "ON CONFLICT ON CONSTRAINT \(table.lowercased())_pkey DO UPDATE SET " : "ON CONFLICT DO NOTHING"
        var sql = "INSERT INTO \(table) SELECT * FROM json_populate_recordset(NULL::\(table), $1::json) "
        if replace {
            let columns = try await columns(of: table)
            sql += conflict + columns.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        } else {
            sql += conflict
        }
        var bindings = PostgresBindings()
        bindings.append(json)
        return try await rows("write \(table) rows", PostgresQuery(unsafeSQL: sql + " RETURNING 1", binds: bindings)).count
    }

    /// Writes whole items (their thread rows follow from the triggers).
    func importItems(_ items: [Item]) async throws(StoreError) {
        let logger = logger
        try await transaction("write \(items.count) items") { connection in
            try await Self.upsert(items, on: connection, logger: logger)
        }
    }

    func rowCount(_ table: String) async throws(StoreError) -> Int {
        let rows = try await rows("count \(table)", PostgresQuery(unsafeSQL: "SELECT COUNT(*) FROM \(table)"))
        do { return try rows.first?.decode(Int.self) ?? 0 } catch { throw Self.storeError("count \(table)", error) }
    }

    /// Moves an identity column's sequence past the largest value copied in.
    func resetIdentity(_ table: String, column: String) async throws(StoreError) {
        try await execute("reset \(table).\(column)", PostgresQuery(unsafeSQL: """
            SELECT setval(pg_get_serial_sequence('\(table.lowercased())', '\(column.lowercased())'),
                          COALESCE((SELECT MAX(\(column)) FROM \(table)), 0) + 1, false)
            """))
    }

    private func columns(of table: String) async throws(StoreError) -> [String] {
        let rows = try await rows("read the columns of \(table)", """
            SELECT column_name FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = \(table.lowercased()) ORDER BY ordinal_position
            """)
        do { return try rows.map { try $0.decode(String.self) } } catch { throw Self.storeError("read the columns of \(table)", error) }
    }
}
