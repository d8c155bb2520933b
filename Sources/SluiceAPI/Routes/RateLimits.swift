import Foundation
import HTTPTypes
import SluiceCore

/// The seed's per-user limits: uploads 20 per hour, text messages 60 per minute, reports 10 per hour. Counters
/// live in the store so several API processes agree.
struct RateLimits: Sendable {
    enum Limit: String, CaseIterable {
        case imageUpload = "image_upload"
        case textMessage = "text_message"
        case report

        var limit: Int {
            switch self {
            case .imageUpload: 20
            case .textMessage: 60
            case .report: 10
            }
        }

        var windowSeconds: Int { self == .textMessage ? 60 : 3600 }
    }

    let store: any StatusStore
    let now: @Sendable () -> Date

    /// Counts a request for the caller's user; over the limit is RESOURCE_EXHAUSTED with `resetAt`. Limits are per
    /// user: a trusted backend not acting for a user (no `X-User-Id`) is not limited.
    func consume(_ limit: Limit, context: APIContext) async throws {
        guard let user = context.principal?.userId else { return }
        let state = try await store.consumeRateLimit(key: "\(limit.rawValue):\(user)", limit: limit.limit,
                                                     windowSeconds: limit.windowSeconds, now: now())
        guard state.allowed else {
            throw APIError(.resourceExhausted,
                           "\(limit.rawValue) limit of \(limit.limit) per \(limit.windowSeconds == 60 ? "minute" : "hour") reached; resets at \(state.resetAt.formatted(.iso8601))",
                           headers: retryAfter(state))
        }
    }

    /// Every limit's current window for `user`, without counting.
    func windows(for user: String) async throws -> [String: RateLimitState] {
        var windows: [String: RateLimitState] = [:]
        for limit in Limit.allCases {
            windows[limit.rawValue] = try await store.rateLimit(key: "\(limit.rawValue):\(user)", limit: limit.limit,
                                                                windowSeconds: limit.windowSeconds, now: now())
        }
        return windows
    }

    /// `Retry-After` in whole seconds (at least 1) until a limit's window resets.
    func retryAfter(_ state: RateLimitState) -> HTTPFields {
        [.retryAfter: "\(max(1, Int(state.resetAt.timeIntervalSince(now()).rounded(.up))))"]
    }
}
