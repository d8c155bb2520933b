import Foundation
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
