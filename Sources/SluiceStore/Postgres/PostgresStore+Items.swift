import Foundation
import Logging
import PostgresNIO
import SluiceCore

/// Items and their events. Writers on several hosts may touch the same item: a write locks the stored row
/// (`FOR UPDATE`) before deciding from it, a new row is inserted with `ON CONFLICT`, and the `event` feed's lock is
/// taken first of all, so the lock order is the same in every transaction (feed, then rows).
extension PostgresStore {
    // MARK: Reads

    public func item(_ id: ItemID) async throws(StoreError) -> Item? {
        let rows = try await rows("read item \(id)", "SELECT \(unescaped: PostgresItemCodec.column) FROM item WHERE id = \(id.rawValue)")
        return try rows.first.map { row throws(StoreError) in try Self.item(row) }
    }

    public func items(_ ids: [ItemID]) async throws(StoreError) -> [Item] {
        guard !ids.isEmpty else { return [] }
        let rows = try await rows("read \(ids.count) items",
                                  "SELECT \(unescaped: PostgresItemCodec.column) FROM item WHERE id = ANY(\(ids.map(\.rawValue)))")
        return try Self.items(rows)
    }

    public func items(status: ItemStatus?, kind: ItemKind?, limit: Int?) async throws(StoreError) -> [Item] {
        let rows = try await rows("list items", """
            SELECT \(unescaped: PostgresItemCodec.column) FROM item
            WHERE (\(status?.rawValue)::text IS NULL OR status = \(status?.rawValue))
              AND (\(kind?.rawValue)::text IS NULL OR kind = \(kind?.rawValue))
            ORDER BY updatedAt DESC, id LIMIT \(limit.map(Int64.init))
            """)
        return try Self.items(rows)
    }

    public func items(matching filter: ItemFilter) async throws(StoreError) -> [Item] {
        try Self.items(try await rows("select items", Self.select(PostgresItemCodec.column, filter)))
    }

    public func itemIDs(matching filter: ItemFilter) async throws(StoreError) -> [ItemID] {
        let rows = try await rows("select item ids", Self.select("id", filter))
        do {
            return try rows.map { ItemID(rawValue: try $0.decode(String.self)) }
        } catch {
            throw Self.storeError("select item ids", error)
        }
    }

    /// Items matching a filter, ordered by id (`columns` is a constant select list).
    static func select(_ columns: String, _ filter: ItemFilter) -> PostgresQuery {
        """
        SELECT \(unescaped: columns) FROM item
        WHERE (\(filter.kind?.rawValue)::text IS NULL OR kind = \(filter.kind?.rawValue))
          AND (cardinality(\(filter.statuses.map(\.rawValue))::text[]) = 0 OR status = ANY(\(filter.statuses.map(\.rawValue))))
          AND (\(filter.userId)::text IS NULL OR userId = \(filter.userId))
          AND (\(filter.since.map(PostgresItemCodec.milliseconds))::bigint IS NULL
               OR createdAt >= \(filter.since.map(PostgresItemCodec.milliseconds)))
          AND (\(filter.until.map(PostgresItemCodec.milliseconds))::bigint IS NULL
               OR createdAt < \(filter.until.map(PostgresItemCodec.milliseconds)))
        ORDER BY id
        """
    }

    public func events(of id: ItemID) async throws(StoreError) -> [ItemEvent] {
        let rows = try await rows("read events of \(id)", """
            SELECT itemId, at, type, fromStatus, toStatus, stage, detail FROM event WHERE itemId = \(id.rawValue) ORDER BY seq
            """)
        do {
            return try rows.map { row in
                let (itemId, at, type, from, to, stage, detail) = try row.decode((String, Date, String, String?, String?, String?, String?).self)
                return ItemEvent(itemId: ItemID(rawValue: itemId), at: at, type: type, fromStatus: from.flatMap(ItemStatus.init(rawValue:)),
                                 toStatus: to.flatMap(ItemStatus.init(rawValue:)), stage: stage, detail: detail)
            }
        } catch {
            throw Self.storeError("read events of \(id)", error)
        }
    }

    public func countsByStatus() async throws(StoreError) -> [ItemStatus: Int] {
        var counts: [ItemStatus: Int] = [:]
        for count in try await countsByKindAndStatus() { counts[count.status, default: 0] += count.count }
        return counts
    }

    public func countsByKindAndStatus() async throws(StoreError) -> [ItemCount] {
        let rows = try await rows("count items", "SELECT kind, status, COUNT(*) FROM item GROUP BY kind, status ORDER BY kind, status")
        do {
            return try rows.compactMap { row in
                let (kind, status, count) = try row.decode((String, String, Int).self)
                guard let kind = ItemKind(rawValue: kind), let status = ItemStatus(rawValue: status) else { return nil }
                return ItemCount(kind: kind, status: status, count: count)
            }
        } catch {
            throw Self.storeError("count items", error)
        }
    }

    public func contentHashes(_ ids: [ItemID]) async throws(StoreError) -> [ItemID: StoredHash] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await rows("look up \(ids.count) items",
                                  "SELECT id, contentHash, status FROM item WHERE id = ANY(\(ids.map(\.rawValue)))")
        do {
            var result: [ItemID: StoredHash] = [:]
            for row in rows {
                let (id, hash, status) = try row.decode((String, String?, String).self)
                if let status = ItemStatus(rawValue: status) { result[ItemID(rawValue: id)] = StoredHash(hash: hash, status: status) }
            }
            return result
        } catch {
            throw Self.storeError("look up \(ids.count) items", error)
        }
    }

    // MARK: Writes

    public func markReceived(_ id: ItemID, kind: ItemKind, userId: String, contentHash: String?, sourceBytes: Int?,
                             at now: Date) async throws(StoreError) -> Item {
        let logger = logger
        return try await transaction("mark \(id) received") { connection in
            try await connection.lock(.events, logger: logger)
            let fresh = Item(id: id, kind: kind, userId: userId, status: .pending, sourceBytes: sourceBytes,
                             contentHash: contentHash, attempts: 1, createdAt: now, updatedAt: now)
            let inserted = try await connection.rows("""
                INSERT INTO item SELECT * FROM json_populate_record(NULL::item, \(try PostgresItemCodec.encode(fresh))::json)
                ON CONFLICT (id) DO NOTHING RETURNING id
                """, logger: logger)
            if !inserted.isEmpty {
                try await Self.insertEvents([ItemEvent(itemId: id, at: now, type: "received", toStatus: .pending, detail: "attempt 1")],
                                            on: connection, logger: logger)
                return fresh
            }
            guard var item = try await Self.lockedItems([id], on: connection, logger: logger)[id] else {
                throw StoreError(operation: "mark \(id) received", message: "the item vanished while it was being marked")
            }
            let previous = item.status
            if item.contentHash != contentHash || previous.isFinal {
                item.status = .pending
                item.reason = nil
            }
            item.contentHash = contentHash
            item.sourceBytes = sourceBytes
            item.attempts += 1
            item.updatedAt = now
            try await Self.upsert([item], on: connection, logger: logger)
            try await Self.insertEvents([ItemEvent(itemId: id, at: now, type: "received", fromStatus: previous, toStatus: item.status,
                                                   detail: "attempt \(item.attempts)")], on: connection, logger: logger)
            return try await Self.lockedItems([id], on: connection, logger: logger)[id] ?? item
        }
    }

    public func recordVerdict(_ item: Item, stage: String?, detail: String?) async throws(StoreError) {
        _ = try await recordVerdict(item, stage: stage, detail: detail, onlyIfStored: false)
    }

    public func recordUploadVerdict(_ item: Item, stage: String?, detail: String?) async throws(StoreError) -> Bool {
        try await recordVerdict(item, stage: stage, detail: detail, onlyIfStored: true)
    }

    /// The item and its `verdict` event, keeping the stored `createdAt` and the larger attempt count; with
    /// `onlyIfStored`, nothing when there is no row (false).
    private func recordVerdict(_ item: Item, stage: String?, detail: String?, onlyIfStored: Bool) async throws(StoreError) -> Bool {
        let logger = logger
        return try await transaction("record verdict for \(item.id)") { connection in
            try await connection.lock(.events, logger: logger)
            let previous = try await Self.lockedItems([item.id], on: connection, logger: logger)[item.id]
            if onlyIfStored, previous == nil { return false }
            var updated = item
            if let previous {
                updated.createdAt = previous.createdAt
                updated.attempts = max(previous.attempts, item.attempts)
            }
            try await Self.upsert([updated], on: connection, logger: logger)
            try await Self.insertEvents([ItemEvent(itemId: item.id, at: item.updatedAt, type: "verdict", fromStatus: previous?.status,
                                                   toStatus: item.status, stage: stage, detail: detail ?? item.reason)],
                                        on: connection, logger: logger)
            return true
        }
    }

    @discardableResult
    public func recordVerdicts(_ items: [Item], stage: String) async throws(StoreError) -> Int {
        if items.isEmpty { return 0 }
        let logger = logger
        return try await transaction("record \(items.count) verdicts") { connection in
            try await Self.recordVerdicts(items, stage: stage, skippingUnchanged: false, on: connection, logger: logger)
        }
    }

    public func recordChangedVerdicts(_ items: [Item], lineIDs: [ItemID], stage: String) async throws(StoreError) -> Int {
        if items.isEmpty { return 0 }
        let logger = logger
        return try await transaction("record \(items.count) verdicts") { connection in
            try await Self.recordVerdicts(items, lineIDs: lineIDs, stage: stage, skippingUnchanged: true, on: connection, logger: logger)
        }
    }

    public func recordChangedVerdicts(_ prepared: PreparedVerdicts) async throws(StoreError) -> RecordedVerdicts {
        if prepared.items.isEmpty { return RecordedVerdicts(written: 0) }
        let logger = logger
        return try await transaction("record \(prepared.items.count) verdicts") { connection in
            try await Self.record(prepared, on: connection, logger: logger)
        }
    }

    public func recordChangedVerdicts(_ prepared: PreparedVerdicts, claiming claim: WorkClaim) async throws(StoreError) -> RecordedVerdicts? {
        let logger = logger
        return try await transaction("record \(prepared.items.count) verdicts holding \(claim.unit)") { connection -> RecordedVerdicts? in
            guard !(try await connection.rows(Self.claimQuery(claim), logger: logger)).isEmpty else { return nil }
            return try await Self.record(prepared, on: connection, logger: logger)
        }
    }

    /// A prepared batch in the current transaction, skipping unchanged items and leaving out the items of users erased
    /// after its point (`usersErased(after:on:logger:)`, as the conversation rules' counts).
    static func record(_ prepared: PreparedVerdicts, on connection: PostgresConnection, logger: Logger) async throws -> RecordedVerdicts {
        if prepared.items.isEmpty { return RecordedVerdicts(written: 0) }
        var batch = prepared
        var erased = 0
        if let seen = prepared.erasuresSeenUpTo {
            (batch, erased) = prepared.without(users: try await usersErased(after: seen, on: connection, logger: logger))
        }
        if batch.items.isEmpty { return RecordedVerdicts(written: 0, erased: erased) }
        let written = try await recordVerdicts(batch.items, lineIDs: batch.lineIDs, stage: batch.stage, skippingUnchanged: true,
                                               on: connection, logger: logger)
        return RecordedVerdicts(written: written, erased: erased)
    }

    /// A batch in the current transaction, as SQLite's: each stored row keeps its creation date and counts one more
    /// attempt (a line twice in a batch counts twice); `skippingUnchanged` leaves an item whose stored content hash
    /// equals its own. One upsert statement writes the rows (the last value of each id), one insert the events.
    static func recordVerdicts(_ items: [Item], lineIDs: [ItemID]? = nil, stage: String, skippingUnchanged: Bool, on connection: PostgresConnection,
                               logger: Logger) async throws -> Int {
        try await connection.lock(.events, logger: logger)
        var stored = try await lockedItems(Array(Set(items.map(\.id))), on: connection, logger: logger)
        // A line whose id is another user's stored message is rejected under its own line id instead.
        var items = items
        if let lineIDs {
            let refused = Item.refuseIDsOfOtherUsers(&items, lineIDs: lineIDs) { stored[$0]?.userId }
            if !refused.isEmpty {
                stored.merge(try await lockedItems(refused, on: connection, logger: logger)) { _, new in new }
            }
        }
        var rows: [ItemID: Item] = [:]
        var order: [ItemID] = []
        var events: [ItemEvent] = []
        var written = 0
        for item in items {
            let before = stored[item.id]
            if skippingUnchanged, let before, (before.contentHash ?? "") == (item.contentHash ?? "") { continue }
            written += 1
            var updated = item
            if let before {
                updated.createdAt = before.createdAt
                updated.attempts = before.attempts + 1
            }
            if rows[item.id] == nil { order.append(item.id) }
            rows[item.id] = updated
            stored[item.id] = updated
            events.append(ItemEvent(itemId: item.id, at: item.updatedAt, type: "verdict", fromStatus: before?.status, toStatus: item.status,
                                    stage: stage, detail: item.reason))
        }
        try await upsert(order.compactMap { rows[$0] }, on: connection, logger: logger)
        try await insertEvents(events, on: connection, logger: logger)
        return written
    }

    public func appendEvent(_ event: ItemEvent) async throws(StoreError) {
        let logger = logger
        try await transaction("append event to \(event.itemId)") { connection in
            try await connection.lock(.events, logger: logger)
            try await Self.insertEvents([event], on: connection, logger: logger)
        }
    }

    public func recordStatusChange(_ item: Item, from previous: ItemStatus, type: String, detail: String) async throws(StoreError) {
        try await write(item, operation: "record a status change of \(item.id)",
                        event: ItemEvent(itemId: item.id, at: item.updatedAt, type: type, fromStatus: previous, toStatus: item.status,
                                         stage: "review", detail: detail))
    }

    public func recordDecision(_ item: Item, from previous: ItemStatus) async throws(StoreError) {
        let detail = "by \(item.decision?.by ?? "?")" + (item.decision?.note.map { ": \($0)" } ?? "")
        try await write(item, operation: "record the decision on \(item.id)",
                        event: ItemEvent(itemId: item.id, at: item.updatedAt, type: "review", fromStatus: previous, toStatus: item.status,
                                         stage: "review", detail: detail))
    }

    /// The item as given, and one event, in one transaction.
    private func write(_ item: Item, operation: String, event: ItemEvent) async throws(StoreError) {
        let logger = logger
        try await transaction(operation) { connection in
            try await connection.lock(.events, logger: logger)
            try await Self.upsert([item], on: connection, logger: logger)
            try await Self.insertEvents([event], on: connection, logger: logger)
        }
    }

    // MARK: Plumbing

    static func item(_ row: PostgresRow) throws(StoreError) -> Item {
        let json: String
        do { json = try row.decode(String.self) } catch { throw storeError("read an item", error) }
        return try PostgresItemCodec.decode(json)
    }

    static func items(_ rows: [PostgresRow]) throws(StoreError) -> [Item] {
        var items: [Item] = []
        items.reserveCapacity(rows.count)
        for row in rows { items.append(try item(row)) }
        return items
    }

    /// The stored items with these ids, their rows locked until the transaction ends.
    static func lockedItems(_ ids: [ItemID], on connection: PostgresConnection, logger: Logger) async throws -> [ItemID: Item] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await connection.rows("""
            SELECT \(unescaped: PostgresItemCodec.column) FROM item WHERE id = ANY(\(ids.map(\.rawValue))) ORDER BY id COLLATE "C" FOR UPDATE
            """, logger: logger)
        var found: [ItemID: Item] = [:]
        for item in try items(rows) { found[item.id] = item }
        return found
    }

    /// Inserts or replaces whole rows (every column from the item; ids must be distinct).
    static func upsert(_ items: [Item], on connection: PostgresConnection, logger: Logger) async throws {
        guard !items.isEmpty else { return }
        var json = "["
        for (index, item) in items.enumerated() {
            if index > 0 { json += "," }
            json += try PostgresItemCodec.encode(item)
        }
        json += "]"
        try await connection.run("""
            INSERT INTO item SELECT * FROM json_populate_recordset(NULL::item, \(json)::json)
            ON CONFLICT (id) DO UPDATE SET \(unescaped: PostgresItemCodec.updateAssignments)
            """, logger: logger)
    }

    /// Appends events (the caller holds the `event` feed's lock), at whole milliseconds as SQLite keeps them.
    static func insertEvents(_ events: [ItemEvent], on connection: PostgresConnection, logger: Logger) async throws {
        guard !events.isEmpty else { return }
        struct Row: Encodable {
            var itemid: String, at: Int64, type: String, fromstatus: String?, tostatus: String?, stage: String?, detail: String?
        }
        let rows = events.map {
            Row(itemid: $0.itemId.rawValue, at: PostgresItemCodec.milliseconds($0.at), type: $0.type, fromstatus: $0.fromStatus?.rawValue,
                tostatus: $0.toStatus?.rawValue, stage: $0.stage, detail: $0.detail)
        }
        let json = String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
        try await connection.run("""
            INSERT INTO event (itemId, at, type, fromStatus, toStatus, stage, detail)
            SELECT e.itemId, to_timestamp(e.at / 1000.0), e.type, e.fromStatus, e.toStatus, e.stage, e.detail
            FROM json_to_recordset(\(json)::json)
                AS e(itemId TEXT, at BIGINT, type TEXT, fromStatus TEXT, toStatus TEXT, stage TEXT, detail TEXT)
            """, logger: logger)
    }
}
