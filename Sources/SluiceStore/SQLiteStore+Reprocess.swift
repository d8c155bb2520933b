import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    public func beginReprocess(runKey: String, arguments: String, filter: ItemFilter, batchSize: Int) async throws(StoreError) -> ReprocessRunState {
        try await write("begin reprocess run") { db in
            let state = try String.fetchOne(db, sql: "SELECT state FROM reprocessRun WHERE runKey = ?", arguments: [runKey])
            if state == "running" {
                let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM reprocessItem WHERE runKey = ?", arguments: [runKey]) ?? 0
                let done = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM reprocessItem WHERE runKey = ? AND done", arguments: [runKey]) ?? 0
                return ReprocessRunState(runKey: runKey, resumed: true, total: total, done: done)
            }
            try db.execute(sql: "DELETE FROM reprocessRun WHERE runKey = ?", arguments: [runKey])
            try db.execute(sql: "INSERT INTO reprocessRun (runKey, arguments, state, startedAt) VALUES (?, ?, 'running', ?)",
                           arguments: [runKey, arguments, Date()])
            // The snapshot is taken inside SQLite: no round trip of every id through Swift.
            let matching = try Self.request(filter).select(ItemRow.Columns.id).makePreparedRequest(db, forSingleResult: false).statement
            try db.execute(sql: """
                INSERT INTO reprocessItem (runKey, itemId, batch)
                SELECT ?, id, (ROW_NUMBER() OVER (ORDER BY id) - 1) / \(max(1, batchSize)) FROM (\(matching.sql))
                """, arguments: [runKey] + matching.arguments)
            return ReprocessRunState(runKey: runKey, resumed: false, total: db.changesCount, done: 0)
        }
    }

    public func doneReprocessItems(runKey: String) async throws(StoreError) -> [ItemID] {
        try await read("read reprocess progress") { db in
            try String.fetchAll(db, sql: "SELECT itemId FROM reprocessItem WHERE runKey = ? AND done ORDER BY itemId", arguments: [runKey])
                .map(ItemID.init(rawValue:))
        }
    }

    public func pendingReprocessItems(runKey: String) async throws(StoreError) -> [ItemID] {
        try await read("read reprocess progress") { db in
            try String.fetchAll(db, sql: "SELECT itemId FROM reprocessItem WHERE runKey = ? AND NOT done ORDER BY itemId", arguments: [runKey])
                .map(ItemID.init(rawValue:))
        }
    }

    public func pendingReprocessBatches(runKey: String) async throws(StoreError) -> [Int] {
        try await read("read reprocess progress") { db in
            try Int.fetchAll(db, sql: "SELECT DISTINCT batch FROM reprocessItem WHERE runKey = ? AND NOT done ORDER BY batch", arguments: [runKey])
        }
    }

    public func pendingReprocessItems(runKey: String, batch: Int) async throws(StoreError) -> [ItemID] {
        try await read("read reprocess progress") { db in
            try String.fetchAll(db, sql: "SELECT itemId FROM reprocessItem WHERE runKey = ? AND batch = ? AND NOT done ORDER BY itemId",
                                arguments: [runKey, batch]).map(ItemID.init(rawValue:))
        }
    }

    public func textSnapshots(_ ids: [ItemID]) async throws(StoreError) -> [TextSnapshot] {
        let raw = ids.map(\.rawValue)
        return try await read("read \(ids.count) snapshots") { db in
            var result: [TextSnapshot] = []
            result.reserveCapacity(raw.count)
            for chunk in raw.chunked(500) {
                let rows = try Row.fetchCursor(db, sql: """
                    SELECT id, kind, status, text, textContext, textVerdict, priority, reason, reviewedBy IS NOT NULL, conversation, sentAt
                    FROM item WHERE id IN (\(Self.placeholders(chunk.count)))
                    """, arguments: StatementArguments(Array(chunk)))
                while let row = try rows.next() {
                    guard let kind = ItemKind(rawValue: row[1]), let status = ItemStatus(rawValue: row[2]) else { continue }
                    result.append(TextSnapshot(id: ItemID(row[0] as String), kind: kind, status: status, reason: row[7], text: row[3],
                                               context: row[4], sentAt: row[10], verdictJSON: row[5], priorityJSON: row[6], humanDecided: row[8],
                                               conversation: ItemRow.decode(ConversationVerdict.self, row[9])))
                }
            }
            return result
        }
    }

    public func commitReprocess(runKey: String, changes: [ReprocessChange], done: [ItemID]) async throws(StoreError) {
        try await write("commit reprocess batch") { db in
            for change in changes {
                try ItemRow(change.item).save(db)
                try EventRow(ItemEvent(itemId: change.item.id, at: change.item.updatedAt, type: "reprocess", fromStatus: change.from,
                                       toStatus: change.item.status, stage: change.stage, detail: change.why)).insert(db)
            }
            try Self.markDone(db, runKey: runKey, ids: done)
        }
    }

    /// Marks items done with one statement per 500 ids.
    static func markDone(_ db: Database, runKey: String, ids: [ItemID]) throws {
        for chunk in ids.map(\.rawValue).chunked(500) {
            try db.execute(sql: "UPDATE reprocessItem SET done = 1 WHERE runKey = ? AND itemId IN (\(placeholders(chunk.count)))",
                           arguments: StatementArguments([runKey] + chunk))
        }
    }

    public func commitTextReprocess(runKey: String, updates: [TextUpdate], done: [ItemID]) async throws(StoreError) {
        try await write("commit text reprocess batch") { db in
            // One timestamp per batch, converted once: formatting a date per row was a tenth of the batch.
            let now = Date().databaseValue
            let update = try db.cachedStatement(sql: """
                UPDATE item SET status = ?, reason = ?, textVerdict = COALESCE(?, textVerdict), priority = COALESCE(?, priority),
                updatedAt = ? WHERE id = ?
                """)
            let event = try db.cachedStatement(sql: """
                INSERT INTO event (itemId, at, type, fromStatus, toStatus, stage, detail) VALUES (?, ?, 'reprocess', ?, ?, ?, ?)
                """)
            for change in updates {
                try update.execute(arguments: [change.status.rawValue, change.reason, change.verdict?.canonicalJSON,
                                               change.priority?.canonicalJSON, now, change.id.rawValue])
                try event.execute(arguments: [change.id.rawValue, now, change.from.rawValue, change.status.rawValue, change.stage, change.why])
            }
            try Self.markDone(db, runKey: runKey, ids: done)
        }
    }

    public func finishReprocess(runKey: String) async throws(StoreError) {
        try await write("finish reprocess run") { db in
            try db.execute(sql: "UPDATE reprocessRun SET state = 'finished', finishedAt = ? WHERE runKey = ?", arguments: [Date(), runKey])
            try db.execute(sql: "DELETE FROM reprocessItem WHERE runKey = ?", arguments: [runKey])
        }
    }
}
