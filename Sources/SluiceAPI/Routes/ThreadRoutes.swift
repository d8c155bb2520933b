import Foundation
import Hummingbird
import NIOCore
import SluiceCore
import SluicePipeline

/// Seed 004's thread callables: `summarizeThread`, `extractActionItems`, `trackDecisions`, `smartSearch`. A user
/// reads only conversations they belong to (an app token acting for `X-User-Id` reads as that user; without it,
/// as the backend, every conversation). Counted against `limits.rate.threads`.
struct ThreadRoutes {
    let services: APIServices
    let limits: RateLimits

    func summarizeThread(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        try await call(body, context) { (arguments: ThreadArguments, reader) throws(ThreadError) in
            try await intelligence.summarize(conversationId: arguments.conversationId, messageLimit: arguments.messageLimit, reader: reader)
        }
    }

    func extractActionItems(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        try await call(body, context) { (arguments: ThreadArguments, reader) throws(ThreadError) in
            try await intelligence.actionItems(conversationId: arguments.conversationId, messageLimit: arguments.messageLimit, reader: reader)
        }
    }

    func trackDecisions(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        try await call(body, context) { (arguments: ThreadArguments, reader) throws(ThreadError) in
            try await intelligence.decisions(conversationId: arguments.conversationId, messageLimit: arguments.messageLimit, reader: reader)
        }
    }

    func smartSearch(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        try await call(body, context) { (arguments: SmartSearchArguments, reader) throws(ThreadError) in
            try await intelligence.smartSearch(query: arguments.query, conversationId: arguments.conversationId, limit: arguments.limit,
                                               messageLimit: arguments.messageLimit, reader: reader)
        }
    }

    var intelligence: ThreadIntelligence { services.threads }

    func reader(_ context: APIContext) throws -> ThreadIntelligence.Reader {
        switch context.principal {
        case let .user(id)?: .user(id)
        case let .app(actingFor)?: actingFor.map(ThreadIntelligence.Reader.user) ?? .backend
        case nil: throw APIError(.unauthenticated, "missing credentials")
        }
    }

    /// Every thread callable: its arguments, who reads, the limit, then the answer or the seed's error.
    func call<Arguments: CallableArguments, T: Encodable & Sendable>(
        _ body: ByteBuffer, _ context: APIContext, _ work: (Arguments, ThreadIntelligence.Reader) async throws(ThreadError) -> T
    ) async throws -> Response {
        let arguments = try Arguments.decode(body)
        let reader = try reader(context)
        try await limits.consume(.threads, context: context)
        let result: T
        do throws(ThreadError) {
            result = try await work(arguments, reader)
        } catch {
            switch error {
            case let .invalidArgument(message): throw APIError(.invalidArgument, message)
            case let .noUser(message): throw APIError(.unauthenticated, message)
            case .notFound: throw APIError(.notFound, error.description)
            case .notConfigured: throw APIError(.failedPrecondition, error.description)
            case let .provider(failure):
                context.logger.warning("thread provider failed", metadata: ["error": "\(failure.description)"])
                throw APIError(.internalError, "the LLM provider \(failure.publicSummary) (details are in the server's log)")
            case .store: throw APIError(.internalError, error.description)
            }
        }
        return try context.json(CallableResult(result: result))
    }
}

/// `summarizeThread` / `extractActionItems` / `trackDecisions` `{conversationId, messageLimit?}`.
struct ThreadArguments: CallableArguments {
    var conversationId: String
    var messageLimit: Int?

    static func problem(with field: String) -> String {
        switch field {
        case "conversationId": "data.conversationId must be a string (the conversation to read)"
        case "messageLimit": "data.messageLimit must be an integer"
        default: "data.\(field) is not an argument of this function"
        }
    }
}

/// `smartSearch {query, conversationId?, limit?, messageLimit?}`.
struct SmartSearchArguments: CallableArguments {
    var query: String
    var conversationId: String?
    var limit: Int?
    var messageLimit: Int?

    static func problem(with field: String) -> String {
        switch field {
        case "query": "data.query must be a non-empty string"
        case "conversationId": "data.conversationId must be a string"
        case "limit", "messageLimit": "data.\(field) must be an integer"
        default: "data.\(field) is not an argument of this function"
        }
    }
}
