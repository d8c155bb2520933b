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
}

/// Runs blocking work on its own thread so the openers really overlap.
private func offPoolResult<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
