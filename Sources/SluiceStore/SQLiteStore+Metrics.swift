import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    public func publishMetrics(source: String, body: String, at date: Date) async throws(StoreError) {
        try await write("publish \(source) metrics") { db in
            try db.execute(sql: "INSERT OR REPLACE INTO metricsSnapshot (source, body, updatedAt) VALUES (?, ?, ?)",
                           arguments: [source, body, date])
            // Instances that stopped publishing a week ago (each daemon start is a new instance) are forgotten.
            try db.execute(sql: "DELETE FROM metricsSnapshot WHERE updatedAt < ?", arguments: [date.addingTimeInterval(-7 * 86_400)])
        }
    }

    public func metricsSnapshots() async throws(StoreError) -> [MetricsSnapshot] {
        try await read("read metrics snapshots") { db in
            try Row.fetchAll(db, sql: "SELECT source, body, updatedAt FROM metricsSnapshot ORDER BY source").map {
                MetricsSnapshot(source: $0["source"], body: $0["body"], updatedAt: $0["updatedAt"])
            }
        }
    }
}
