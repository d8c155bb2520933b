import Foundation
import PostgresNIO
import SluiceCore

extension PostgresStore {
    // MARK: Erasure

    /// One transaction that takes `FeedLock.erasures` first (erasures run one at a time, and tombstones commit in
    /// `seq` order for the webhooks that follow them), then locks the rows it erases as it reads them.
    public func eraseItems(_ ids: [ItemID], by: String, reason: String, at date: Date) async throws(StoreError) -> [Item] {
        let raw = ids.map(\.rawValue)
        let logger = self.logger
        return try await transaction("erase \(ids.count) items") { connection in
            // The event feed's lock first, as every item writer takes it: erasing and writing items then never
            // wait for each other's row locks in a cycle.
            try await connection.lock(.events, logger: logger)
            try await connection.lock(.erasures, logger: logger)
            // In chunks of 500, each by id in byte order: the order SQLite reads them in, and the tombstones' order.
            var erased: [Item] = []
            for chunk in raw.chunked(500) {
                let found = try await connection.rows("""
                    SELECT \(unescaped: PostgresItemCodec.column) FROM item WHERE id = ANY(\(Array(chunk))) ORDER BY id COLLATE "C" FOR UPDATE
                    """, logger: logger)
                for row in found { erased.append(try PostgresItemCodec.decode(try row.decode(String.self))) }
            }
            guard !erased.isEmpty else { return erased }
            let erasedIds = erased.map(\.id.rawValue)
            try await connection.run("""
                INSERT INTO erasure (itemId, kind, userId, contentHash, erasedBy, reason, erasedAt)
                SELECT item.id, item.kind, item.userId, item.contentHash, \(by), \(reason), \(date)
                FROM unnest(\(erasedIds)::text[]) WITH ORDINALITY AS erased (id, n) JOIN item ON item.id = erased.id
                ORDER BY erased.n
                """, logger: logger)
            // The history goes with the row (event.itemId cascades). A hash the item gave a bank stays there (it
            // keeps removed content out) but no longer names the item; an item that reused its classification
            // no longer names it either.
            try await connection.run("DELETE FROM item WHERE id = ANY(\(erasedIds))", logger: logger)
            try await connection.run("UPDATE bankHash SET itemId = NULL, note = 'from an erased item' WHERE itemId = ANY(\(erasedIds))",
                                     logger: logger)
            try await Self.unlinkReuses(of: erasedIds, connection, logger: logger)
            return erased
        }
    }

    /// `reusedFrom.item` becomes "erased" where it names an erased item. The JSON is written back as `ItemRow` writes
    /// it (sorted keys, no spaces: what SQLite's `json_set` leaves), so reprocessing still compares it as text; a
    /// value that does not decode is changed by `jsonb_set` instead.
    private static func unlinkReuses(of erasedIds: [String], _ connection: PostgresConnection, logger: Logger) async throws {
        let reusing = try await connection.rows("""
            SELECT id, reusedFrom FROM item WHERE reusedFrom IS NOT NULL AND (reusedFrom::json ->> 'item') = ANY(\(erasedIds)) FOR UPDATE
            """, logger: logger)
        guard !reusing.isEmpty else { return }
        var ids: [String] = []
        var texts: [String] = []
        var undecodable: [String] = []
        for row in reusing {
            let (id, text) = try row.decode((String, String).self)
            if var reused = try? JSONDecoder().decode(ReusedClassification.self, from: Data(text.utf8)) {
                reused.item = "erased"
                if let json = ItemRow.json(reused) {
                    ids.append(id)
                    texts.append(json)
                    continue
                }
            }
            undecodable.append(id)
        }
        if !ids.isEmpty {
            try await connection.run("""
                UPDATE item SET reusedFrom = unlinked.text FROM unnest(\(ids)::text[], \(texts)::text[]) AS unlinked (id, text)
                WHERE item.id = unlinked.id
                """, logger: logger)
        }
        if !undecodable.isEmpty {
            try await connection.run("""
                UPDATE item SET reusedFrom = jsonb_set(reusedFrom::jsonb, '{item}', '"erased"')::text WHERE id = ANY(\(undecodable))
                """, logger: logger)
        }
    }

    public func redactWebhookReasons(of ids: [ItemID]) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        for chunk in ids.map(\.rawValue).chunked(500) {
            let values = Array(chunk)
            try await execute("redact webhook reasons", """
                UPDATE webhookDelivery SET payload = jsonb_set(payload::jsonb, '{data,reason}', 'null'::jsonb)::text
                WHERE event <> 'item.deleted' AND (payload::json -> 'data' ->> 'id') = ANY(\(values))
                  AND (payload::json -> 'data' ->> 'reason') IS NOT NULL
                """)
        }
    }

    public func anonymizeReports(by userId: String) async throws(StoreError) {
        try await execute("anonymize reports by \(userId)", """
            UPDATE report SET reporterUserId = NULL, description = NULL WHERE reporterUserId = \(userId)
            """)
    }

    public func tombstones(userId: String?) async throws(StoreError) -> [Tombstone] {
        let columns = "itemId, kind, userId, contentHash, erasedBy, reason, erasedAt"
        let found: [PostgresRow]
        if let userId {
            found = try await rows("read tombstones", "SELECT \(unescaped: columns) FROM erasure WHERE userId = \(userId) ORDER BY seq")
        } else {
            found = try await rows("read tombstones", "SELECT \(unescaped: columns) FROM erasure ORDER BY seq")
        }
        return try decodingOutbox("read tombstones") {
            try found.compactMap { row in
                let (itemId, kind, userId, contentHash, erasedBy, reason, erasedAt) =
                    try row.decode((String, String, String, String?, String, String, Date).self)
                guard let kind = ItemKind(rawValue: kind) else { return nil }
                return Tombstone(itemId: ItemID(itemId), kind: kind, userId: userId, contentHash: contentHash, erasedBy: erasedBy,
                                 reason: reason, erasedAt: erasedAt)
            }
        }
    }

    // MARK: Webhook outbox

    /// One statement, so a new webhook's starting point (the present) is one snapshot of both feeds.
    public func webhookCursor(_ webhook: String) async throws(StoreError) -> WebhookCursor {
        let operation = "read the cursor of webhook \(webhook)"
        let found = try await rows(operation, """
            SELECT saved.eventSeq, saved.erasureSeq, (SELECT MAX(seq) FROM event), (SELECT MAX(seq) FROM erasure)
            FROM (SELECT 1) AS one LEFT JOIN webhookCursor AS saved ON saved.webhook = \(webhook)
            """)
        return try decodingOutbox(operation) {
            guard let row = found.first else { return WebhookCursor() }
            let (eventSeq, erasureSeq, maxEvent, maxErasure) = try row.decode((Int64?, Int64?, Int64?, Int64?).self)
            if let eventSeq, let erasureSeq { return WebhookCursor(eventSeq: eventSeq, erasureSeq: erasureSeq) }
            // A new webhook starts at the present: it is told about what happens from now on.
            return WebhookCursor(eventSeq: maxEvent ?? 0, erasureSeq: maxErasure ?? 0)
        }
    }

    /// Reads in one REPEATABLE READ, READ ONLY transaction: the highest `seq` the cursor may skip to (past events
    /// of erased items) must come from the same snapshot as the events read, or an event committed between the two
    /// statements would be skipped unread. Writers append to `event` and `erasure` under their feed locks, so a
    /// snapshot holds every row below the highest seq it sees.
    public func webhookSources(after cursor: WebhookCursor, limit: Int) async throws(StoreError) -> (sources: [WebhookSource], cursor: WebhookCursor) {
        let logger = self.logger
        let cap: Int? = limit < 0 ? nil : limit
        let (sources, next) = try await transaction("read status changes for webhooks") { (connection) -> ([WebhookSource], WebhookCursor) in
            try await connection.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            var next = cursor
            var sources: [(Int64, WebhookSource)] = []
            let events = try await connection.rows("""
                SELECT event.seq, event.itemId, event.fromStatus, event.toStatus, event.at, item.kind, item.userId, item.reason,
                       item.conversation
                FROM event JOIN item ON item.id = event.itemId
                WHERE event.seq > \(cursor.eventSeq) AND event.type IN ('verdict', 'reprocess', 'review')
                ORDER BY event.seq LIMIT \(cap)
                """, logger: logger)
            for row in events {
                let (seq, itemId, fromStatus, toStatus, at, kind, userId, reason, conversation) =
                    try row.decode((Int64, String, String?, String?, Date, String, String, String?, String?).self)
                next.eventSeq = max(next.eventSeq, seq)
                guard let to = toStatus.flatMap(ItemStatus.init(rawValue:)), to != .pending, let kind = ItemKind(rawValue: kind) else { continue }
                let from = fromStatus.flatMap(ItemStatus.init(rawValue:))
                guard from != to else { continue }
                let autoReply = to == .blocked ? ItemRow.decode(ConversationVerdict.self, conversation)?.autoReply : nil
                sources.append((seq, WebhookSource(change: .status(to, previous: from), itemId: ItemID(itemId), kind: kind,
                                                   userId: userId, reason: reason, autoReply: autoReply, at: at)))
            }
            // Events of an erased item went with it; the scan still advances past the gap.
            if events.count < limit, let row = try await connection.rows("SELECT MAX(seq) FROM event", logger: logger).first,
               let highest = try row.decode(Int64?.self), highest > next.eventSeq {
                next.eventSeq = highest
            }
            let erasures = try await connection.rows("""
                SELECT seq, itemId, kind, userId, reason, erasedBy, erasedAt FROM erasure WHERE seq > \(cursor.erasureSeq) ORDER BY seq LIMIT \(cap)
                """, logger: logger)
            for row in erasures {
                let (seq, itemId, kind, userId, reason, erasedBy, erasedAt) =
                    try row.decode((Int64, String, String, String, String, String, Date).self)
                next.erasureSeq = max(next.erasureSeq, seq)
                guard let kind = ItemKind(rawValue: kind) else { continue }
                sources.append((seq, WebhookSource(change: .erased(by: erasedBy), itemId: ItemID(itemId), kind: kind,
                                                   userId: userId, reason: reason, at: erasedAt)))
            }
            return (sources.sorted { $0.1.at < $1.1.at || ($0.1.at == $1.1.at && $0.0 < $1.0) }.map(\.1), next)
        }
        return (sources, next)
    }

    /// The deliveries go in as one statement (one array per column; `lastError` and `deliveredAt` with a flag for
    /// NULL, since postgres-nio binds no arrays of optionals).
    public func enqueueWebhookDeliveries(_ deliveries: [WebhookDelivery], webhook: String, cursor: WebhookCursor) async throws(StoreError) {
        let logger = self.logger
        let ids = deliveries.map(\.id), webhooks = deliveries.map(\.webhook), events = deliveries.map(\.event.rawValue)
        let payloads = deliveries.map(\.payload), states = deliveries.map(\.state.rawValue), attempts = deliveries.map(\.attempts)
        let nextAttempts = deliveries.map(\.nextAttemptAt), createdAts = deliveries.map(\.createdAt)
        let hasErrors = deliveries.map { $0.lastError != nil }, errors = deliveries.map { $0.lastError ?? "" }
        let delivered = deliveries.map { $0.deliveredAt != nil }, deliveredAts = deliveries.map { $0.deliveredAt ?? $0.createdAt }
        try await transaction("queue deliveries for webhook \(webhook)") { connection in
            if !deliveries.isEmpty {
                try await connection.run("""
                    INSERT INTO webhookDelivery (id, webhook, event, payload, state, attempts, nextAttemptAt, lastError, createdAt, deliveredAt)
                    SELECT d.id, d.webhook, d.event, d.payload, d.state, d.attempts, d.nextAttemptAt,
                           CASE WHEN d.hasError THEN d.lastError END, d.createdAt, CASE WHEN d.delivered THEN d.deliveredAt END
                    FROM unnest(\(ids)::text[], \(webhooks)::text[], \(events)::text[], \(payloads)::text[], \(states)::text[],
                                \(attempts)::bigint[], \(nextAttempts)::timestamptz[], \(hasErrors)::boolean[], \(errors)::text[],
                                \(createdAts)::timestamptz[], \(delivered)::boolean[], \(deliveredAts)::timestamptz[])
                        WITH ORDINALITY AS d (id, webhook, event, payload, state, attempts, nextAttemptAt, hasError, lastError, createdAt,
                                              delivered, deliveredAt, n)
                    ORDER BY d.n
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
            }
            try await connection.run("""
                INSERT INTO webhookCursor (webhook, eventSeq, erasureSeq) VALUES (\(webhook), \(cursor.eventSeq), \(cursor.erasureSeq))
                ON CONFLICT (webhook) DO UPDATE SET eventSeq = excluded.eventSeq, erasureSeq = excluded.erasureSeq
                """, logger: logger)
        }
    }

    /// Oldest first; a negative `limit` means no limit, as in SQLite.
    public func dueWebhookDeliveries(at date: Date, limit: Int, webhook: String?) async throws(StoreError) -> [WebhookDelivery] {
        let cap: Int? = limit < 0 ? nil : limit
        let found = try await rows("read due webhook deliveries", """
            SELECT \(unescaped: Self.deliveryColumns) FROM webhookDelivery WHERE state = 'pending' AND nextAttemptAt <= \(date)
            AND (\(webhook)::text IS NULL OR webhook = \(webhook))
            ORDER BY nextAttemptAt, createdAt LIMIT \(cap)
            """)
        return try decodingOutbox("read due webhook deliveries") { try found.compactMap(Self.delivery) }
    }

    public func recordWebhookAttempt(_ id: String, outcome: WebhookAttemptOutcome, at date: Date) async throws(StoreError) {
        let operation = "record an attempt of delivery \(id)"
        switch outcome {
        case .delivered:
            try await execute(operation, """
                UPDATE webhookDelivery SET state = 'delivered', attempts = attempts + 1, deliveredAt = \(date), lastError = NULL WHERE id = \(id)
                """)
        case let .retry(next, error):
            try await execute(operation, """
                UPDATE webhookDelivery SET attempts = attempts + 1, nextAttemptAt = \(next), lastError = \(error) WHERE id = \(id)
                """)
        case let .failed(error):
            try await execute(operation, """
                UPDATE webhookDelivery SET state = 'failed', attempts = attempts + 1, lastError = \(error) WHERE id = \(id)
                """)
        case let .postponed(next, note):
            try await execute(operation, "UPDATE webhookDelivery SET nextAttemptAt = \(next), lastError = \(note) WHERE id = \(id)")
        }
    }

    /// Newest first, ties by id in byte order (`COLLATE "C"`, as SQLite sorts text). A negative `limit` means no limit.
    public func webhookDeliveries(state: WebhookDeliveryState?, limit: Int) async throws(StoreError) -> [WebhookDelivery] {
        let cap: Int? = limit < 0 ? nil : limit
        let found: [PostgresRow]
        if let state {
            found = try await rows("list webhook deliveries", """
                SELECT \(unescaped: Self.deliveryColumns) FROM webhookDelivery WHERE state = \(state.rawValue)
                ORDER BY createdAt DESC, id COLLATE "C" LIMIT \(cap)
                """)
        } else {
            found = try await rows("list webhook deliveries", """
                SELECT \(unescaped: Self.deliveryColumns) FROM webhookDelivery ORDER BY createdAt DESC, id COLLATE "C" LIMIT \(cap)
                """)
        }
        return try decodingOutbox("list webhook deliveries") { try found.compactMap(Self.delivery) }
    }

    public func retryWebhookDeliveries(ids: [String]?, at date: Date) async throws(StoreError) -> [String] {
        let found: [PostgresRow]
        if let ids {
            found = try await rows("retry webhook deliveries", """
                UPDATE webhookDelivery SET state = 'pending', nextAttemptAt = \(date) WHERE state = 'failed' AND id = ANY(\(ids)) RETURNING id
                """)
        } else {
            found = try await rows("retry webhook deliveries", """
                UPDATE webhookDelivery SET state = 'pending', nextAttemptAt = \(date) WHERE state = 'failed' RETURNING id
                """)
        }
        return try decodingOutbox("retry webhook deliveries") { try found.map { try $0.decode(String.self) } }
    }

    private static let deliveryColumns = "id, webhook, event, payload, state, attempts, nextAttemptAt, lastError, createdAt, deliveredAt"

    private static func delivery(_ row: PostgresRow) throws -> WebhookDelivery? {
        let (id, webhook, event, payload, state, attempts, nextAttemptAt, lastError, createdAt, deliveredAt) =
            try row.decode((String, String, String, String, String, Int, Date, String?, Date, Date?).self)
        guard let event = WebhookEvent(rawValue: event), let state = WebhookDeliveryState(rawValue: state) else { return nil }
        return WebhookDelivery(id: id, webhook: webhook, event: event, payload: payload, state: state, attempts: attempts,
                               nextAttemptAt: nextAttemptAt, lastError: lastError, createdAt: createdAt, deliveredAt: deliveredAt)
    }
}

/// Decoding rows read by `rows(_:_:)`: postgres-nio's errors become a `StoreError` naming the operation.
private func decodingOutbox<T>(_ operation: String, _ body: () throws -> T) throws(StoreError) -> T {
    do {
        return try body()
    } catch {
        throw PostgresStore.storeError(operation, error)
    }
}
