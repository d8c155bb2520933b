import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    // MARK: Erasure

    public func eraseItems(_ ids: [ItemID], by: String, reason: String, at date: Date) async throws(StoreError) -> [Item] {
        let raw = ids.map(\.rawValue)
        return try await write("erase \(ids.count) items") { db in
            var erased: [Item] = []
            for chunk in raw.chunked(500) {
                erased += try ItemRow.filter(chunk.contains(ItemRow.Columns.id)).fetchAll(db).map(\.item)
            }
            for item in erased {
                try db.execute(sql: """
                    INSERT INTO erasure (itemId, kind, userId, contentHash, erasedBy, reason, erasedAt) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [item.id.rawValue, item.kind.rawValue, item.userId, item.contentHash, by, reason, date])
                // The history goes with the row (event.itemId cascades).
                try db.execute(sql: "DELETE FROM item WHERE id = ?", arguments: [item.id.rawValue])
            }
            // A hash an item gave a bank stays there (it keeps removed content out) but no longer names the item; an
            // item that reused its classification no longer names it either. A chunk at a time: per item, each was a
            // scan of its whole table (erasing a user with 30,000 items held the store for minutes).
            for chunk in erased.map(\.id.rawValue).chunked(500) {
                let marks = Self.placeholders(chunk.count)
                try db.execute(sql: "UPDATE bankHash SET itemId = NULL, note = 'from an erased item' WHERE itemId IN (\(marks))",
                               arguments: StatementArguments(chunk))
                try db.execute(sql: """
                    UPDATE item SET reusedFrom = json_set(reusedFrom, '$.item', 'erased')
                    WHERE reusedFrom IS NOT NULL AND json_extract(reusedFrom, '$.item') IN (\(marks))
                    """, arguments: StatementArguments(chunk))
            }
            return erased
        }
    }

    public func redactWebhookReasons(of ids: [ItemID]) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        try await write("redact webhook reasons") { db in
            for chunk in ids.map(\.rawValue).chunked(500) {
                let marks = Self.placeholders(chunk.count)
                try db.execute(sql: """
                    UPDATE webhookDelivery SET payload = json_set(payload, '$.data.reason', json('null'))
                    WHERE event != 'item.deleted' AND json_extract(payload, '$.data.id') IN (\(marks))
                      AND json_extract(payload, '$.data.reason') IS NOT NULL
                    """, arguments: StatementArguments(chunk))
            }
        }
    }

    public func anonymizeReports(by userId: String) async throws(StoreError) {
        try await write("anonymize reports by \(userId)") { db in
            try db.execute(sql: "UPDATE report SET reporterUserId = NULL, description = NULL WHERE reporterUserId = ?", arguments: [userId])
        }
    }

    public func tombstones(userId: String?) async throws(StoreError) -> [Tombstone] {
        try await read("read tombstones") { db in
            let rows = if let userId {
                try Row.fetchAll(db, sql: "SELECT * FROM erasure WHERE userId = ? ORDER BY seq", arguments: [userId])
            } else {
                try Row.fetchAll(db, sql: "SELECT * FROM erasure ORDER BY seq")
            }
            return rows.compactMap { row in
                guard let kind = ItemKind(rawValue: row["kind"]) else { return nil }
                return Tombstone(itemId: ItemID(row["itemId"] as String), kind: kind, userId: row["userId"], contentHash: row["contentHash"],
                                 erasedBy: row["erasedBy"], reason: row["reason"], erasedAt: row["erasedAt"])
            }
        }
    }

    // MARK: Webhook outbox

    public func webhookCursor(_ webhook: String) async throws(StoreError) -> WebhookCursor {
        try await read("read the cursor of webhook \(webhook)") { db in
            try Self.cursor(db, webhook)
        }
    }

    static func cursor(_ db: Database, _ webhook: String) throws -> WebhookCursor {
        guard let row = try Row.fetchOne(db, sql: "SELECT eventSeq, erasureSeq FROM webhookCursor WHERE webhook = ?", arguments: [webhook]) else {
            // A new webhook starts at the present: it is told about what happens from now on.
            let event = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM event") ?? 0
            let erasure = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM erasure") ?? 0
            return WebhookCursor(eventSeq: event, erasureSeq: erasure)
        }
        return WebhookCursor(eventSeq: row[0], erasureSeq: row[1])
    }

    public func webhookSources(after cursor: WebhookCursor, limit: Int) async throws(StoreError) -> (sources: [WebhookSource], cursor: WebhookCursor) {
        try await read("read status changes for webhooks") { db in
            var next = cursor
            var sources: [(Int64, WebhookSource)] = []
            let events = try Row.fetchAll(db, sql: """
                SELECT event.seq, event.itemId, event.fromStatus, event.toStatus, event.at, item.kind, item.userId, item.reason,
                       item.conversation
                FROM event JOIN item ON item.id = event.itemId
                WHERE event.seq > ? AND event.type IN ('verdict', 'reprocess', 'review')
                ORDER BY event.seq LIMIT ?
                """, arguments: [cursor.eventSeq, limit])
            for row in events {
                next.eventSeq = max(next.eventSeq, row[0])
                guard let to = ItemStatus(rawValue: row[3]), to != .pending, let kind = ItemKind(rawValue: row[5]) else { continue }
                let from = (row[2] as String?).flatMap(ItemStatus.init(rawValue:))
                guard from != to else { continue }
                let autoReply = to == .blocked ? ItemRow.decode(ConversationVerdict.self, row[8] as String?)?.autoReply : nil
                sources.append((row[0], WebhookSource(change: .status(to, previous: from), itemId: ItemID(row[1] as String), kind: kind,
                                                      userId: row[6], reason: row[7], autoReply: autoReply, at: row[4])))
            }
            // Events of an erased item went with it; the scan still advances past the gap.
            if events.count < limit, let highest = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM event"), highest > next.eventSeq {
                next.eventSeq = highest
            }
            let erasures = try Row.fetchAll(db, sql: "SELECT * FROM erasure WHERE seq > ? ORDER BY seq LIMIT ?",
                                            arguments: [cursor.erasureSeq, limit])
            for row in erasures {
                next.erasureSeq = max(next.erasureSeq, row["seq"])
                guard let kind = ItemKind(rawValue: row["kind"]) else { continue }
                sources.append((row["seq"], WebhookSource(change: .erased(by: row["erasedBy"]), itemId: ItemID(row["itemId"] as String), kind: kind,
                                                          userId: row["userId"], reason: row["reason"], at: row["erasedAt"])))
            }
            return (sources.sorted { $0.1.at < $1.1.at || ($0.1.at == $1.1.at && $0.0 < $1.0) }.map(\.1), next)
        }
    }

    public func enqueueWebhookDeliveries(_ deliveries: [WebhookDelivery], webhook: String, cursor: WebhookCursor) async throws(StoreError) {
        try await write("queue deliveries for webhook \(webhook)") { db in
            for delivery in deliveries {
                try db.execute(sql: """
                    INSERT OR IGNORE INTO webhookDelivery (id, webhook, event, payload, state, attempts, nextAttemptAt, lastError, createdAt, deliveredAt)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [delivery.id, delivery.webhook, delivery.event.rawValue, delivery.payload, delivery.state.rawValue,
                                     delivery.attempts, delivery.nextAttemptAt, delivery.lastError, delivery.createdAt, delivery.deliveredAt])
            }
            try db.execute(sql: """
                INSERT INTO webhookCursor (webhook, eventSeq, erasureSeq) VALUES (?, ?, ?)
                ON CONFLICT(webhook) DO UPDATE SET eventSeq = excluded.eventSeq, erasureSeq = excluded.erasureSeq
                """, arguments: [webhook, cursor.eventSeq, cursor.erasureSeq])
        }
    }

    public func dueWebhookDeliveries(at date: Date, limit: Int, webhook: String?) async throws(StoreError) -> [WebhookDelivery] {
        try await read("read due webhook deliveries") { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM webhookDelivery WHERE state = 'pending' AND (?1 IS NULL OR webhook = ?1) AND nextAttemptAt <= ?2
                ORDER BY nextAttemptAt, createdAt LIMIT ?3
                """, arguments: [webhook, date, limit]).compactMap(Self.delivery)
        }
    }

    public func recordWebhookAttempt(_ id: String, outcome: WebhookAttemptOutcome, at date: Date) async throws(StoreError) {
        try await write("record an attempt of delivery \(id)") { db in
            switch outcome {
            case .delivered:
                try db.execute(sql: "UPDATE webhookDelivery SET state = 'delivered', attempts = attempts + 1, deliveredAt = ?, lastError = NULL WHERE id = ?",
                               arguments: [date, id])
            case let .retry(next, error):
                try db.execute(sql: "UPDATE webhookDelivery SET attempts = attempts + 1, nextAttemptAt = ?, lastError = ? WHERE id = ?",
                               arguments: [next, error, id])
            case let .failed(error):
                try db.execute(sql: "UPDATE webhookDelivery SET state = 'failed', attempts = attempts + 1, lastError = ? WHERE id = ?",
                               arguments: [error, id])
            case let .postponed(next, note):
                try db.execute(sql: "UPDATE webhookDelivery SET nextAttemptAt = ?, lastError = ? WHERE id = ?", arguments: [next, note, id])
            }
        }
    }

    public func webhookDeliveries(state: WebhookDeliveryState?, limit: Int) async throws(StoreError) -> [WebhookDelivery] {
        try await read("list webhook deliveries") { db in
            let rows = if let state {
                try Row.fetchAll(db, sql: "SELECT * FROM webhookDelivery WHERE state = ? ORDER BY createdAt DESC, id LIMIT ?",
                                 arguments: [state.rawValue, limit])
            } else {
                try Row.fetchAll(db, sql: "SELECT * FROM webhookDelivery ORDER BY createdAt DESC, id LIMIT ?", arguments: [limit])
            }
            return rows.compactMap(Self.delivery)
        }
    }

    public func retryWebhookDeliveries(ids: [String]?, at date: Date) async throws(StoreError) -> [String] {
        try await write("retry webhook deliveries") { db in
            guard let ids else {
                return try String.fetchAll(db, sql: "UPDATE webhookDelivery SET state = 'pending', nextAttemptAt = ? WHERE state = 'failed' RETURNING id",
                                           arguments: [date])
            }
            var retried: [String] = []
            for chunk in ids.chunked(500) {
                retried += try String.fetchAll(db, sql: "UPDATE webhookDelivery SET state = 'pending', nextAttemptAt = ? WHERE state = 'failed' AND id IN (\(Self.placeholders(chunk.count))) RETURNING id",
                                               arguments: StatementArguments([date] + Array(chunk)))
            }
            return retried
        }
    }

    static func delivery(_ row: Row) -> WebhookDelivery? {
        guard let event = WebhookEvent(rawValue: row["event"]), let state = WebhookDeliveryState(rawValue: row["state"]) else { return nil }
        return WebhookDelivery(id: row["id"], webhook: row["webhook"], event: event, payload: row["payload"], state: state,
                               attempts: row["attempts"], nextAttemptAt: row["nextAttemptAt"], lastError: row["lastError"],
                               createdAt: row["createdAt"], deliveredAt: row["deliveredAt"])
    }
}
