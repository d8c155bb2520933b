#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import GRDBSQLite
import SluiceCore

/// The status store: one row per item plus an append-only event history, in SQLite (WAL) through GRDB.
/// Many processes may read while one daemon writes.
public struct StatusStore: Sendable {
    private let writer: any DatabaseWriter

    /// Opens (creating if needed) the store file in WAL mode and migrates it. `readOnly` opens an existing
    /// store without ever writing to it (dry runs): it must already be migrated.
    public init(path: URL, readOnly: Bool = false) throws(StoreError) {
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            configuration.prepareDatabase { db in
                // Several processes share the store (daemon, API, CLI). Without this, a process that exits as the
                // last connection it can see deletes -wal/-shm while another still uses them, and that one then
                // reads a stale snapshot forever.
                var persist: Int32 = 1
                sqlite3_file_control(db.sqliteConnection, nil, SQLITE_FCNTL_PERSIST_WAL, &persist)
                if !db.configuration.readonly { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            }
            if readOnly {
                configuration.readonly = true
                let queue = try DatabaseQueue(path: path.path, configuration: configuration)
                if try !queue.read({ try Self.migrator.hasCompletedMigrations($0) }) {
                    throw StoreError(operation: "open store at \(path.path) read-only", message: "it needs migrating; run sluice once without --dry-run")
                }
                writer = queue
                return
            }
            try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
            writer = try Self.withOpeningLock(beside: path) { () throws -> DatabasePool in
                let pool = try DatabasePool(path: path.path, configuration: configuration)
                try Self.migrator.migrate(pool)
                return pool
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(operation: "open store at \(path.path)", underlying: error)
        }
    }

    /// Processes opening a new store at once (daemon and API started together) raced: switching a new file to
    /// WAL failed with "database is locked", and GRDB's migrator checks which migrations are applied outside any
    /// transaction, so two could apply the first one and one failed with "table already exists". An exclusive
    /// lock on a file beside the store makes opening and migrating one process at a time.
    private static func withOpeningLock<T>(beside path: URL, _ body: () throws -> T) throws -> T {
        let lockPath = path.path + ".open-lock"
        let fd = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(operation: "lock \(lockPath) to open the store", message: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw StoreError(operation: "lock \(lockPath) to open the store", message: String(cString: strerror(errno)))
            }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// An in-memory store for tests and dry runs.
    public static func inMemory() throws(StoreError) -> StatusStore {
        do {
            let queue = try DatabaseQueue()
            try migrator.migrate(queue)
            return StatusStore(writer: queue)
        } catch {
            throw StoreError(operation: "open in-memory store", underlying: error)
        }
    }

    init(writer: any DatabaseWriter) { self.writer = writer }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-items-and-events") { db in
            try db.create(table: "item") { t in
                t.primaryKey("id", .text)
                t.column("kind", .text).notNull().indexed()
                t.column("userId", .text).notNull().indexed()
                t.column("status", .text).notNull().indexed()
                t.column("reason", .text)
                t.column("provider", .text)
                t.column("adult", .text)
                t.column("spoof", .text)
                t.column("medical", .text)
                t.column("violence", .text)
                t.column("racy", .text)
                t.column("exifHadGPS", .boolean)
                t.column("exifMake", .text)
                t.column("exifModel", .text)
                t.column("exifOrientation", .integer)
                t.column("approvedPath", .text)
                t.column("approvedBytes", .integer)
                t.column("thumbnailPath", .text)
                t.column("thumbnailBytes", .integer)
                t.column("originalPath", .text)
                t.column("format", .text)
                t.column("width", .integer)
                t.column("height", .integer)
                t.column("sourceBytes", .integer)
                t.column("contentHash", .text)
                t.column("decodeMs", .double)
                t.column("classifyMs", .double)
                t.column("writeMs", .double)
                t.column("totalMs", .double)
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("createdAt", .datetime).notNull()
                t.column("updatedAt", .datetime).notNull().indexed()
            }
            try db.create(table: "event") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("itemId", .text).notNull().indexed().references("item", onDelete: .cascade)
                t.column("at", .datetime).notNull()
                t.column("type", .text).notNull()
                t.column("fromStatus", .text)
                t.column("toStatus", .text)
                t.column("stage", .text)
                t.column("detail", .text)
            }
        }
        migrator.registerMigration("v2-text-items") { db in
            try db.alter(table: "item") { t in
                t.add(column: "text", .text)
                t.add(column: "textContext", .text)
                t.add(column: "textKind", .text)
                t.add(column: "textSource", .text)
                t.add(column: "textVerdict", .text)
            }
        }
        migrator.registerMigration("v3-priority-and-caption") { db in
            try db.alter(table: "item") { t in
                t.add(column: "priority", .text)
                t.add(column: "caption", .text)
                t.add(column: "captionText", .text)
            }
        }
        migrator.registerMigration("v4-backlog-review-reports") { db in
            try db.alter(table: "item") { t in
                t.add(column: "reviewedBy", .text)
                t.add(column: "reviewedAt", .datetime)
                t.add(column: "reviewNote", .text)
            }
            try db.create(table: "reprocessRun") { t in
                t.primaryKey("runKey", .text)
                t.column("arguments", .text).notNull()
                t.column("state", .text).notNull()
                t.column("startedAt", .datetime).notNull()
                t.column("finishedAt", .datetime)
            }
            try db.create(table: "reprocessItem") { t in
                t.column("runKey", .text).notNull().references("reprocessRun", onDelete: .cascade)
                t.column("itemId", .text).notNull()
                t.column("done", .boolean).notNull().defaults(to: false)
                t.primaryKey(["runKey", "itemId"])
            }
            try db.create(table: "report") { t in
                t.primaryKey("reportId", .text)
                t.column("messageId", .text).notNull().indexed()
                t.column("category", .text).notNull()
                t.column("description", .text)
                t.column("reporterUserId", .text)
                t.column("createdAt", .datetime).notNull()
            }
        }
        migrator.registerMigration("v5-rate-limits") { db in
            try db.create(table: "rateLimit") { t in
                t.column("key", .text).notNull()
                t.column("windowStart", .integer).notNull()
                t.column("count", .integer).notNull()
                t.primaryKey(["key", "windowStart"])
            }
        }
        migrator.registerMigration("v6-metrics-snapshots") { db in
            try db.create(table: "metricsSnapshot") { t in
                t.primaryKey("source", .text)
                t.column("body", .text).notNull()
                t.column("updatedAt", .datetime).notNull()
            }
        }
        return migrator
    }

    // MARK: - Writes

    /// Records that processing of an upload started: creates the item as `pending` or bumps its attempts.
    /// Returns the item as it now stands.
    @discardableResult
    public func markReceived(id: String, kind: ItemKind, userId: String, contentHash: String?, sourceBytes: Int?,
                             at now: Date = Date()) throws(StoreError) -> Item {
        try write("mark \(id) received") { db in
            if var row = try ItemRow.fetchOne(db, key: id) {
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

    /// Stores a verdict for an item (insert or replace) and appends a `verdict` event, in one transaction.
    public func recordVerdict(_ item: Item, stage: String? = nil, detail: String? = nil) throws(StoreError) {
        try write("record verdict for \(item.id)") { db in
            let previous = try ItemRow.fetchOne(db, key: item.id)
            var updated = item
            if let previous {
                updated.createdAt = previous.createdAt
                updated.attempts = max(previous.attempts, item.attempts)
            }
            try ItemRow(updated).save(db)
            try EventRow(ItemEvent(itemId: item.id, at: item.updatedAt, type: "verdict", fromStatus: previous?.status,
                                   toStatus: item.status, stage: stage, detail: detail ?? item.reason)).insert(db)
        }
    }

    /// Stores many verdicts in one transaction (text queues, reprocessing): each insert or replace appends
    /// a `verdict` event. Returns how many were written.
    @discardableResult
    public func recordVerdicts(_ items: [Item], stage: String) throws(StoreError) -> Int {
        if items.isEmpty { return 0 }
        return try write("record \(items.count) verdicts") { db in
            for item in items {
                let previous = try ItemRow.fetchOne(db, key: item.id)
                var updated = item
                if let previous {
                    updated.createdAt = previous.createdAt
                    updated.attempts = previous.attempts + 1
                }
                try ItemRow(updated).save(db)
                try EventRow(ItemEvent(itemId: item.id, at: item.updatedAt, type: "verdict", fromStatus: previous?.status,
                                       toStatus: item.status, stage: stage, detail: item.reason)).insert(db)
            }
            return items.count
        }
    }

    /// Content hash and status of each id that exists, for idempotent ingest.
    public func contentHashes(ids: [String]) throws(StoreError) -> [String: (hash: String?, status: ItemStatus)] {
        if ids.isEmpty { return [:] }
        return try read("look up \(ids.count) items") { db in
            var result: [String: (hash: String?, status: ItemStatus)] = [:]
            for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
                let rows = try Row.fetchAll(db, sql: "SELECT id, contentHash, status FROM item WHERE id IN (\(chunk.map { _ in "?" }.joined(separator: ",")))",
                                            arguments: StatementArguments(chunk))
                for row in rows {
                    if let status = ItemStatus(rawValue: row["status"]) { result[row["id"]] = (row["contentHash"], status) }
                }
            }
            return result
        }
    }

    /// Appends an event without changing the item (e.g. the pending file was finalised).
    public func appendEvent(_ event: ItemEvent) throws(StoreError) {
        try write("append event to \(event.itemId)") { db in try EventRow(event).insert(db) }
    }

    // MARK: - Reads

    public func item(id: String) throws(StoreError) -> Item? {
        try read("read item \(id)") { db in try ItemRow.fetchOne(db, key: id)?.item }
    }

    /// Items, newest first, optionally filtered by status and kind.
    public func items(status: ItemStatus? = nil, kind: ItemKind? = nil, limit: Int? = nil) throws(StoreError) -> [Item] {
        try read("list items") { db in
            var request = ItemRow.all()
            if let status { request = request.filter(Column("status") == status.rawValue) }
            if let kind { request = request.filter(Column("kind") == kind.rawValue) }
            request = request.order(Column("updatedAt").desc, Column("id"))
            if let limit { request = request.limit(limit) }
            return try request.fetchAll(db).map(\.item)
        }
    }

    public func events(itemId: String) throws(StoreError) -> [ItemEvent] {
        try read("read events of \(itemId)") { db in
            try EventRow.filter(Column("itemId") == itemId).order(Column("seq")).fetchAll(db).map(\.event)
        }
    }

    /// Count of items per status (all kinds).
    public func countsByStatus() throws(StoreError) -> [ItemStatus: Int] {
        try read("count items") { db in
            let rows = try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS n FROM item GROUP BY status")
            var counts: [ItemStatus: Int] = [:]
            for row in rows {
                if let status = ItemStatus(rawValue: row["status"]) { counts[status] = row["n"] }
            }
            return counts
        }
    }

    // MARK: - Plumbing

    func write<T>(_ operation: String, _ body: @escaping @Sendable (Database) throws -> T) throws(StoreError) -> T {
        do { return try writer.write(body) } catch { throw StoreError(operation: operation, underlying: error) }
    }

    func write<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do { return try await writer.write(body) } catch { throw StoreError(operation: operation, underlying: error) }
    }

    func read<T>(_ operation: String, _ body: @escaping @Sendable (Database) throws -> T) throws(StoreError) -> T {
        do { return try writer.read(body) } catch { throw StoreError(operation: operation, underlying: error) }
    }
}

/// A store operation that failed, naming the operation.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var message: String

    init(operation: String, underlying: any Error) {
        self.operation = operation
        self.message = String(describing: underlying)
    }

    init(operation: String, message: String) {
        self.operation = operation
        self.message = message
    }

    public var description: String { "store: cannot \(operation): \(message)" }
}
