import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Copies a store's write-ahead log back into the database file on a connection of its own, beside the writer
/// instead of inside its commits. SQLite's automatic checkpoint runs in the commit that takes the log past 1,000
/// pages, on the writer's connection: while a text queue is ingested that was ~13% of the writer's time, and the
/// writer is the one connection every batch waits for. The writer's connection reports the log's size after each
/// commit (`install(on:)`, SQLite's WAL hook, which replaces the automatic checkpoint); at the same 1,000 pages a
/// passive checkpoint starts on this connection, which never waits for the writer nor makes it wait (the log's
/// frames written meanwhile are copied by the next one). Should the checkpoints fall behind, or fail, the writer's
/// commit checkpoints itself once the log passes `writerThreshold`, as SQLite would, so the log stays bounded.
final class WALCheckpointer: Sendable {
    /// Log pages after a commit that start a checkpoint here (SQLite's automatic checkpoint threshold).
    static let threshold: CInt = 1_000
    /// Log pages after a commit past which the writer checkpoints in its commit, as without this.
    static let writerThreshold: CInt = 16_000

    private struct State {
        var running = false
        /// A commit asked for a checkpoint while one was running: one more follows it.
        var again = false
        var connection: DatabaseQueue?
    }

    let path: String
    private let state = Mutex(State())

    init(path: String) {
        self.path = path
    }

    /// Makes `db` (the writer's connection) report its log's size to this checkpointer after every commit.
    func install(on db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, { context, connection, _, pages in
            guard let context else { return SQLITE_OK }
            if pages >= WALCheckpointer.writerThreshold {
                sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            } else if pages >= WALCheckpointer.threshold {
                Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().request()
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Starts a checkpoint, or one more after the one running.
    func request() {
        let start = state.withLock { state in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        if start { Task.detached(priority: .utility) { await self.checkpoint() } }
    }

    private func checkpoint() async {
        while true {
            do {
                let connection = try state.withLock { state in
                    if let connection = state.connection { return connection }
                    var configuration = Configuration()
                    configuration.busyMode = .timeout(10)
                    configuration.prepareDatabase { db in SQLiteStore.persistLog(db) }
                    let connection = try DatabaseQueue(path: path, configuration: configuration)
                    state.connection = connection
                    return connection
                }
                // Passive: copies what no reader still needs, without waiting for the writer or blocking it. Busy (another
                // process checkpointing) leaves the log to that one.
                _ = try await connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            } catch {
                // Left to the next commit's request, or to the writer past `writerThreshold`.
            }
            let more = state.withLock { state in
                if state.again {
                    state.again = false
                    return true
                }
                state.running = false
                return false
            }
            guard more else { return }
        }
    }
}
