import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    // MARK: Reads

    public func item(_ id: ItemID) async throws(StoreError) -> Item? {
        try await read("read item \(id)") { db in try ItemRow.stored(db, id: id.rawValue)?.item }
    }

    public func items(_ ids: [ItemID]) async throws(StoreError) -> [Item] {
        let raw = ids.map(\.rawValue)
        return try await read("read \(ids.count) items") { db in
            var result: [Item] = []
            for chunk in raw.chunked(500) {
                result += try ItemRow.filter(chunk.contains(ItemRow.Columns.id)).fetchAll(db).map(\.item)
            }
            return result
        }
    }

    public func items(status: ItemStatus?, kind: ItemKind?, limit: Int?) async throws(StoreError) -> [Item] {
        try await read("list items") { db in
            var request = ItemRow.all()
            if let status { request = request.filter(ItemRow.Columns.status == status.rawValue) }
            if let kind { request = request.filter(ItemRow.Columns.kind == kind.rawValue) }
            request = request.order(ItemRow.Columns.updatedAt.desc, ItemRow.Columns.id)
            if let limit { request = request.limit(limit) }
            return try request.fetchAll(db).map(\.item)
        }
    }

    public func items(matching filter: ItemFilter) async throws(StoreError) -> [Item] {
        try await read("select items") { db in try Self.request(filter).fetchAll(db).map(\.item) }
    }

    public func itemIDs(matching filter: ItemFilter) async throws(StoreError) -> [ItemID] {
        try await read("select item ids") { db in
            try String.fetchAll(db, Self.request(filter).select(ItemRow.Columns.id)).map(ItemID.init(rawValue:))
        }
    }

    /// Items matching a filter, ordered by id.
    static func request(_ filter: ItemFilter) -> QueryInterfaceRequest<ItemRow> {
        var request = ItemRow.all()
        if let kind = filter.kind { request = request.filter(ItemRow.Columns.kind == kind.rawValue) }
        if !filter.statuses.isEmpty { request = request.filter(filter.statuses.map(\.rawValue).contains(ItemRow.Columns.status)) }
        if let userId = filter.userId { request = request.filter(ItemRow.Columns.userId == userId) }
        if let since = filter.since { request = request.filter(ItemRow.Columns.createdAt >= since) }
        if let until = filter.until { request = request.filter(ItemRow.Columns.createdAt < until) }
        return request.order(ItemRow.Columns.id)
    }

    public func events(of id: ItemID) async throws(StoreError) -> [ItemEvent] {
        try await read("read events of \(id)") { db in
            try EventRow.filter(EventRow.Columns.itemId == id.rawValue).order(EventRow.Columns.seq).fetchAll(db).map(\.event)
        }
    }

    public func countsByStatus() async throws(StoreError) -> [ItemStatus: Int] {
        try await read("count items") { db in
            var counts: [ItemStatus: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS n FROM item GROUP BY status") {
                if let status = ItemStatus(rawValue: row["status"]) { counts[status] = row["n"] }
            }
            return counts
        }
    }

    public func countsByKindAndStatus() async throws(StoreError) -> [ItemCount] {
        try await read("count items") { db in
            try Row.fetchAll(db, sql: "SELECT kind, status, COUNT(*) AS n FROM item GROUP BY kind, status ORDER BY kind, status").compactMap { row in
                guard let kind = ItemKind(rawValue: row["kind"]), let status = ItemStatus(rawValue: row["status"]) else { return nil }
                return ItemCount(kind: kind, status: status, count: row["n"])
            }
        }
    }

    public func contentHashes(_ ids: [ItemID]) async throws(StoreError) -> [ItemID: StoredHash] {
        if ids.isEmpty { return [:] }
        let raw = ids.map(\.rawValue)
        return try await read("look up \(ids.count) items") { db in
            var result: [ItemID: StoredHash] = [:]
            for chunk in raw.chunked(500) {
                let rows = try Row.fetchAll(db, sql: "SELECT id, contentHash, status FROM item WHERE id IN (\(Self.placeholders(chunk.count)))",
                                            arguments: StatementArguments(Array(chunk)))
                for row in rows {
                    if let status = ItemStatus(rawValue: row["status"]) { result[ItemID(row["id"] as String)] = StoredHash(hash: row["contentHash"], status: status) }
                }
            }
            return result
        }
    }

    // MARK: Writes

    public func markReceived(_ id: ItemID, kind: ItemKind, userId: String, contentHash: String?, sourceBytes: Int?,
                             at now: Date) async throws(StoreError) -> Item {
        try await write("mark \(id) received") { db in
            if var row = try ItemRow.stored(db, id: id.rawValue) {
                let previous = row.status
                if row.contentHash != contentHash || previous.isFinal {
                    row.status = .pending
                    row.reason = nil
                }
                row.contentHash = contentHash
                row.sourceBytes = sourceBytes
                row.attempts += 1
                row.updatedAt = now
                try row.update(db)
                try EventRow(ItemEvent(itemId: id, at: now, type: "received", fromStatus: previous, toStatus: row.status,
                                       detail: "attempt \(row.attempts)")).insert(db)
                return row.item
            }
            let item = Item(id: id, kind: kind, userId: userId, status: .pending, sourceBytes: sourceBytes,
                            contentHash: contentHash, attempts: 1, createdAt: now, updatedAt: now)
            try ItemRow(item).insert(db)
            try EventRow(ItemEvent(itemId: id, at: now, type: "received", toStatus: .pending, detail: "attempt 1")).insert(db)
            return item
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
        try await write("record verdict for \(item.id)") { db in
            let previous = try ItemRow.stored(db, id: item.id.rawValue)
            if onlyIfStored, previous == nil { return false }
            var updated = item
            if let previous {
                updated.createdAt = previous.createdAt
                updated.attempts = max(previous.attempts, item.attempts)
            }
            try ItemRow(updated).save(db)
            try EventRow(ItemEvent(itemId: item.id, at: item.updatedAt, type: "verdict", fromStatus: previous?.status,
                                   toStatus: item.status, stage: stage, detail: detail ?? item.reason)).insert(db)
            return true
        }
    }

    @discardableResult
    public func recordVerdicts(_ items: [Item], stage: String) async throws(StoreError) -> Int {
        if items.isEmpty { return 0 }
        let encoded = Self.encode(items, stage: stage)
        return try await write("record \(items.count) verdicts") { db in
            try Self.recordVerdicts(items, stage: stage, skippingUnchanged: false, encoded: encoded, in: db)
        }
    }

    public func recordChangedVerdicts(_ items: [Item], lineIDs: [ItemID], stage: String) async throws(StoreError) -> Int {
        try await recordChangedVerdicts(prepareChangedVerdicts(items, lineIDs: lineIDs, stage: stage)).written
    }

    /// Encodes the text rows (`encode`) on the caller's task, beside the writer's work on the batch before.
    public func prepareChangedVerdicts(_ items: [Item], lineIDs: [ItemID], stage: String) -> PreparedVerdicts {
        PreparedVerdicts(items: items, lineIDs: lineIDs, stage: stage, encoding: Self.encode(items, stage: stage))
    }

    public func recordChangedVerdicts(_ prepared: PreparedVerdicts) async throws(StoreError) -> RecordedVerdicts {
        if prepared.items.isEmpty { return RecordedVerdicts(written: 0) }
        return try await write("record \(prepared.items.count) verdicts") { db in try Self.record(prepared, in: db) }
    }

    public func recordChangedVerdicts(_ prepared: PreparedVerdicts, claiming claim: WorkClaim) async throws(StoreError) -> RecordedVerdicts? {
        try await write("record \(prepared.items.count) verdicts holding \(claim.unit)") { db in
            guard try Self.claim(claim, in: db) else { return nil }
            return try Self.record(prepared, in: db)
        }
    }

    /// A prepared batch in the current transaction, skipping unchanged items and leaving out the items of users erased
    /// after its point (read in this transaction: an erasure either committed before, and is read here, or comes
    /// after and deletes what this writes).
    private static func record(_ prepared: PreparedVerdicts, in db: Database) throws -> RecordedVerdicts {
        if prepared.items.isEmpty { return RecordedVerdicts(written: 0) }
        let (batch, erased) = prepared.without(users: try usersErased(db, after: prepared.erasuresSeenUpTo))
        let items = batch.items
        if items.isEmpty { return RecordedVerdicts(written: 0, erased: erased) }
        // A batch prepared by another store (or without erased users' items) is encoded here.
        let encoded = (batch.encoding as? EncodedBatch).flatMap { $0.rows.count == items.count ? $0 : nil }
        let written = try recordVerdicts(items, lineIDs: batch.lineIDs, stage: batch.stage, skippingUnchanged: true, encoded: encoded, in: db)
        return RecordedVerdicts(written: written, erased: erased)
    }

    public func appendEvent(_ event: ItemEvent) async throws(StoreError) {
        try await write("append event to \(event.itemId)") { db in try EventRow(event).insert(db) }
    }

    public func recordStatusChange(_ item: Item, from previous: ItemStatus, type: String, detail: String) async throws(StoreError) {
        try await write("record a status change of \(item.id)") { db in
            try ItemRow(item).save(db)
            try EventRow(ItemEvent(itemId: item.id, at: item.updatedAt, type: type, fromStatus: previous, toStatus: item.status,
                                   stage: "review", detail: detail)).insert(db)
        }
    }

    public func recordDecision(_ item: Item, from previous: ItemStatus) async throws(StoreError) {
        try await write("record the decision on \(item.id)") { db in
            try ItemRow(item).save(db)
            let detail = "by \(item.decision?.by ?? "?")" + (item.decision?.note.map { ": \($0)" } ?? "")
            try EventRow(ItemEvent(itemId: item.id, at: item.updatedAt, type: "review", fromStatus: previous, toStatus: item.status,
                                   stage: "review", detail: detail)).insert(db)
        }
    }
}
