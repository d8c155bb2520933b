import SluiceCore

/// Exponential backoff with equal jitter, honouring Retry-After, as a value-type state machine:
/// feed it each failure, it says whether and when to try again. No clock, no I/O.
public struct RetryState: Sendable, Equatable {
    public struct Policy: Sendable, Equatable {
        public var maxAttempts: Int
        public var initialBackoff: Double
        public var maxBackoff: Double
        public var multiplier: Double

        public init(maxAttempts: Int, initialBackoff: Double, maxBackoff: Double, multiplier: Double = 2) {
            self.maxAttempts = maxAttempts
            self.initialBackoff = initialBackoff
            self.maxBackoff = maxBackoff
            self.multiplier = multiplier
        }
    }

    public enum Decision: Sendable, Equatable {
        case retry(afterSeconds: Double)
        case giveUp(reason: String)
    }

    public let policy: Policy
    /// Attempts made so far.
    public private(set) var attempts = 0

    public init(policy: Policy) { self.policy = policy }

    /// Call before each attempt.
    public mutating func beginAttempt() { attempts += 1 }

    /// What to do after a failed attempt. `unitRandom` is a value in [0, 1) for the jitter.
    public func decide(after error: ProviderError, unitRandom: Double) -> Decision {
        guard error.isRetryable else { return .giveUp(reason: "not retryable") }
        guard attempts < policy.maxAttempts else { return .giveUp(reason: "gave up after \(attempts) attempts") }
        var exponent = 1.0
        for _ in 1..<max(attempts, 1) { exponent *= policy.multiplier }
        let backoff = min(policy.maxBackoff, policy.initialBackoff * exponent)
        let jittered = backoff / 2 + backoff / 2 * min(max(unitRandom, 0), 1)
        if let retryAfter = error.retryAfter {
            guard retryAfter <= policy.maxBackoff else {
                return .giveUp(reason: "provider asked to retry after \(Int(retryAfter.rounded(.up))) s, beyond the \(Int(policy.maxBackoff)) s limit")
            }
            return .retry(afterSeconds: max(retryAfter, jittered))
        }
        return .retry(afterSeconds: jittered)
    }
}
