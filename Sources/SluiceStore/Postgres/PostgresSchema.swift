import Foundation
import PostgresNIO
import SluiceCore

/// PostgreSQL's schema as numbered migrations. A migration is a list of statements (one per entry: the extended
/// protocol runs one statement at a time) applied in one transaction together with its row in `sluiceMigration`.
/// Every process that opens the store takes one transaction-scoped advisory lock (keyed by the schema it works in)
/// before reading which migrations are applied, so processes that start together migrate one at a time.
enum PostgresSchema {
    struct Migration: Sendable {
        var version: Int
        var name: String
        var statements: [String]
    }

    /// Every migration this build knows, in order. Append; never edit one that has shipped.
    static var migrations: [Migration] {
        [
            Migration(version: 1, name: "items-events-reports-limits",
                      statements: items + console + outbox + relations + banks + threads),
            Migration(version: 2, name: "work-leases", statements: [
                "CREATE TABLE workLease (unit TEXT PRIMARY KEY, owner TEXT NOT NULL, until TIMESTAMPTZ NOT NULL)",
                "CREATE INDEX workLeaseOwner ON workLease (owner)",
            ]),
            Migration(version: 3, name: "reprocess-batches", statements: [
                "ALTER TABLE reprocessItem ADD COLUMN batch BIGINT NOT NULL DEFAULT 0",
                "CREATE INDEX reprocessItemBatch ON reprocessItem (runKey, batch)",
            ]),
            // The conversation rules read every distinct window of a counter family (a sender's duplicate texts) at once.
            Migration(version: 4, name: "distinct-counter-families", statements: [
                #"CREATE INDEX spamDistinctFamily ON spamDistinct (windowStart, key COLLATE "C")"#,
            ]),
        ]
    }

    /// Serialises migrations of one schema across processes (the lock ends with the transaction).
    private static let lockQuery: PostgresQuery = "SELECT pg_advisory_xact_lock(hashtext('sluice-migrate:' || current_schema()))"

    /// `schema`: the schema the URL names, created when missing (its name is checked to be letters, digits and _).
    static func migrate(_ store: PostgresStore, schema: String?) async throws(StoreError) {
        let logger = store.logger
        try await store.transaction("migrate the PostgreSQL store") { connection in
            if let schema {
                guard !schema.isEmpty, schema.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
                    throw StoreError(operation: "create schema \(schema)", message: "a schema name is letters, digits and _")
                }
                try await connection.run("SELECT pg_advisory_xact_lock(hashtext('sluice-schema:' || \(schema)))", logger: logger)
                try await connection.run(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"), logger: logger)
            }
            try await connection.run(lockQuery, logger: logger)
            try await connection.run("""
                CREATE TABLE IF NOT EXISTS sluiceMigration (
                    version INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    appliedAt TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var applied = Set<Int>()
            for try await version in try await connection.query("SELECT version FROM sluiceMigration", logger: logger).decode(Int.self) {
                applied.insert(version)
            }
            let known = Set(migrations.map(\.version))
            if let newer = applied.subtracting(known).max() {
                throw StoreError(operation: "migrate the PostgreSQL store",
                                 message: "it has migration \(newer), which this build of sluice does not know; upgrade sluice")
            }
            for migration in migrations where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.run("INSERT INTO sluiceMigration (version, name) VALUES (\(migration.version), \(migration.name))",
                                         logger: logger)
                logger.info("applied PostgreSQL migration \(migration.version) (\(migration.name))")
            }
        }
    }

    /// A read-only store cannot migrate: it must find every migration this build knows applied.
    static func requireMigrated(_ store: PostgresStore) async throws(StoreError) {
        let operation = "open the PostgreSQL store read-only"
        let rows = try await store.rows(operation, "SELECT to_regclass('sluiceMigration') IS NOT NULL")
        let exists: Bool
        do { exists = try rows.first?.decode(Bool.self) ?? false } catch { throw PostgresStore.storeError(operation, error) }
        var applied = Set<Int>()
        if exists {
            for row in try await store.rows(operation, "SELECT version FROM sluiceMigration") {
                do { applied.insert(try row.decode(Int.self)) } catch { throw PostgresStore.storeError(operation, error) }
            }
        }
        guard Set(migrations.map(\.version)).isSubset(of: applied) else {
            throw StoreError(operation: operation, message: "it needs migrating; run sluice once without --dry-run")
        }
    }

    /// Items (dates as whole milliseconds, `BIGINT`: items travel as JSON), their events, reprocess runs, reports,
    /// rate-limit windows and metrics snapshots.
    static let items: [String] = [
        """
        CREATE TABLE item (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            userId TEXT NOT NULL,
            status TEXT NOT NULL,
            reason TEXT,
            provider TEXT,
            adult TEXT, spoof TEXT, medical TEXT, violence TEXT, racy TEXT,
            exifHadGPS BOOLEAN, exifMake TEXT, exifModel TEXT, exifOrientation INTEGER,
            approvedPath TEXT, approvedBytes BIGINT, thumbnailPath TEXT, thumbnailBytes BIGINT, originalPath TEXT,
            format TEXT, width INTEGER, height INTEGER, sourceBytes BIGINT, contentHash TEXT,
            decodeMs DOUBLE PRECISION, classifyMs DOUBLE PRECISION, writeMs DOUBLE PRECISION, totalMs DOUBLE PRECISION,
            attempts INTEGER NOT NULL DEFAULT 0,
            createdAt BIGINT NOT NULL,
            updatedAt BIGINT NOT NULL,
            text TEXT, textContext TEXT, textKind TEXT, textSource TEXT, textVerdict TEXT,
            priority TEXT, caption TEXT, captionText TEXT,
            reviewedBy TEXT, reviewedAt BIGINT, reviewNote TEXT, reviewedStatus TEXT,
            recipientId TEXT, conversationId TEXT, conversation TEXT,
            pdqHash TEXT, pdqQuality INTEGER, bankMatch TEXT, reusedFrom TEXT,
            sentAt BIGINT, members TEXT
        )
        """,
        "CREATE INDEX itemKind ON item (kind)",
        "CREATE INDEX itemUser ON item (userId)",
        "CREATE INDEX itemStatus ON item (status)",
        "CREATE INDEX itemUpdated ON item (updatedAt)",
        "CREATE INDEX itemApprovedPDQ ON item (status, updatedAt) WHERE pdqHash IS NOT NULL",
        """
        CREATE TABLE event (
            seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            itemId TEXT NOT NULL REFERENCES item (id) ON DELETE CASCADE,
            at TIMESTAMPTZ NOT NULL,
            type TEXT NOT NULL,
            fromStatus TEXT,
            toStatus TEXT,
            stage TEXT,
            detail TEXT
        )
        """,
        "CREATE INDEX eventItem ON event (itemId)",
        """
        CREATE TABLE reprocessRun (
            runKey TEXT PRIMARY KEY,
            arguments TEXT NOT NULL,
            state TEXT NOT NULL,
            startedAt TIMESTAMPTZ NOT NULL,
            finishedAt TIMESTAMPTZ
        )
        """,
        """
        CREATE TABLE reprocessItem (
            runKey TEXT NOT NULL REFERENCES reprocessRun (runKey) ON DELETE CASCADE,
            itemId TEXT NOT NULL,
            done BOOLEAN NOT NULL DEFAULT false,
            PRIMARY KEY (runKey, itemId)
        )
        """,
        """
        CREATE TABLE report (
            reportId TEXT PRIMARY KEY,
            messageId TEXT NOT NULL,
            category TEXT NOT NULL,
            description TEXT,
            reporterUserId TEXT,
            createdAt TIMESTAMPTZ NOT NULL,
            status TEXT NOT NULL DEFAULT 'open',
            resolvedBy TEXT,
            resolvedAt TIMESTAMPTZ,
            resolutionNote TEXT,
            target TEXT NOT NULL DEFAULT 'item'
        )
        """,
        "CREATE INDEX reportMessage ON report (messageId)",
        """
        CREATE TABLE rateLimit (
            key TEXT NOT NULL,
            windowStart BIGINT NOT NULL,
            count BIGINT NOT NULL,
            PRIMARY KEY (key, windowStart)
        )
        """,
        """
        CREATE TABLE metricsSnapshot (
            source TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            updatedAt TIMESTAMPTZ NOT NULL
        )
        """,
    ]
}

/// Feeds that readers follow by sequence number (`event`, `relationChange`, `bankHash`, `erasure`). Identity values
/// are handed out when a row is inserted, not when its transaction commits, so two writers could commit seq 8 after a
/// reader has already moved past 9. Every transaction that appends to a feed first takes that feed's advisory lock,
/// held to its commit: appends to one feed commit in seq order, and a cursor never skips a row. The lock is keyed by
/// the schema too, so deployments sharing one database (a schema each) do not wait for each other.
enum FeedLock: Int32 {
    case events = 7_301
    case relations = 7_302
    case banks = 7_303
    case erasures = 7_304
    /// Not a feed's: erasing a user's relations takes it alone and writing the conversation rules' counts shared, so
    /// counts made before a daemon heard of an erasure are either erased with the rest or left out of the write.
    case userErasure = 7_305
}

extension PostgresConnection {
    /// Takes `feed`'s advisory lock to the transaction's end; `shared`: beside other shared holders, not beside the
    /// one who takes it alone.
    func lock(_ feed: FeedLock, shared: Bool = false, logger: Logger) async throws {
        if shared {
            try await run("SELECT pg_advisory_xact_lock_shared(hashtext('sluice-feed:' || current_schema()), \(feed.rawValue))", logger: logger)
        } else {
            try await run("SELECT pg_advisory_xact_lock(hashtext('sluice-feed:' || current_schema()), \(feed.rawValue))", logger: logger)
        }
    }
}
