import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The documented error envelope: `{"error": {"status": "...", "message": "..."}}` with the matching HTTP code,
/// for REST and Firebase-callable endpoints alike. Never a bare 500.
public struct APIError: HTTPResponseError, Sendable {
    public enum Status: String, Sendable {
        case unauthenticated = "UNAUTHENTICATED"
        case permissionDenied = "PERMISSION_DENIED"
        case invalidArgument = "INVALID_ARGUMENT"
        case resourceExhausted = "RESOURCE_EXHAUSTED"
        case notFound = "NOT_FOUND"
        case internalError = "INTERNAL"

        var http: HTTPResponse.Status {
            switch self {
            case .unauthenticated: .unauthorized
            case .permissionDenied: .forbidden
            case .invalidArgument: .badRequest
            case .resourceExhausted: .tooManyRequests
            case .notFound: .notFound
            case .internalError: .internalServerError
            }
        }
    }

    public var code: Status
    public var message: String

    public init(_ code: Status, _ message: String) {
        self.code = code
        self.message = message
    }

    public var status: HTTPResponse.Status { code.http }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body: [String: [String: String]] = ["error": ["status": code.rawValue, "message": message]]
        let data = (try? JSONEncoder().encode(body)) ?? Data()
        return Response(status: status, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns anything thrown by a handler (Hummingbird's own HTTP errors included) into the envelope.
struct ErrorEnvelopeMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as HTTPError {
            switch error.status {
            case .notFound: throw APIError(.notFound, "no such endpoint: \(request.method.rawValue) \(request.uri.path)")
            case .methodNotAllowed: throw APIError(.invalidArgument, "\(request.method.rawValue) is not allowed on \(request.uri.path)")
            case .contentTooLarge: throw APIError(.invalidArgument, "request body is too large")
            default: throw APIError(error.status.code < 500 ? .invalidArgument : .internalError, error.body ?? error.status.reasonPhrase)
            }
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw APIError(.internalError, "internal error")
        }
    }
}
