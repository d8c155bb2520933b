import Foundation
import PostgresNIO
import SluiceCore

extension PostgresStore {
    public func beginReprocess(runKey: String, arguments: String, filter: ItemFilter, batchSize: Int) async throws(StoreError) -> ReprocessRunState {
        let logger = logger
        return try await transaction("begin reprocess run") { connection in
            // Two hosts starting the same run at once: the second waits here and then resumes the first one's.
            try await connection.run("SELECT pg_advisory_xact_lock(hashtext('sluice-reprocess:' || current_schema() || ':' || \(runKey)))", logger: logger)
            let state = try await connection.rows("SELECT state FROM reprocessRun WHERE runKey = \(runKey)", logger: logger)
                .first?.decode(String.self)
            if state == "running" {
                let (total, done) = try await connection.rows("""
                    SELECT COUNT(*), COUNT(*) FILTER (WHERE done) FROM reprocessItem WHERE runKey = \(runKey)
                    """, logger: logger).first?.decode((Int, Int).self) ?? (0, 0)
                return ReprocessRunState(runKey: runKey, resumed: true, total: total, done: done)
            }
            try await connection.run("DELETE FROM reprocessRun WHERE runKey = \(runKey)", logger: logger)
            try await connection.run("""
                INSERT INTO reprocessRun (runKey, arguments, state, startedAt) VALUES (\(runKey), \(arguments), 'running', \(Date()))
                """, logger: logger)
            var snapshot = Self.select("id", filter)
            let key = snapshot.binds.count + 1
            snapshot.sql = """
                INSERT INTO reprocessItem (runKey, itemId, batch)
                SELECT $\(key), id, (ROW_NUMBER() OVER (ORDER BY id COLLATE "C") - 1) / \(max(1, batchSize)) FROM (\(snapshot.sql)) AS matching
                RETURNING 1
                """
            snapshot.binds.append(runKey)
            let total = try await connection.rows(snapshot, logger: logger).count
            return ReprocessRunState(runKey: runKey, resumed: false, total: total, done: 0)
        }
    }

    public func doneReprocessItems(runKey: String) async throws(StoreError) -> [ItemID] {
        try await reprocessItems(runKey: runKey, done: true)
    }

    public func pendingReprocessItems(runKey: String) async throws(StoreError) -> [ItemID] {
        try await reprocessItems(runKey: runKey, done: false)
    }

    private func reprocessItems(runKey: String, done: Bool) async throws(StoreError) -> [ItemID] {
        let rows = try await rows("read reprocess progress",
                                  "SELECT itemId FROM reprocessItem WHERE runKey = \(runKey) AND done = \(done) ORDER BY itemId COLLATE \"C\"")
        do {
            return try rows.map { ItemID(rawValue: try $0.decode(String.self)) }
        } catch {
            throw Self.storeError("read reprocess progress", error)
        }
    }

    public func pendingReprocessBatches(runKey: String) async throws(StoreError) -> [Int] {
        let rows = try await rows("read reprocess progress",
                                  "SELECT DISTINCT batch FROM reprocessItem WHERE runKey = \(runKey) AND NOT done ORDER BY batch")
        do { return try rows.map { try $0.decode(Int.self) } } catch { throw Self.storeError("read reprocess progress", error) }
    }

    public func pendingReprocessItems(runKey: String, batch: Int) async throws(StoreError) -> [ItemID] {
        let rows = try await rows("read reprocess progress", """
            SELECT itemId FROM reprocessItem WHERE runKey = \(runKey) AND batch = \(Int64(batch)) AND NOT done ORDER BY itemId COLLATE "C"
            """)
        do { return try rows.map { ItemID(rawValue: try $0.decode(String.self)) } } catch { throw Self.storeError("read reprocess progress", error) }
    }

    public func textSnapshots(_ ids: [ItemID]) async throws(StoreError) -> [TextSnapshot] {
        guard !ids.isEmpty else { return [] }
        let rows = try await rows("read \(ids.count) snapshots", """
            SELECT id, kind, status, text, textContext, textVerdict, priority, reason, reviewedBy IS NOT NULL, conversation, sentAt
            FROM item WHERE id = ANY(\(ids.map(\.rawValue)))
            """)
        do {
            var result: [TextSnapshot] = []
            result.reserveCapacity(rows.count)
            for row in rows {
                let (id, kind, status, text, context, verdict, priority, reason, decided, conversation, sentAt) =
                    try row.decode((String, String, String, String?, String?, String?, String?, String?, Bool, String?, Int64?).self)
                guard let kind = ItemKind(rawValue: kind), let status = ItemStatus(rawValue: status) else { continue }
                result.append(TextSnapshot(id: ItemID(rawValue: id), kind: kind, status: status, reason: reason, text: text, context: context,
                                           sentAt: sentAt.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                                           verdictJSON: verdict, priorityJSON: priority, humanDecided: decided,
                                           conversation: ItemRow.decode(ConversationVerdict.self, conversation)))
            }
            return result
        } catch {
            throw Self.storeError("read \(ids.count) snapshots", error)
        }
    }

    public func commitReprocess(runKey: String, changes: [ReprocessChange], done: [ItemID]) async throws(StoreError) {
        let logger = logger
        try await transaction("commit reprocess batch") { connection in
            try await connection.lock(.events, logger: logger)
            var latest: [ItemID: Item] = [:]
            for change in changes { latest[change.item.id] = change.item }
            try await Self.upsert(Array(latest.values), on: connection, logger: logger)
            try await Self.insertEvents(changes.map {
                ItemEvent(itemId: $0.item.id, at: $0.item.updatedAt, type: "reprocess", fromStatus: $0.from, toStatus: $0.item.status,
                          stage: $0.stage, detail: $0.why)
            }, on: connection, logger: logger)
            try await Self.markDone(runKey: runKey, ids: done, on: connection, logger: logger)
        }
    }

    public func commitTextReprocess(runKey: String, updates: [TextUpdate], done: [ItemID]) async throws(StoreError) {
        let logger = logger
        try await transaction("commit text reprocess batch") { connection in
            try await connection.lock(.events, logger: logger)
            let now = Date()
            struct Row: Encodable {
                var id: String, status: String, reason: String?, verdict: String?, priority: String?
            }
            let rows = updates.map {
                Row(id: $0.id.rawValue, status: $0.status.rawValue, reason: $0.reason, verdict: $0.verdict?.canonicalJSON,
                    priority: $0.priority?.canonicalJSON)
            }
            try await connection.run("""
                UPDATE item SET status = u.status, reason = u.reason, textVerdict = COALESCE(u.verdict, item.textVerdict),
                    priority = COALESCE(u.priority, item.priority), updatedAt = \(PostgresItemCodec.milliseconds(now))
                FROM json_to_recordset(\(String(decoding: try JSONEncoder().encode(rows), as: UTF8.self))::json)
                    AS u(id TEXT, status TEXT, reason TEXT, verdict TEXT, priority TEXT)
                WHERE item.id = u.id
                """, logger: logger)
            try await Self.insertEvents(updates.map {
                ItemEvent(itemId: $0.id, at: now, type: "reprocess", fromStatus: $0.from, toStatus: $0.status, stage: $0.stage, detail: $0.why)
            }, on: connection, logger: logger)
            try await Self.markDone(runKey: runKey, ids: done, on: connection, logger: logger)
        }
    }

    static func markDone(runKey: String, ids: [ItemID], on connection: PostgresConnection, logger: Logger) async throws {
        guard !ids.isEmpty else { return }
        try await connection.run("UPDATE reprocessItem SET done = true WHERE runKey = \(runKey) AND itemId = ANY(\(ids.map(\.rawValue)))",
                                 logger: logger)
    }

    public func finishReprocess(runKey: String) async throws(StoreError) {
        let logger = logger
        try await transaction("finish reprocess run") { connection in
            try await connection.run("UPDATE reprocessRun SET state = 'finished', finishedAt = \(Date()) WHERE runKey = \(runKey)",
                                     logger: logger)
            try await connection.run("DELETE FROM reprocessItem WHERE runKey = \(runKey)", logger: logger)
        }
    }
}
