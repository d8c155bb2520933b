import SluiceCore

/// Why a thread callable has no answer. The API maps each to seed 004's codes: bad arguments →
/// `invalid-argument`, unknown or foreign conversations → `not-found`, a provider that failed → `internal`
/// (never a half answer), no provider configured → `failed-precondition`.
public enum ThreadError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidArgument(String)
    /// A search over "my conversations" without knowing who "me" is.
    case noUser(String)
    case notFound(conversationId: String)
    case notConfigured(String)
    case provider(ProviderError)
    case store(String)

    public var description: String {
        switch self {
        case let .invalidArgument(message), let .noUser(message): message
        case let .notFound(conversationId): "no conversation \(Identifiers.printable(conversationId)) that you belong to"
        case let .notConfigured(reason): reason
        case let .provider(error): "the LLM provider failed: \(error.description)"
        case let .store(message): message
        }
    }
}
