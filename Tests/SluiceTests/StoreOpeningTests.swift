import Foundation
import GRDB
import SluiceCore
import SluiceStore
import SluiceTesting
import Testing

/// The store as several processes share it.
@Suite struct StoreOpeningTests {
    /// Daemon, API and CLI may open a brand-new store at the same moment; each open must succeed and the
    /// migrations run once. Separate pools behave like separate processes towards SQLite's locks.
    @Test func manyOpenersOfANewStoreAllSucceed() async throws {
        for round in 0..<5 {
            let root = try TemporaryDataRoot()
            let path = root.url.appendingPathComponent("shared-\(round).sqlite")
            let outcomes = await withTaskGroup(of: String?.self, returning: [String?].self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        let opened = await offPoolResult { () -> Result<SQLiteStore, StoreError> in
                            do throws(StoreError) { return .success(try SQLiteStore(path: path)) } catch { return .failure(error) }
                        }
                        do {
                            _ = try await opened.get().countsByStatus()
                            return nil
                        } catch {
                            return "\(error)"
                        }
                    }
                }
                var outcomes: [String?] = []
                for await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            #expect(outcomes.compactMap { $0 }.isEmpty, "round \(round): \(outcomes.compactMap { $0 })")
        }
    }

    /// The store's write-ahead log is copied into the database file while batches keep coming (on a connection of its
    /// own, not in the writer's commits), and stays bounded: a reader opening the file later finds every row, and the
    /// file itself, not only its log, holds them.
    @Test func theLogReachesTheStoreFileWhileBatchesAreWritten() async throws {
        let root = try TemporaryDataRoot()
        let path = root.url.appendingPathComponent("sluice.sqlite")
        let store = try SQLiteStore(path: path)
        let start = fileSize(path)
        for batch in 0..<8 {
            let items = (0..<1_000).map { index -> Item in
                let id = ItemID("b\(batch)-m\(index)")
                return Item(id: id, kind: .text, userId: "u\(index % 97)", status: .approved, contentHash: "hash-\(id)", attempts: 1,
                            createdAt: Date(), updatedAt: Date(),
                            content: TextContent(text: "message \(index) of batch \(batch), long enough to fill some pages", source: "q.jsonl:\(index)"),
                            textVerdict: TextVerdict(allowed: true, reason: nil, matches: [], censored: "message"))
            }
            _ = try await store.recordChangedVerdicts(store.prepareChangedVerdicts(items, lineIDs: items.map(\.id), stage: "text"))
        }
        // The last checkpoint runs beside the writer: wait for it (not for a fixed time).
        var grown = fileSize(path)
        for _ in 0..<200 where grown < start + 2_000_000 {
            try await Task.sleep(for: .milliseconds(50))
            grown = fileSize(path)
        }
        #expect(grown >= start + 2_000_000, "the store file holds the batches (\(start) → \(grown) bytes), not only its log")
        let log = fileSize(URL(fileURLWithPath: path.path + "-wal"))
        #expect(log <= 16_000 * 4_120, "the log is bounded: \(log) bytes")
        #expect(try await SQLiteStore(path: path).countsByStatus()[.approved] == 8_000)
    }

    /// A store made before its windowed counters were keyed by window (`v15`) keeps every rate-limit window's count and
    /// every spam counter when a newer build opens it, and counts on from there.
    @Test func counterWindowsSurviveTheUpgrade() async throws {
        let root = try TemporaryDataRoot()
        let path = root.url.appendingPathComponent("sluice.sqlite")
        // The tables as v1-v14 made them that the counters touch (a rate-limit write reads the erasures in
        // `relationChange`), marked migrated up to v14 as GRDB's migrator records it.
        let old = try DatabaseQueue(path: path.path)
        try await old.write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                CREATE TABLE rateLimit ("key" TEXT NOT NULL, "windowStart" INTEGER NOT NULL, "count" INTEGER NOT NULL, PRIMARY KEY ("key", "windowStart"));
                INSERT INTO rateLimit VALUES ('text_message:ana', 1800000000, 7), ('text_message:ben', 1800000000, 60), ('report:ana', 1799996400, 2);
                CREATE TABLE spamCounter ("key" TEXT NOT NULL, "windowStart" INTEGER NOT NULL, "count" INTEGER NOT NULL, PRIMARY KEY ("key", "windowStart"));
                INSERT INTO spamCounter VALUES ('spam.flood:ana', 1800000000, 4);
                CREATE TABLE spamDistinct ("key" TEXT NOT NULL, "windowStart" INTEGER NOT NULL, "member" TEXT NOT NULL, PRIMARY KEY ("key", "windowStart", "member"));
                INSERT INTO spamDistinct VALUES ('spam.duplicates:ana:f1', 1800000000, 'ben'), ('spam.duplicates:ana:f1', 1800000000, 'cy');
                CREATE TABLE relationChange ("seq" INTEGER PRIMARY KEY AUTOINCREMENT, "kind" TEXT NOT NULL, "actor" TEXT NOT NULL, "subject" TEXT NOT NULL, "at" DATETIME NOT NULL);
                INSERT INTO relationChange (kind, actor, subject, at) VALUES ('follow', 'ana', 'ben', '2027-01-15 08:00:00.000');
                """)
            for identifier in ["v1-items-and-events", "v2-text-items", "v3-priority-and-caption", "v4-backlog-review-reports", "v5-rate-limits",
                               "v6-metrics-snapshots", "v7-human-decisions", "v8-erasure-and-webhooks", "v9-review-console",
                               "v10-relations-and-spam", "v11-pdq-hash-banks", "v12-threads", "v13-work-leases", "v14-reprocess-batches"] {
                try db.execute(sql: "INSERT INTO grdb_migrations VALUES (?)", arguments: [identifier])
            }
        }
        try old.close()
        let store = try SQLiteStore(path: path)
        let ana = CounterSlot(key: "text_message:ana", windowStart: 1_800_000_000)
        let ben = CounterSlot(key: "text_message:ben", windowStart: 1_800_000_000)
        let report = CounterSlot(key: "report:ana", windowStart: 1_799_996_400)
        #expect(try await store.rateLimitTotals([ana, ben, report]) == [ana: 7, ben: 60, report: 2])
        #expect(try await store.recordRateLimitCounts([ana: 3]) == [ana: 10])
        let (keyedByWindow, spam) = try await DatabaseQueue(path: path.path).read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pragma_table_list WHERE schema = 'main' AND wr = 1 AND name IN ('rateLimit', 'spamCounter', 'spamDistinct')"),
             try String.fetchAll(db, sql: "SELECT key || '@' || windowStart || '=' || count FROM spamCounter UNION ALL SELECT key || '@' || windowStart || '+' || member FROM spamDistinct ORDER BY 1"))
        }
        #expect(keyedByWindow == 3, "one B-tree each, keyed by its primary key: no rowid table beside its key index")
        #expect(spam == ["spam.duplicates:ana:f1@1800000000+ben", "spam.duplicates:ana:f1@1800000000+cy", "spam.flood:ana@1800000000=4"])
    }

    private func fileSize(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
    }
}

/// Runs blocking work on its own thread so the openers really overlap.
private func offPoolResult<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
