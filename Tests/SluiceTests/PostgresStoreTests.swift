import Foundation
import SluiceCore
@testable import SluiceStore
import SluiceTesting
import Synchronization
import Testing

/// What only the PostgreSQL backend has: opening by many processes at once, read-only sessions, the server's own
/// error messages. The shared contract is in `StoreContractTests`.
@Suite(.enabled(if: StoreBackend.postgresURL != nil, "SLUICE_TEST_POSTGRES_URL is not set"))
struct PostgresStoreTests {
    /// CI sets `SLUICE_REQUIRE_POSTGRES`: there the PostgreSQL tests must run, never be skipped quietly.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SLUICE_REQUIRE_POSTGRES"] == "1"))
    func postgresIsReachableWhereRequired() async throws {
        let store = try await StoreBackend.postgresStore()
        #expect(try await store.countsByStatus().isEmpty)
        await store.close()
    }

    static func location(schema: String = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")) throws -> PostgresLocation {
        var location = try PostgresLocation(url: try #require(StoreBackend.postgresURL))
        location.schema = schema
        location.maxConnections = 2
        return location
    }

    /// Daemons and API servers started together: every open succeeds and each migration is applied once.
    @Test func manyOpenersOfANewSchemaMigrateOnce() async throws {
        let location = try Self.location()
        let stores = try await withThrowingTaskGroup(of: PostgresStore.self, returning: [PostgresStore].self) { group in
            for _ in 0..<6 { group.addTask { try await PostgresStore(location, password: nil) } }
            var stores: [PostgresStore] = []
            for try await store in group { stores.append(store) }
            return stores
        }
        let versions = try await stores[0].rows("read migrations", "SELECT version FROM sluiceMigration ORDER BY version")
            .map { try $0.decode(Int.self) }
        #expect(versions == PostgresSchema.migrations.map(\.version))
        for store in stores { await store.close() }
    }

    /// A dry run never writes: a schema nobody migrated is refused, and a migrated one is read but not written.
    @Test func readOnlyStoresNeitherMigrateNorWrite() async throws {
        let location = try Self.location()
        do {
            _ = try await PostgresStore(location, password: nil, readOnly: true)
            Issue.record("a read-only store opened an unmigrated schema")
        } catch {
            #expect(error.message.contains("needs migrating"), "\(error)")
        }
        let writer = try await PostgresStore(location, password: nil)
        try await writer.recordVerdict(StoreContractTests.text("t1"), stage: "text", detail: nil)
        let reader = try await PostgresStore(location, password: nil, readOnly: true)
        #expect(try await reader.item("t1") == StoreContractTests.text("t1"))
        do {
            try await reader.recordVerdict(StoreContractTests.text("t2"), stage: "text", detail: nil)
            Issue.record("a read-only store wrote")
        } catch {
            #expect(error.message.contains("read-only transaction"), "\(error)")
        }
        await reader.close()
        await writer.close()
    }

    /// Two transactions that lock the same rows in opposite orders (as a thread answer being cached and a verdict
    /// batch blocking one of its messages can): PostgreSQL ends one as the deadlock victim, and the store runs it
    /// again instead of failing the caller, so both take effect, once each.
    @Test func aDeadlockVictimIsRunAgain() async throws {
        let store = try await PostgresStore(try Self.location(), password: nil)
        try await store.execute("probe table", "CREATE TABLE deadlockProbe (id INT PRIMARY KEY, hits INT NOT NULL)")
        try await store.execute("probe rows", "INSERT INTO deadlockProbe VALUES (1, 0), (2, 0)")
        final class Runs: Sendable {
            let count = Mutex(0)
            /// Transactions holding their first row; each waits until both do, so the deadlock does not depend on
            /// timing (a run again passes at once).
            let holdingFirst = Mutex(0)
        }
        let runs = Runs()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (first, second) in [(1, 2), (2, 1)] {
                group.addTask {
                    try await store.transaction("probe \(first) then \(second)") { connection in
                        runs.count.withLock { $0 += 1 }
                        try await connection.run("UPDATE deadlockProbe SET hits = hits + 1 WHERE id = \(first)", logger: store.logger)
                        runs.holdingFirst.withLock { $0 += 1 }
                        let deadline = ContinuousClock.now + .seconds(60)
                        while runs.holdingFirst.withLock({ $0 }) < 2, ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(5))
                        }
                        try await connection.run("UPDATE deadlockProbe SET hits = hits + 1 WHERE id = \(second)", logger: store.logger)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(runs.count.withLock { $0 } == 3, "one of the two was ended as a deadlock victim and run again")
        let hits = try await store.rows("read probe", "SELECT hits FROM deadlockProbe ORDER BY id").map { try $0.decode(Int.self) }
        #expect(hits == [2, 2])
        await store.close()
    }

    /// Two deployments in one database, a schema each: one holding its event feed's lock (an append not yet
    /// committed) does not hold up the other's appends, which a lock keyed by the feed alone did.
    @Test func feedLocksAreKeyedBySchema() async throws {
        let first = try await PostgresStore(try Self.location(), password: nil)
        let second = try await PostgresStore(try Self.location(), password: nil)
        final class Done: Sendable {
            let flag = Mutex(false)
        }
        let done = Done()
        try await first.transaction("hold the event feed") { connection in
            try await connection.lock(.events, logger: first.logger)
            // Not awaited here: if it waited for this lock, awaiting it inside this transaction would never end.
            Task {
                try await second.recordVerdict(StoreContractTests.text("t1"), stage: "text", detail: nil)
                done.flag.withLock { $0 = true }
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while !done.flag.withLock({ $0 }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        #expect(done.flag.withLock { $0 }, "the other schema's append waited for this schema's feed lock")
        #expect(try await second.item("t1") == StoreContractTests.text("t1"))
        await first.close()
        await second.close()
    }

    /// A store PostgreSQL refuses names what PostgreSQL said, not postgres-nio's generic text.
    @Test func errorsCarryTheServersMessage() async throws {
        var location = try Self.location()
        location.database = "no_such_database_here"
        do {
            _ = try await PostgresStore(location, password: nil)
            Issue.record("opened a database that does not exist")
        } catch {
            #expect(error.description.contains("no_such_database_here") && error.description.contains("does not exist"), "\(error)")
        }
    }

    /// A newer sluice migrated this schema: an older build refuses it instead of writing rows it does not understand.
    @Test func aSchemaFromANewerBuildIsRefused() async throws {
        let location = try Self.location()
        let store = try await PostgresStore(location, password: nil)
        try await store.execute("pretend a newer build", "INSERT INTO sluiceMigration (version, name) VALUES (9999, 'from the future')")
        do {
            _ = try await PostgresStore(location, password: nil)
            Issue.record("opened a schema with an unknown migration")
        } catch {
            #expect(error.message.contains("migration 9999") && error.message.contains("upgrade sluice"), "\(error)")
        }
        await store.close()
    }
}

/// `sluice store migrate`: a SQLite store filled the way the daemon, the API and the console fill it is copied into
/// a new PostgreSQL schema, every table's count matches and what callers read back is the same.
@Suite(.enabled(if: StoreBackend.postgresURL != nil, "SLUICE_TEST_POSTGRES_URL is not set"))
struct StoreMigrationTests {
    @Test func sqliteStoreCopiesIntoPostgreSQLAndReadsTheSame() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-migrate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("sluice.sqlite")
        let source = try SQLiteStore(path: path)
        let t0 = StoreContractTests.t0
        var threaded = StoreContractTests.text("t-thread")
        threaded.content?.conversationId = "c-1"
        threaded.content?.recipientId = "bob"
        let items = [StoreContractTests.image("u/a"), StoreContractTests.image("u/b", status: .review), StoreContractTests.text("t1"),
                     threaded, StoreContractTests.text("gone")]
        for item in items { try await source.recordVerdict(item, stage: "policy", detail: nil) }
        _ = try await source.eraseItems(["gone"], by: "admin", reason: "user asked", at: t0)
        try await source.recordReport(Report(reportId: "r1", messageId: "t1", category: "spam", description: "x", reporterUserId: "bob",
                                             createdAt: t0))
        _ = try await source.consumeRateLimit(key: "text:bob", limit: 5, windowSeconds: 60, now: t0)
        _ = try await source.addReviewer(Reviewer(name: "dana", role: .admin, passwordHash: "$2b$12$hash", createdAt: t0))
        _ = try await source.putValue(Data([0, 1, 2, 255]), key: "session:1", expiresAt: t0.addingTimeInterval(3600), onlyIfAbsent: false, now: t0)
        _ = try await source.applyRelationChange(RelationChange(kind: .block, actor: "bob", subject: "eve", at: t0), profile: nil)
        _ = try await source.createBank(HashBank(name: "known", action: .block, createdAt: t0))
        let hash = try #require(PDQHash(hex: String(repeating: "ab", count: 32)))
        _ = try await source.addBankEntries([BankEntry(bank: "known", hash: hash, note: "from a list", addedAt: t0)])

        var location = try PostgresLocation(url: try #require(StoreBackend.postgresURL))
        location.schema = "m_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }
        let target = location.url
        let run = try await shell(TestEnvironment.sluiceBinary, ["store", "migrate", "--from", "sqlite:\(path.path)", "--to", target, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: String]])
        #expect(counts.first?["table"] == "item" && counts.first?["target"] == "4")
        #expect(counts.allSatisfy { $0["source"] == $0["target"] }, "\(counts)")

        let copy = try await PostgresStore(location, password: nil)
        for item in items.dropLast() {
            #expect(try await copy.item(item.id) == item, "\(item.id)")
            #expect(try await copy.events(of: item.id) == source.events(of: item.id), "events of \(item.id)")
        }
        #expect(try await copy.item("gone") == nil)
        #expect(try await copy.tombstones(userId: nil) == source.tombstones(userId: nil))
        #expect(try await copy.reports() == source.reports())
        #expect(try await copy.rateLimit(key: "text:bob", limit: 5, windowSeconds: 60, now: t0).current == 1)
        #expect(try await copy.reviewers() == source.reviewers())
        #expect(try await copy.value(key: "session:1", now: t0)?.value == Data([0, 1, 2, 255]))
        #expect(try await copy.isBlocked(blocker: "bob", blocked: "eve"))
        #expect(try await copy.relationHistory("bob") == source.relationHistory("bob"))
        #expect(try await copy.banks() == source.banks())
        #expect(try await copy.bankEntries(bank: nil, after: 0, limit: 10) == source.bankEntries(bank: nil, after: 0, limit: 10))
        #expect(try await copy.threadMembers("c-1") == source.threadMembers("c-1"))
        #expect(try await copy.threadMessages(conversationId: "c-1", limit: 10).map(\.id) == ["t-thread"])
        // New rows continue the copied sequences instead of colliding with them.
        try await copy.appendEvent(ItemEvent(itemId: "t1", at: t0, type: "note"))
        #expect(try await copy.events(of: "t1").count == source.events(of: "t1").count + 1)

        let again = try await shell(TestEnvironment.sluiceBinary, ["store", "migrate", "--from", "sqlite:\(path.path)", "--to", target])
        #expect(again.status != 0 && again.stderr.contains("already holds items"), "\(again.stderr)")
        let wrongWay = try await shell(TestEnvironment.sluiceBinary, ["store", "migrate", "--from", target, "--to", "sqlite:x.sqlite"])
        #expect(wrongWay.status != 0 && wrongWay.stderr.contains("--from must be a SQLite store"), "\(wrongWay.stderr)")
        await copy.close()
    }
}
