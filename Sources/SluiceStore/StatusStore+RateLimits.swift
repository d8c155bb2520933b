import Foundation
import GRDB
import SluiceCore

/// A fixed-window counter as the API reports it.
public struct RateLimitState: Sendable, Equatable, Encodable {
    public var current: Int
    public var limit: Int
    public var remaining: Int
    public var resetAt: Date
    public var windowSeconds: Int
    /// False when this request went over the limit (and was not counted).
    public var allowed: Bool

    enum CodingKeys: String, CodingKey { case current, limit, remaining, resetAt, windowSeconds }
}

extension StatusStore {
    /// Counts one request against `key` in the current fixed window, atomically; over the limit it is not
    /// counted and `allowed` is false. Counters live in the store so several API processes agree.
    public func consumeRateLimit(key: String, limit: Int, windowSeconds: Int, now: Date = Date()) throws(StoreError) -> RateLimitState {
        try write("count rate limit \(key)") { db in
            let window = Int(now.timeIntervalSince1970) / windowSeconds * windowSeconds
            let current = try Int.fetchOne(db, sql: "SELECT count FROM rateLimit WHERE key = ? AND windowStart = ?", arguments: [key, window]) ?? 0
            let allowed = current < limit
            if allowed {
                try db.execute(sql: """
                    INSERT INTO rateLimit (key, windowStart, count) VALUES (?, ?, 1)
                    ON CONFLICT(key, windowStart) DO UPDATE SET count = count + 1
                    """, arguments: [key, window])
                try db.execute(sql: "DELETE FROM rateLimit WHERE key = ? AND windowStart < ?", arguments: [key, window])
            }
            let count = allowed ? current + 1 : current
            return RateLimitState(current: count, limit: limit, remaining: max(0, limit - count),
                                  resetAt: Date(timeIntervalSince1970: Double(window + windowSeconds)), windowSeconds: windowSeconds,
                                  allowed: allowed)
        }
    }

    /// The current window of `key` without counting.
    public func rateLimit(key: String, limit: Int, windowSeconds: Int, now: Date = Date()) throws(StoreError) -> RateLimitState {
        try read("read rate limit \(key)") { db in
            let window = Int(now.timeIntervalSince1970) / windowSeconds * windowSeconds
            let current = try Int.fetchOne(db, sql: "SELECT count FROM rateLimit WHERE key = ? AND windowStart = ?", arguments: [key, window]) ?? 0
            return RateLimitState(current: current, limit: limit, remaining: max(0, limit - current),
                                  resetAt: Date(timeIntervalSince1970: Double(window + windowSeconds)), windowSeconds: windowSeconds,
                                  allowed: current < limit)
        }
    }
}
