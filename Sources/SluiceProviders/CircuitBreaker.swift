import SluiceCore

/// Per-provider circuit breaker as a value-type state machine (time is passed in, so it is tested without
/// sleeping): closed until `failureThreshold` failed calls in a row (each after its retries), then open for `openSeconds` (calls fail at
/// once), then half-open: one probe goes through; its success closes the circuit, its failure reopens it.
public struct CircuitBreaker: Sendable, Equatable {
    public struct Policy: Sendable, Equatable {
        public var failureThreshold: Int
        public var openSeconds: Double

        public init(failureThreshold: Int = 5, openSeconds: Double = 30) {
            self.failureThreshold = failureThreshold
            self.openSeconds = openSeconds
        }
    }

    public enum State: Sendable, Equatable {
        case closed(consecutiveFailures: Int)
        case open(until: Double)
        case halfOpen(probeInFlight: Bool)

        /// `closed`, `open` or `half-open`, for logs, metrics and health checks.
        public var name: String {
            switch self {
            case .closed: "closed"
            case .open: "open"
            case .halfOpen: "half-open"
            }
        }
    }

    public enum Admission: Sendable, Equatable {
        case allowed
        /// A half-open probe: its outcome decides the circuit.
        case probe
        case rejected(retryInSeconds: Double)
    }

    public let policy: Policy
    public private(set) var state: State = .closed(consecutiveFailures: 0)

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Whether a call may go out now.
    public mutating func admit(now: Double) -> Admission {
        switch state {
        case .closed:
            return .allowed
        case let .open(until):
            guard now >= until else { return .rejected(retryInSeconds: until - now) }
            state = .halfOpen(probeInFlight: true)
            return .probe
        case let .halfOpen(probeInFlight):
            if probeInFlight { return .rejected(retryInSeconds: 0) }
            state = .halfOpen(probeInFlight: true)
            return .probe
        }
    }

    public mutating func recordSuccess() {
        state = .closed(consecutiveFailures: 0)
    }

    /// A failure that says something about the provider's health (5xx, 429, timeout, connection).
    public mutating func recordFailure(now: Double) {
        switch state {
        case let .closed(failures):
            let count = failures + 1
            state = count >= policy.failureThreshold ? .open(until: now + policy.openSeconds) : .closed(consecutiveFailures: count)
        case .halfOpen, .open:
            state = .open(until: now + policy.openSeconds)
        }
    }

    /// A call that ended without saying anything about health (e.g. a 400 for a bad image): frees a probe slot.
    public mutating func recordNeutral() {
        if case .halfOpen = state { state = .halfOpen(probeInFlight: false) }
    }
}

extension VisionConfig {
    public var retryPolicy: RetryState.Policy {
        RetryState.Policy(maxAttempts: maxAttempts, initialBackoff: initialBackoffSeconds, maxBackoff: maxBackoffSeconds)
    }

    public var breakerPolicy: CircuitBreaker.Policy {
        CircuitBreaker.Policy(failureThreshold: breakerFailures, openSeconds: breakerOpenSeconds)
    }
}
