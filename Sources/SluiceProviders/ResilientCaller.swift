import Foundation
import Logging
import SluiceCore

/// Holds one provider's breaker; logs every change of state.
public actor BreakerBox {
    private var breaker: CircuitBreaker
    private let provider: String
    private let logger: Logger

    public init(provider: String, policy: CircuitBreaker.Policy, logger: Logger) {
        breaker = CircuitBreaker(policy: policy)
        self.provider = provider
        self.logger = logger
    }

    public var state: CircuitBreaker.State { breaker.state }

    func admit(now: Double) -> CircuitBreaker.Admission {
        let before = breaker.state.name
        let admission = breaker.admit(now: now)
        logChange(from: before)
        return admission
    }

    func record(_ outcome: Outcome, now: Double) {
        let before = breaker.state.name
        switch outcome {
        case .success: breaker.recordSuccess()
        case .failure: breaker.recordFailure(now: now)
        case .neutral: breaker.recordNeutral()
        }
        logChange(from: before)
    }

    enum Outcome { case success, failure, neutral }

    private func logChange(from before: String) {
        let after = breaker.state.name
        if before != after {
            logger.warning("provider circuit \(after)", metadata: ["provider": "\(provider)", "from": "\(before)", "to": "\(after)"])
        }
    }
}

/// Everything between an adapter and the network: bounded in-flight requests, the circuit breaker, retries
/// with backoff and jitter honouring Retry-After. Adapters supply one attempt; this decides what happens next.
public struct ResilientCaller: Sendable {
    public let provider: String
    public let retry: RetryState.Policy
    public let breaker: BreakerBox
    private let limiter: AsyncLimiter
    private let logger: Logger

    public init(provider: String, retry: RetryState.Policy, breaker: CircuitBreaker.Policy, maxInFlight: Int, logger: Logger) {
        self.provider = provider
        self.retry = retry
        self.breaker = BreakerBox(provider: provider, policy: breaker, logger: logger)
        limiter = AsyncLimiter(limit: maxInFlight)
        self.logger = logger
    }

    public func call<T: Sendable>(_ attempt: @escaping @Sendable () async throws(ProviderError) -> T) async throws(ProviderError) -> T {
        var state = RetryState(policy: retry)
        while true {
            let now = Self.now()
            if case let .rejected(wait) = await breaker.admit(now: now) {
                throw ProviderError(kind: .circuitOpen,
                                    message: "\(provider) circuit is open after repeated failures; next probe in \(Int(wait.rounded(.up))) s",
                                    attempts: state.attempts)
            }
            state.beginAttempt()
            let result = await limiter.run { () async -> Result<T, ProviderError> in
                do throws(ProviderError) { return .success(try await attempt()) } catch { return .failure(error) }
            }
            switch result {
            case let .success(value):
                await breaker.record(.success, now: Self.now())
                return value
            case var .failure(error):
                error.attempts = state.attempts
                if Task.isCancelled {
                    await breaker.record(.neutral, now: Self.now())
                    throw ProviderError(kind: .cancelled, message: "\(provider) request cancelled", attempts: state.attempts)
                }
                let decision = state.decide(after: error, unitRandom: Double.random(in: 0..<1))
                // The breaker counts calls, not attempts: a call that still fails after its retries says the provider
                // is unhealthy; one that will be retried does not yet.
                if case .giveUp = decision {
                    await breaker.record(error.isRetryable ? .failure : .neutral, now: Self.now())
                }
                switch decision {
                case let .giveUp(reason):
                    logger.warning("provider call failed", metadata: ["provider": "\(provider)", "error": "\(error.message)",
                                                                      "attempts": "\(state.attempts)", "why": "\(reason)"])
                    throw error
                case let .retry(delay):
                    logger.info("provider call failed, retrying", metadata: ["provider": "\(provider)", "error": "\(error.message)",
                                                                             "delaySeconds": "\(delay)"])
                    try? await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
                }
            }
        }
    }

    static func now() -> Double { Date().timeIntervalSinceReferenceDate }
}
