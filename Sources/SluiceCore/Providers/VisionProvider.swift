import Foundation

/// A provider Sluice calls over the network. `probe()` is how start-up warnings and `/healthz` ask whether it
/// answers at all, without downcasting to an adapter.
public protocol ProviderProbe: Sendable {
    /// Name recorded with verdicts and metrics, e.g. `google-vision`.
    var name: String { get }
    /// The URL it is called at (shown by `/healthz` as scheme, host and port only: paths and queries can carry keys).
    var endpoint: String { get }
    /// nil when anything answers HTTP at the endpoint (any status counts), otherwise why not (keys scrubbed).
    func probe() async -> String?
}

/// Classifies one image (a small JPEG) into SafeSearch likelihoods.
public protocol VisionProvider: ProviderProbe {
    func classify(_ jpeg: Data) async throws(ProviderError) -> SafeSearch
}

/// A provider call that did not produce a classification. Never carries credentials.
public struct ProviderError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        case http, timeout, connection, malformedResponse, imageError, responseTooLarge, cancelled, circuitOpen, notConfigured
    }

    public var kind: Kind
    public var message: String
    /// HTTP status when the provider answered with one.
    public var status: Int?
    /// Server-requested delay before the next attempt (Retry-After), in seconds.
    public var retryAfter: Double?
    /// How many attempts were made before giving up.
    public var attempts: Int

    public init(kind: Kind, message: String, status: Int? = nil, retryAfter: Double? = nil, attempts: Int = 1) {
        self.kind = kind
        self.message = message
        self.status = status
        self.retryAfter = retryAfter
        self.attempts = attempts
    }

    /// Whether another attempt may succeed: 429, 5xx, timeouts and connection errors.
    public var isRetryable: Bool {
        switch kind {
        case .timeout, .connection: true
        case .http: status.map { $0 == 429 || $0 == 408 || (500...599).contains($0) } ?? false
        case .malformedResponse, .imageError, .responseTooLarge, .cancelled, .circuitOpen, .notConfigured: false
        }
    }

    public var description: String {
        attempts > 1 ? "\(message) (after \(attempts) attempts)" : message
    }

    /// What an API caller is told: the kind of failure, without the provider's own words (its error bodies can echo
    /// parts of keys, account names or prompts). The whole `description` goes to the log.
    public var publicSummary: String {
        let what = switch kind {
        case .http: status.map { "answered HTTP \($0)" } ?? "answered with an error"
        case .timeout: "did not answer in time"
        case .connection: "could not be reached"
        case .malformedResponse: "answered in an unexpected format"
        case .imageError: "could not read the image"
        case .responseTooLarge: "answered with too much data"
        case .cancelled: "was cancelled"
        case .circuitOpen: "is paused after repeated failures"
        case .notConfigured: "is not configured"
        }
        return attempts > 1 ? "\(what) (after \(attempts) attempts)" : what
    }
}

/// A provider in the role it plays (`vision`, `caption`, `priority`): what `/healthz` probes.
public struct ProviderInRole: Sendable {
    public var role: String
    public var provider: any ProviderProbe

    public init(role: String, provider: any ProviderProbe) {
        self.role = role
        self.provider = provider
    }
}
