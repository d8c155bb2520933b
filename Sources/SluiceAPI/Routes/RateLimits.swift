import Foundation
import HTTPTypes
import SluiceCore

/// The per-user limits (`limits.rate.*`, defaults as the seed: uploads 20 per hour, text messages 60 per minute,
/// reports 10 per hour; priority checks 60 per minute). Counted in this process's memory and exchanged with the
/// store (`RateLimitLedger`), so several API processes agree.
struct RateLimits: Sendable {
    typealias Limit = UserRateLimit

    let ledger: RateLimitLedger
    let config: RateLimitsConfig
    let now: @Sendable () -> Date

    func rule(_ limit: Limit) -> RateLimitRule {
        switch limit {
        case .imageUpload: config.imageUpload
        case .textMessage: config.textMessage
        case .report: config.report
        case .detectPriority: config.detectPriority
        case .threads: config.threads
        }
    }

    /// Counts a request for the caller's user; over the limit is RESOURCE_EXHAUSTED with `resetAt`. Limits are per
    /// user: a trusted backend not acting for a user (no `X-User-Id`) is not limited.
    func consume(_ limit: Limit, context: APIContext) async throws {
        guard let user = context.principal?.userId else { return }
        let rule = rule(limit)
        let state = try await ledger.consume(key: limit.key(for: user), limit: rule.limit, windowSeconds: rule.windowSeconds, now: now())
        guard state.allowed else {
            throw APIError(.resourceExhausted,
                           "\(limit.rawValue) limit of \(rule.limit) per \(Self.window(rule.windowSeconds)) reached; resets at \(state.resetAt.formatted(.iso8601))",
                           headers: retryAfter(state))
        }
    }

    /// Every limit's current window for `user`, without counting.
    func windows(for user: String) async throws -> [String: RateLimitState] {
        var windows: [String: RateLimitState] = [:]
        for limit in Limit.allCases {
            let rule = rule(limit)
            windows[limit.rawValue] = try await ledger.current(key: limit.key(for: user), limit: rule.limit,
                                                               windowSeconds: rule.windowSeconds, now: now())
        }
        return windows
    }

    /// `Retry-After` in whole seconds (at least 1) until a limit's window resets.
    func retryAfter(_ state: RateLimitState) -> HTTPFields {
        [.retryAfter: "\(max(1, Int(state.resetAt.timeIntervalSince(now()).rounded(.up))))"]
    }

    static func window(_ seconds: Int) -> String {
        switch seconds {
        case 60: "minute"
        case 3600: "hour"
        case 86_400: "day"
        default: "\(seconds) s"
        }
    }
}
