import Foundation
import SluiceCore

/// `sluice store migrate`: copies a SQLite store into an empty PostgreSQL one and verifies every table's count.
/// Items go through the item codec (so PostgreSQL's thread triggers build the thread tables); every other table is
/// copied row by row with its sequence numbers, so webhook cursors and feeds stay valid. Caches that are rebuilt on
/// demand are not copied: thread answers and message vectors (the daemon embeds approved messages again).
public enum StoreMigration {
    public struct TableCount: Sendable, Equatable {
        public var table: String
        public var source: Int
        public var target: Int
        public var matches: Bool { source == target }
    }

    typealias Table = (name: String, seq: String?, replace: Bool)

    /// Copied before the items: users erased from threads, so the item triggers do not make them members again.
    static let beforeItems: [Table] = [("threadMemberErased", nil, false)]

    /// Copied after the items, in an order that satisfies foreign keys; `seq` names an identity column to move past
    /// the copied values; `replace` for rows the target's migration already created.
    static let afterItems: [Table] = [
        ("event", "seq", false), ("reprocessRun", nil, false), ("reprocessItem", nil, false), ("report", nil, false),
        ("rateLimit", nil, false), ("metricsSnapshot", nil, false), ("erasure", "seq", false), ("webhookCursor", nil, false),
        ("webhookDelivery", nil, false), ("reviewer", nil, false), ("keyValue", nil, false), ("reviewClaim", nil, false),
        ("escalation", nil, false), ("auditSample", nil, false), ("appeal", nil, false), ("relationUser", nil, false),
        ("follow", nil, false), ("block", nil, false), ("relationChange", "seq", false), ("messageRequest", nil, false),
        ("spamCounter", nil, false), ("spamDistinct", nil, false), ("hashBank", nil, false), ("bankHash", "seq", false),
        ("bankHashStanding", nil, false), ("bankRevision", nil, true), ("threadMember", nil, false),
    ]

    /// Copies `source` into `target`, which must hold no items; returns every table's counts (item first).
    public static func copy(from source: SQLiteStore, to target: PostgresStore,
                            progress: @Sendable (String, Int) -> Void = { _, _ in }) async throws(StoreError) -> [TableCount] {
        guard try await target.rowCount("item") == 0 else {
            throw StoreError(operation: "migrate the store", message: "the target already holds items; migrate into a new database or schema")
        }
        func copyTable(_ table: Table) async throws(StoreError) -> TableCount {
            var after: Int64 = 0
            var written = 0
            while true {
                let page = try await source.exportRows(table.name, after: after, limit: 2_000)
                guard page.count > 0 else { break }
                written += try await target.importRows(table.name, json: page.json, replace: table.replace)
                after = page.last
                progress(table.name, written)
            }
            if let seq = table.seq { try await target.resetIdentity(table.name, column: seq) }
            return TableCount(table: table.name, source: try await source.rowCount(table.name), target: try await target.rowCount(table.name))
        }
        var early: [TableCount] = []
        for table in beforeItems { early.append(try await copyTable(table)) }
        let ids = try await source.itemIDs(matching: ItemFilter())
        var copied = 0
        for chunk in ids.chunked(1_000) {
            let items = try await source.items(Array(chunk))
            try await target.importItems(items)
            copied += items.count
            progress("item", copied)
        }
        var counts = [TableCount(table: "item", source: try await source.rowCount("item"), target: try await target.rowCount("item"))] + early
        for table in afterItems { counts.append(try await copyTable(table)) }
        return counts
    }
}
