import CoreMetrics
import Foundation
import Logging
import SluiceCore

/// Holds one provider's breaker; every change of state is logged and recorded in the gauge
/// `sluice_provider_circuit_state{provider}` (0 closed, 1 half-open, 2 open).
public actor BreakerBox {
    private var breaker: CircuitBreaker
    private let provider: String
    private let logger: Logger
    private let gauge: Gauge

    public init(provider: String, policy: CircuitBreaker.Policy, logger: Logger, metrics: any MetricsFactory = MetricsSystem.factory) {
        breaker = CircuitBreaker(policy: policy)
        self.provider = provider
        self.logger = logger
        gauge = Gauge(label: "sluice_provider_circuit_state", dimensions: [("provider", provider)], factory: metrics)
        gauge.record(0)
    }

    static func gaugeValue(_ state: CircuitBreaker.State) -> Int {
        switch state {
        case .closed: 0
        case .halfOpen: 1
        case .open: 2
        }
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
            gauge.record(Self.gaugeValue(breaker.state))
            logger.warning("provider circuit \(after)", metadata: ["provider": "\(provider)", "from": "\(before)", "to": "\(after)"])
        }
    }
}

/// Everything between an adapter and the network: bounded in-flight requests, the circuit breaker, retries
/// with backoff and jitter honouring Retry-After. Adapters supply one attempt; this decides what happens next.
/// Metrics: `sluice_provider_calls_total{provider, outcome}` (success, failure, rejected — circuit open) and
/// `sluice_provider_retries_total{provider}`.
public struct ResilientCaller: Sendable {
    public let provider: String
    public let retry: RetryState.Policy
    public let breaker: BreakerBox
    private let limiter: AsyncLimiter
    private let logger: Logger
    private let successes: Counter
    private let failures: Counter
    private let rejections: Counter
    private let retries: Counter

    public init(provider: String, retry: RetryState.Policy, breaker: CircuitBreaker.Policy, maxInFlight: Int, logger: Logger,
                metrics: any MetricsFactory = MetricsSystem.factory) {
        self.provider = provider
        self.retry = retry
        self.breaker = BreakerBox(provider: provider, policy: breaker, logger: logger, metrics: metrics)
        limiter = AsyncLimiter(limit: maxInFlight)
        self.logger = logger
        successes = Counter(label: "sluice_provider_calls_total", dimensions: [("provider", provider), ("outcome", "success")], factory: metrics)
        failures = Counter(label: "sluice_provider_calls_total", dimensions: [("provider", provider), ("outcome", "failure")], factory: metrics)
        rejections = Counter(label: "sluice_provider_calls_total", dimensions: [("provider", provider), ("outcome", "rejected")], factory: metrics)
        retries = Counter(label: "sluice_provider_retries_total", dimensions: [("provider", provider)], factory: metrics)
    }

    public func call<T: Sendable>(_ attempt: @escaping @Sendable () async throws(ProviderError) -> T) async throws(ProviderError) -> T {
        var state = RetryState(policy: retry)
        while true {
            let now = Self.now()
            if case let .rejected(wait) = await breaker.admit(now: now) {
                rejections.increment()
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
                successes.increment()
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
                    failures.increment()
                    logger.warning("provider call failed", metadata: ["provider": "\(provider)", "error": "\(error.message)",
                                                                      "attempts": "\(state.attempts)", "why": "\(reason)"])
                    throw error
                case let .retry(delay):
                    retries.increment()
                    logger.info("provider call failed, retrying", metadata: ["provider": "\(provider)", "error": "\(error.message)",
                                                                             "delaySeconds": "\(delay)"])
                    try? await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
                }
            }
        }
    }

    static func now() -> Double { Date().timeIntervalSinceReferenceDate }
}
