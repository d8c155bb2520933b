import Foundation
import GRDB

/// A process's metrics in Prometheus text format, as it last published them: the daemon and the API are
/// separate processes, and the API's `/metrics` serves both.
public struct MetricsSnapshot: Sendable, Equatable {
    public var source: String
    public var body: String
    public var updatedAt: Date
}

extension StatusStore {
    /// Replaces `source`'s snapshot.
    public func publishMetrics(source: String, body: String, at date: Date = Date()) throws(StoreError) {
        try write("publish \(source) metrics") { db in
            try db.execute(sql: "INSERT OR REPLACE INTO metricsSnapshot (source, body, updatedAt) VALUES (?, ?, ?)",
                           arguments: [source, body, date])
        }
    }

    public func metricsSnapshots() throws(StoreError) -> [MetricsSnapshot] {
        try read("read metrics snapshots") { db in
            try Row.fetchAll(db, sql: "SELECT source, body, updatedAt FROM metricsSnapshot ORDER BY source").map {
                MetricsSnapshot(source: $0["source"], body: $0["body"], updatedAt: $0["updatedAt"])
            }
        }
    }

    /// Item counts per kind and status.
    public func countsByKindAndStatus() throws(StoreError) -> [(kind: String, status: String, count: Int)] {
        try read("count items") { db in
            try Row.fetchAll(db, sql: "SELECT kind, status, COUNT(*) AS n FROM item GROUP BY kind, status ORDER BY kind, status").map {
                (kind: $0["kind"], status: $0["status"], count: $0["n"])
            }
        }
    }
}
