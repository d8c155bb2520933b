#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    // MARK: Reports

    public func recordReport(_ report: Report) async throws(StoreError) {
        try await write("record report \(report.reportId)") { db in
            try db.execute(sql: """
                INSERT INTO report (reportId, messageId, category, description, reporterUserId, createdAt, status, resolvedBy, resolvedAt,
                                    resolutionNote, target) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [report.reportId, report.messageId, report.category, report.description, report.reporterUserId, report.createdAt,
                                 report.status.rawValue, report.resolvedBy, report.resolvedAt, report.resolutionNote, report.target])
        }
    }

    public func reports() async throws(StoreError) -> [Report] {
        try await read("list reports") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM report ORDER BY createdAt DESC, reportId").map { row in
                Report(reportId: row["reportId"], messageId: row["messageId"], category: row["category"], description: row["description"],
                       reporterUserId: row["reporterUserId"], createdAt: row["createdAt"],
                       status: ReportStatus(rawValue: row["status"]) ?? .open, resolvedBy: row["resolvedBy"], resolvedAt: row["resolvedAt"],
                       resolutionNote: row["resolutionNote"], target: row["target"])
            }
        }
    }

    // MARK: Rate limits

    public func consumeRateLimit(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState {
        try await write("count rate limit \(key)") { db in
            let window = CounterSlot(key: key, windowSeconds: windowSeconds, at: now).windowStart
            let current = try Int.fetchOne(db, sql: "SELECT count FROM rateLimit WHERE key = ? AND windowStart = ?", arguments: [key, window]) ?? 0
            let allowed = current < limit
            if allowed {
                try db.execute(sql: """
                    INSERT INTO rateLimit (key, windowStart, count) VALUES (?, ?, 1)
                    ON CONFLICT(key, windowStart) DO UPDATE SET count = count + 1
                    """, arguments: [key, window])
                try db.execute(sql: "DELETE FROM rateLimit WHERE key = ? AND windowStart < ?", arguments: [key, window])
            }
            return RateLimitState(current: allowed ? current + 1 : current, limit: limit,
                                  resetAt: Date(timeIntervalSince1970: Double(window + windowSeconds)), windowSeconds: windowSeconds,
                                  allowed: allowed)
        }
    }

    public func exchangeRateLimitCounts(_ amounts: [CounterSlot: Int], erasuresSeenUpTo seen: Int64?) async throws(StoreError) -> RateLimitExchange {
        guard !amounts.isEmpty else {
            return try await read("read the relation feed's point") { db in
                let last = try Self.lastRelationChange(db)
                return RateLimitExchange(totals: [:], erased: try Self.usersErased(db, after: seen, upTo: last), erasuresSeenUpTo: last)
            }
        }
        return try await write("count \(amounts.count) rate limit windows") { db in
            // One writer: an erasure committed before this is read here, one after it deletes what this writes.
            let last = try Self.lastRelationChange(db)
            let erased = try Self.usersErased(db, after: seen)
            let add = try db.cachedStatement(sql: """
                INSERT INTO rateLimit (key, windowStart, count) VALUES (?, ?, ?)
                ON CONFLICT(key, windowStart) DO UPDATE SET count = count + excluded.count
                RETURNING count
                """)
            let read = try db.cachedStatement(sql: "SELECT count FROM rateLimit WHERE key = ? AND windowStart = ?")
            let ended = try db.cachedStatement(sql: "DELETE FROM rateLimit WHERE key = ? AND windowStart < ?")
            var totals: [CounterSlot: Int] = [:]
            var done = 0
            for (slot, amount) in amounts {
                // An API process exchanges thousands of windows every 100 ms while it answers requests on the other
                // threads: every `rateLimitYieldEvery` windows (under a millisecond of SQLite's work) the writer's
                // thread lets a waiting request thread have the core, instead of holding it for the whole exchange (the
                // p99 of per-user `validate_text` fell by ~0.6 ms in alternated `wrk` runs).
                done += 1
                if done.isMultiple(of: Self.rateLimitYieldEvery) { sched_yield() }
                if !erased.isEmpty, let user = UserRateLimit.user(ofKey: slot.key), erased.contains(user) {
                    totals[slot] = 0
                    continue
                }
                guard amount > 0 else {
                    totals[slot] = try Int.fetchOne(read, arguments: [slot.key, slot.windowStart]) ?? 0
                    continue
                }
                let total = try Int.fetchOne(add, arguments: [slot.key, slot.windowStart, amount]) ?? amount
                totals[slot] = total
                // The window's first count: the key's ended windows go (once per window, not on every exchange).
                if total == amount { try ended.execute(arguments: [slot.key, slot.windowStart]) }
            }
            return RateLimitExchange(totals: totals, erased: erased, erasuresSeenUpTo: last)
        }
    }

    /// Windows an exchange writes between two offers of the core to other threads.
    static let rateLimitYieldEvery = 128

    public func rateLimitTotals(_ slots: [CounterSlot]) async throws(StoreError) -> [CounterSlot: Int] {
        try await read("read \(slots.count) rate limit windows") { db in
            let read = try db.cachedStatement(sql: "SELECT count FROM rateLimit WHERE key = ? AND windowStart = ?")
            var totals: [CounterSlot: Int] = [:]
            for slot in slots {
                totals[slot] = try Int.fetchOne(read, arguments: [slot.key, slot.windowStart]) ?? 0
            }
            return totals
        }
    }

    public func rateLimit(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState {
        try await read("read rate limit \(key)") { db in
            let window = CounterSlot(key: key, windowSeconds: windowSeconds, at: now).windowStart
            let current = try Int.fetchOne(db, sql: "SELECT count FROM rateLimit WHERE key = ? AND windowStart = ?", arguments: [key, window]) ?? 0
            return RateLimitState(current: current, limit: limit,
                                  resetAt: Date(timeIntervalSince1970: Double(window + windowSeconds)), windowSeconds: windowSeconds,
                                  allowed: current < limit)
        }
    }
}
