import Foundation

/// Classifies one image (a small JPEG) into SafeSearch likelihoods.
public protocol VisionProvider: Sendable {
    /// Name recorded with each verdict, e.g. `google-vision`.
    var name: String { get }
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
}
