#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import GRDBSQLite
import SluiceCore

/// The status store in SQLite (WAL) through GRDB: the zero-setup backend for one machine. Many processes may
/// read while one daemon writes. GRDB stays inside this module; callers see `StatusStore`.
public struct SQLiteStore: StatusStore {
    private let writer: any DatabaseWriter
    /// Checkpoints the log of a store file beside its writer (nil in memory and read-only).
    private let checkpointer: WALCheckpointer?
    /// A read-only connection of its own for `readNow` (nil where the writer is a `DatabaseQueue`: in memory and
    /// read-only, whose synchronous reads need nothing else to go on).
    private let nowReader: DatabaseQueue?

    /// Opens (creating if needed) the store file in WAL mode and migrates it. `readOnly` opens an existing
    /// store without ever writing to it (dry runs): it must already be migrated.
    public init(path: URL, readOnly: Bool = false) throws(StoreError) {
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let checkpointer = readOnly ? nil : WALCheckpointer(path: path.path)
            self.checkpointer = checkpointer
            configuration.prepareDatabase { db in
                Self.persistLog(db)
                if !db.configuration.readonly {
                    // The log is checkpointed on a connection of its own, not in the writer's commits.
                    checkpointer?.install(on: db)
                    try db.execute(sql: "PRAGMA synchronous = NORMAL")
                    // The writer's statement journals stay in memory. A statement that writes several rows (a text
                    // batch writes 25 items a statement) keeps the pages it changes so it can undo itself; past
                    // 64 KiB SQLite spilled that to a temporary file, and a text queue's ingest wrote ~5 times as
                    // many bytes to such files as to the store itself (560 MB for 100,000 lines). Readers keep
                    // SQLite's default, so a large sort still spills to disk.
                    try db.execute(sql: "PRAGMA temp_store = MEMORY")
                    // The writer's page cache holds 32 MiB instead of SQLite's 2 MB: an API process's rate-limit exchange
                    // updates thousands of windows scattered over the table every 100 ms, and a text batch inserts into
                    // indexes of random keys; with 2 MB their pages were evicted and read back within the same
                    // transaction (an exchange's SQLite time fell by about a fifth). Readers keep the default.
                    try db.execute(sql: "PRAGMA cache_size = -32768")
                }
            }
            if readOnly {
                configuration.readonly = true
                let queue = try DatabaseQueue(path: path.path, configuration: configuration)
                if try !queue.read({ try Self.migrator.hasCompletedMigrations($0) }) {
                    throw StoreError(operation: "open store at \(path.path) read-only", message: "it needs migrating; run sluice once without --dry-run")
                }
                writer = queue
                nowReader = nil
                return
            }
            try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
            writer = try Self.withOpeningLock(beside: path) { () throws -> DatabasePool in
                let pool = try DatabasePool(path: path.path, configuration: configuration)
                try Self.migrator.migrate(pool)
                return pool
            }
            var reading = configuration
            reading.readonly = true
            nowReader = try DatabaseQueue(path: path.path, configuration: reading)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(operation: "open store at \(path.path)", underlying: error)
        }
    }

    /// Several processes share the store (daemon, API, CLI). Without this, a process that exits as the last connection
    /// it can see deletes -wal/-shm while another still uses them, and that one then reads a stale snapshot forever.
    static func persistLog(_ db: Database) {
        var persist: Int32 = 1
        sqlite3_file_control(db.sqliteConnection, nil, SQLITE_FCNTL_PERSIST_WAL, &persist)
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
    public static func inMemory() throws(StoreError) -> SQLiteStore {
        do {
            let queue = try DatabaseQueue()
            try migrator.migrate(queue)
            return SQLiteStore(writer: queue)
        } catch {
            throw StoreError(operation: "open in-memory store", underlying: error)
        }
    }

    init(writer: any DatabaseWriter) {
        self.writer = writer
        checkpointer = nil
        nowReader = nil
    }

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
        migrator.registerMigration("v7-human-decisions") { db in
            // What the person decided; earlier decisions are read from the status they left.
            try db.alter(table: "item") { t in t.add(column: "reviewedStatus", .text) }
            try db.execute(sql: "UPDATE item SET reviewedStatus = status WHERE reviewedBy IS NOT NULL AND status IN ('approved', 'blocked')")
        }
        migrator.registerMigration("v8-erasure-and-webhooks") { db in
            try db.create(table: "erasure") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("itemId", .text).notNull().indexed()
                t.column("kind", .text).notNull()
                t.column("userId", .text).notNull().indexed()
                t.column("contentHash", .text)
                t.column("erasedBy", .text).notNull()
                t.column("reason", .text).notNull()
                t.column("erasedAt", .datetime).notNull()
            }
            try db.create(table: "webhookCursor") { t in
                t.primaryKey("webhook", .text)
                t.column("eventSeq", .integer).notNull()
                t.column("erasureSeq", .integer).notNull()
            }
            try db.create(table: "webhookDelivery") { t in
                t.primaryKey("id", .text)
                t.column("webhook", .text).notNull()
                t.column("event", .text).notNull()
                t.column("payload", .text).notNull()
                t.column("state", .text).notNull()
                t.column("attempts", .integer).notNull()
                t.column("nextAttemptAt", .datetime).notNull()
                t.column("lastError", .text)
                t.column("createdAt", .datetime).notNull()
                t.column("deliveredAt", .datetime)
            }
            try db.create(index: "webhookDeliveryDue", on: "webhookDelivery", columns: ["state", "nextAttemptAt"])
        }
        migrator.registerMigration("v9-review-console") { db in
            try db.create(table: "reviewer") { t in
                t.primaryKey("name", .text)
                t.column("role", .text).notNull()
                t.column("passwordHash", .text).notNull()
                t.column("disabled", .boolean).notNull().defaults(to: false)
                t.column("unblurAll", .boolean).notNull().defaults(to: false)
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "keyValue") { t in
                t.primaryKey("key", .text)
                t.column("value", .blob).notNull()
                t.column("expiresAt", .datetime)
            }
            try db.create(table: "reviewClaim") { t in
                t.primaryKey("itemId", .text)
                t.column("reviewer", .text).notNull()
                t.column("until", .datetime).notNull()
            }
            try db.create(table: "escalation") { t in
                t.primaryKey("itemId", .text).references("item", onDelete: .cascade)
                t.column("by", .text).notNull()
                t.column("note", .text)
                t.column("at", .datetime).notNull()
            }
            try db.create(table: "auditSample") { t in
                t.primaryKey("itemId", .text).references("item", onDelete: .cascade)
                t.column("sampledAt", .datetime).notNull()
                t.column("auditedBy", .text)
                t.column("auditedAt", .datetime)
                t.column("agreed", .boolean)
            }
            try db.create(table: "appeal") { t in
                t.primaryKey("itemId", .text).references("item", onDelete: .cascade)
                t.column("userId", .text).notNull()
                t.column("message", .text).notNull()
                t.column("at", .datetime).notNull()
            }
            try db.alter(table: "report") { t in
                t.add(column: "status", .text).notNull().defaults(to: "open")
                t.add(column: "resolvedBy", .text)
                t.add(column: "resolvedAt", .datetime)
                t.add(column: "resolutionNote", .text)
                t.add(column: "target", .text).notNull().defaults(to: "item")
            }
        }
        migrator.registerMigration("v10-relations-and-spam") { db in
            try db.create(table: "relationUser") { t in
                t.primaryKey("userId", .text)
                t.column("messagePrivacy", .text).notNull().defaults(to: "followers")
                t.column("createdAt", .datetime)
                t.column("trusted", .boolean).notNull().defaults(to: false)
            }
            try db.create(table: "follow") { t in
                t.column("follower", .text).notNull()
                t.column("followee", .text).notNull()
                t.column("at", .datetime).notNull()
                t.primaryKey(["follower", "followee"])
            }
            try db.create(table: "block") { t in
                t.column("blocker", .text).notNull()
                t.column("blocked", .text).notNull().indexed()
                t.column("at", .datetime).notNull()
                t.primaryKey(["blocker", "blocked"])
            }
            try db.create(table: "relationChange") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("kind", .text).notNull()
                t.column("actor", .text).notNull().indexed()
                t.column("subject", .text).notNull().indexed()
                t.column("at", .datetime).notNull()
            }
            try db.create(table: "messageRequest") { t in
                t.column("sender", .text).notNull()
                t.column("recipient", .text).notNull()
                t.column("itemId", .text).notNull()
                t.primaryKey(["sender", "recipient", "itemId"])
            }
            try db.create(table: "spamCounter") { t in
                t.column("key", .text).notNull()
                t.column("windowStart", .integer).notNull()
                t.column("count", .integer).notNull()
                t.primaryKey(["key", "windowStart"])
            }
            try db.create(table: "spamDistinct") { t in
                t.column("key", .text).notNull()
                t.column("windowStart", .integer).notNull()
                t.column("member", .text).notNull()
                t.primaryKey(["key", "windowStart", "member"])
            }
            try db.alter(table: "item") { t in
                t.add(column: "recipientId", .text)
                t.add(column: "conversationId", .text)
                t.add(column: "conversation", .text)
            }
        }
        migrator.registerMigration("v11-pdq-hash-banks") { db in
            try db.alter(table: "item") { t in
                t.add(column: "pdqHash", .text)
                t.add(column: "pdqQuality", .integer)
                t.add(column: "bankMatch", .text)
                t.add(column: "reusedFrom", .text)
            }
            try db.create(index: "itemApprovedPDQ", on: "item", columns: ["status", "updatedAt"], condition: Column("pdqHash") != nil)
            try db.create(table: "hashBank") { t in
                t.primaryKey("name", .text)
                t.column("action", .text).notNull()
                t.column("threshold", .integer).notNull()
                t.column("enabled", .boolean).notNull().defaults(to: true)
                t.column("createdAt", .datetime).notNull()
            }
            try db.create(table: "bankHash") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("bank", .text).notNull().references("hashBank", onDelete: .cascade)
                t.column("hash", .text).notNull()
                t.column("itemId", .text)
                t.column("note", .text)
                t.column("addedAt", .datetime).notNull()
                t.uniqueKey(["bank", "hash"])
            }
            try db.create(table: "bankHashStanding") { t in
                t.column("bank", .text).notNull().references("hashBank", onDelete: .cascade)
                t.column("hash", .text).notNull()
                t.column("state", .text).notNull()
                t.column("at", .datetime).notNull()
                t.column("detail", .text)
                t.primaryKey(["bank", "hash"])
            }
            // Bumped by every bank change other than appended hashes, so matchers know when to rebuild.
            try db.create(table: "bankRevision") { t in
                t.primaryKey("id", .integer)
                t.column("revision", .integer).notNull()
            }
            try db.execute(sql: "INSERT INTO bankRevision (id, revision) VALUES (1, 0)")
        }
        migrator.registerMigration("v12-threads") { db in
            try Self.createThreadTables(db)
        }
        migrator.registerMigration("v13-work-leases") { db in
            try db.create(table: "workLease") { t in
                t.primaryKey("unit", .text)
                t.column("owner", .text).notNull().indexed()
                t.column("until", .datetime).notNull()
            }
        }
        migrator.registerMigration("v14-reprocess-batches") { db in
            try db.alter(table: "reprocessItem") { t in t.add(column: "batch", .integer).notNull().defaults(to: 0) }
            try db.create(index: "reprocessItemBatch", on: "reprocessItem", columns: ["runKey", "batch"])
        }
        migrator.registerMigration("v15-counters-keyed-by-window") { db in
            // The windowed counters in one B-tree each, keyed by their primary key, instead of a rowid table and its
            // key index: an API process's rate-limit exchange updates thousands of windows scattered over its table
            // every 100 ms, and a daemon's conversation ledger the spam counters of every sender in a batch; each
            // update changed a page of both (the exchange's SQL costs about half as much per window).
            for (table, columns) in [("rateLimit", ["key", "windowStart", "count"]), ("spamCounter", ["key", "windowStart", "count"]),
                                     ("spamDistinct", ["key", "windowStart", "member"])] {
                try db.create(table: table + "ByWindow", options: [.withoutRowID]) { t in
                    t.column("key", .text).notNull()
                    t.column("windowStart", .integer).notNull()
                    if columns[2] == "count" {
                        t.column("count", .integer).notNull()
                        t.primaryKey(["key", "windowStart"])
                    } else {
                        t.column("member", .text).notNull()
                        t.primaryKey(["key", "windowStart", "member"])
                    }
                }
                let list = columns.joined(separator: ", ")
                try db.execute(sql: """
                    INSERT INTO \(table)ByWindow (\(list)) SELECT \(list) FROM \(table);
                    DROP TABLE \(table);
                    ALTER TABLE \(table)ByWindow RENAME TO \(table);
                    """)
            }
        }
        return migrator
    }

    // MARK: - Plumbing

    /// A write transaction on GRDB's writer queue: the caller's thread is never blocked on SQLite.
    func write<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do { return try await writer.write(body) } catch { throw StoreError(operation: operation, underlying: error) }
    }

    /// A read on one of the pool's reader connections (WAL: readers never wait for the writer).
    func read<T: Sendable>(_ operation: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do { return try await writer.read(body) } catch { throw StoreError(operation: operation, underlying: error) }
    }

    /// A short read on the calling thread rather than handed to a reader queue and resumed: for the reads the
    /// conversation rules' judging waits on (indexed rows: a pair's relations, a window turn's counters), where that
    /// hand-over and resumption on two busy cores took most of the read's time. It runs on a read-only connection of
    /// its own, never on the pool's readers: a blocked thread waiting for one of them could wait for good, since the
    /// async reads holding them give them back only once they resume on Swift's pool, whose threads (one per core)
    /// could all be waiting here. Two at once take turns on that connection, each finishing on its own thread. It
    /// blocks its thread for the read and does not see cancellation; only the daemon's rules call the two methods that
    /// use it (`sluice serve` runs on NIO's event loops, where nothing may block, and never does).
    func readNow<T>(_ operation: String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            if let nowReader { return try nowReader.read(body) }
            return try writer.read(body)
        } catch {
            throw StoreError(operation: operation, underlying: error)
        }
    }

    /// `?, ?, …` for an `IN (…)` list.
    static func placeholders(_ count: Int) -> String {
        CounterStatements.repeated("?", count, separator: ",")
    }
}
