import Foundation
import GRDB
import SluiceCore

/// Filters for selecting items (reprocess, list).
public struct ItemFilter: Sendable, Equatable {
    public var kind: ItemKind?
    public var statuses: [ItemStatus] = []
    public var userId: String?
    public var since: Date?
    public var until: Date?

    public init(kind: ItemKind? = nil, statuses: [ItemStatus] = [], userId: String? = nil, since: Date? = nil, until: Date? = nil) {
        self.kind = kind
        self.statuses = statuses
        self.userId = userId
        self.since = since
        self.until = until
    }
}

/// Progress of a resumable reprocess run.
public struct ReprocessRunState: Sendable, Equatable {
    public var runKey: String
    public var resumed: Bool
    public var total: Int
    public var done: Int
}

extension StatusStore {
    /// Items matching the filter (by `createdAt` for since/until), ordered by id.
    public func items(matching filter: ItemFilter) throws(StoreError) -> [Item] {
        try read("select items") { db in
            var request = ItemRow.all()
            if let kind = filter.kind { request = request.filter(Column("kind") == kind.rawValue) }
            if !filter.statuses.isEmpty { request = request.filter(filter.statuses.map(\.rawValue).contains(Column("status"))) }
            if let userId = filter.userId { request = request.filter(Column("userId") == userId) }
            if let since = filter.since { request = request.filter(Column("createdAt") >= since) }
            if let until = filter.until { request = request.filter(Column("createdAt") < until) }
            return try request.order(Column("id")).fetchAll(db).map(\.item)
        }
    }

    /// Ids of the items matching the filter, ordered (no row decoding).
    public func itemIDs(matching filter: ItemFilter) throws(StoreError) -> [String] {
        try read("select item ids") { db in try String.fetchAll(db, Self.idRequest(filter)) }
    }

    private static func idRequest(_ filter: ItemFilter) -> QueryInterfaceRequest<ItemRow> {
        var request = ItemRow.select(Column("id"))
        if let kind = filter.kind { request = request.filter(Column("kind") == kind.rawValue) }
        if !filter.statuses.isEmpty { request = request.filter(filter.statuses.map(\.rawValue).contains(Column("status"))) }
        if let userId = filter.userId { request = request.filter(Column("userId") == userId) }
        if let since = filter.since { request = request.filter(Column("createdAt") >= since) }
        if let until = filter.until { request = request.filter(Column("createdAt") < until) }
        return request.order(Column("id"))
    }

    /// What text reprocessing needs, without decoding whole rows: kind, status, the message, and the stored
    /// verdicts as their JSON text (compared against freshly encoded ones).
    public struct TextSnapshot: Sendable {
        public var id: String
        public var kind: ItemKind
        public var status: ItemStatus
        public var reason: String?
        public var text: String?
        public var context: String?
        public var verdictJSON: String?
        public var priorityJSON: String?
    }

    public func textSnapshots(ids: [String]) throws(StoreError) -> [TextSnapshot] {
        try read("read \(ids.count) snapshots") { db in
            var result: [TextSnapshot] = []
            result.reserveCapacity(ids.count)
            for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
                let rows = try Row.fetchCursor(db, sql: "SELECT id, kind, status, text, textContext, textVerdict, priority, reason FROM item WHERE id IN (\(chunk.map { _ in "?" }.joined(separator: ",")))",
                                               arguments: StatementArguments(chunk))
                while let row = try rows.next() {
                    guard let kind = ItemKind(rawValue: row[1]), let status = ItemStatus(rawValue: row[2]) else { continue }
                    result.append(TextSnapshot(id: row[0], kind: kind, status: status, reason: row[7], text: row[3], context: row[4],
                                               verdictJSON: row[5], priorityJSON: row[6]))
                }
            }
            return result
        }
    }

    /// Whether `value` equals what is stored as `json`: compares the text first (rows written with sorted keys),
    /// and decodes only when the text differs.
    public static func matchesStored<T: CanonicalJSON & Codable & Equatable>(_ value: T, _ json: String?) -> Bool {
        guard let json else { return false }
        if value.canonicalJSON == json { return true }
        return ItemRow.decode(T.self, json) == value
    }

    public func items(ids: [String]) throws(StoreError) -> [Item] {
        try read("read \(ids.count) items") { db in
            var result: [Item] = []
            for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
                result += try ItemRow.filter(chunk.contains(Column("id"))).fetchAll(db).map(\.item)
            }
            return result
        }
    }

    /// Starts a run, or resumes an unfinished one with the same key: the item snapshot is taken once, so a
    /// resumed run processes exactly the items the first attempt did not finish.
    public func beginReprocess(runKey: String, arguments: String, filter: ItemFilter) throws(StoreError) -> ReprocessRunState {
        try write("begin reprocess run") { db in
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
            let matching = try Self.idRequest(filter).makePreparedRequest(db, forSingleResult: false).statement
            try db.execute(sql: "INSERT INTO reprocessItem (runKey, itemId) SELECT ?, id FROM (\(matching.sql))",
                           arguments: [runKey] + matching.arguments)
            return ReprocessRunState(runKey: runKey, resumed: false, total: db.changesCount, done: 0)
        }
    }

    /// Ids of the run already done (for cleanup after an interruption).
    public func doneReprocessItems(runKey: String) throws(StoreError) -> [String] {
        try read("read reprocess progress") { db in
            try String.fetchAll(db, sql: "SELECT itemId FROM reprocessItem WHERE runKey = ? AND done ORDER BY itemId", arguments: [runKey])
        }
    }

    /// Ids of the run not done yet, in order.
    public func pendingReprocessItems(runKey: String) throws(StoreError) -> [String] {
        try read("read reprocess progress") { db in
            try String.fetchAll(db, sql: "SELECT itemId FROM reprocessItem WHERE runKey = ? AND NOT done ORDER BY itemId", arguments: [runKey])
        }
    }

    /// Records a batch of reprocessed items in one transaction: changed items with a `reprocess` event each,
    /// and every item of the batch marked done.
    public func commitReprocessBatch(runKey: String, changed: [(item: Item, from: ItemStatus, stage: String, why: String)],
                                     done: [String]) throws(StoreError) {
        try write("commit reprocess batch") { db in
            for change in changed {
                try ItemRow(change.item).save(db)
                try EventRow(ItemEvent(itemId: change.item.id, at: change.item.updatedAt, type: "reprocess", fromStatus: change.from,
                                       toStatus: change.item.status, stage: change.stage, detail: change.why)).insert(db)
            }
            try Self.markDone(db, runKey: runKey, ids: done)
        }
    }

    /// Marks items done with one statement per 500 ids.
    static func markDone(_ db: Database, runKey: String, ids: [String]) throws {
        for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
            try db.execute(sql: "UPDATE reprocessItem SET done = 1 WHERE runKey = ? AND itemId IN (\(chunk.map { _ in "?" }.joined(separator: ",")))",
                           arguments: StatementArguments([runKey] + chunk))
        }
    }

    /// A text item's new verdict from reprocessing: only these columns change.
    public struct TextUpdate: Sendable {
        public var id: String
        public var from: ItemStatus
        public var status: ItemStatus
        public var reason: String?
        public var verdict: TextVerdict?
        public var priority: PriorityVerdict?
        public var stage: String
        public var why: String

        public init(id: String, from: ItemStatus, status: ItemStatus, reason: String?, verdict: TextVerdict?, priority: PriorityVerdict?,
                    stage: String, why: String) {
            self.id = id
            self.from = from
            self.status = status
            self.reason = reason
            self.verdict = verdict
            self.priority = priority
            self.stage = stage
            self.why = why
        }
    }

    /// Text counterpart of `commitReprocessBatch`: targeted updates, one `reprocess` event each, all marked done.
    /// Async: the write runs on the store's writer queue without holding a thread of the caller's pool.
    public func commitTextReprocessBatch(runKey: String, updates: [TextUpdate], done: [String]) async throws(StoreError) {
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
                                               change.priority?.canonicalJSON, now, change.id])
                try event.execute(arguments: [change.id, now, change.from.rawValue, change.status.rawValue, change.stage, change.why])
            }
            try Self.markDone(db, runKey: runKey, ids: done)
        }
    }

    public func finishReprocess(runKey: String) throws(StoreError) {
        try write("finish reprocess run") { db in
            try db.execute(sql: "UPDATE reprocessRun SET state = 'finished', finishedAt = ? WHERE runKey = ?", arguments: [Date(), runKey])
            try db.execute(sql: "DELETE FROM reprocessItem WHERE runKey = ?", arguments: [runKey])
        }
    }

    /// Records a human decision: the item as decided plus a `review` event.
    public func recordReview(_ item: Item, from: ItemStatus) throws(StoreError) {
        try write("record review of \(item.id)") { db in
            try ItemRow(item).save(db)
            let detail = "by \(item.review?.by ?? "?")" + (item.review?.note.map { ": \($0)" } ?? "")
            try EventRow(ItemEvent(itemId: item.id, at: item.updatedAt, type: "review", fromStatus: from, toStatus: item.status,
                                   stage: "review", detail: detail)).insert(db)
        }
    }

    public func recordReport(_ report: Report) throws(StoreError) {
        try write("record report \(report.reportId)") { db in
            try db.execute(sql: "INSERT INTO report (reportId, messageId, category, description, reporterUserId, createdAt) VALUES (?, ?, ?, ?, ?, ?)",
                           arguments: [report.reportId, report.messageId, report.category, report.description, report.reporterUserId, report.createdAt])
        }
    }

    public func reports() throws(StoreError) -> [Report] {
        try read("list reports") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM report ORDER BY createdAt DESC, reportId").map { row in
                Report(reportId: row["reportId"], messageId: row["messageId"], category: row["category"], description: row["description"],
                       reporterUserId: row["reporterUserId"], createdAt: row["createdAt"])
            }
        }
    }
}
