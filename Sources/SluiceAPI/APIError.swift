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
    /// The HTTP code when it is not the status's usual one (405 for a wrong method).
    public var status: HTTPResponse.Status
    /// Extra headers: `Allow` on 405, `Retry-After` on 429.
    public var headers: HTTPFields

    public init(_ code: Status, _ message: String, status: HTTPResponse.Status? = nil, headers: HTTPFields = [:]) {
        self.code = code
        self.message = message
        self.status = status ?? code.http
        self.headers = headers
    }

    /// `{"error": {"message": …, "status": …}}`, sorted keys: the one encoding of the envelope, also written by
    /// `ProtocolErrorEnvelopeHandler` for requests that never reach the router.
    var envelopeJSON: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(["error": ["status": code.rawValue, "message": message]])) ?? Data()
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let data = envelopeJSON
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns anything thrown by a handler (Hummingbird's own HTTP errors included) into the envelope: the callable
/// envelope everywhere, the caption envelope under `/api/`. A known path with the wrong method is 405 with `Allow`.
struct ErrorEnvelopeMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let captionStyle = request.uri.path.hasPrefix("/api/")
        do {
            return try await next(request, context)
        } catch let error as CaptionAPIError {
            throw error
        } catch let error as APIError {
            if captionStyle { throw CaptionAPIError(error) }
            throw error
        } catch {
            let mapped = map(error, request: request, context: context)
            if captionStyle { throw CaptionAPIError(mapped) }
            throw mapped
        }
    }

    private func map(_ error: any Error, request: Request, context: Context) -> APIError {
        if error is NIOTooManyBytesError {
            return APIError(.invalidArgument, "request body is too large for \(Routes.quoted(request.uri.path))", status: .contentTooLarge)
        }
        guard let error = error as? HTTPError else {
            context.logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return APIError(.internalError, "internal error")
        }
        let path = request.uri.path
        switch error.status {
        case .notFound:
            let allowed = routes.methods(forPath: path)
            if !allowed.isEmpty, !allowed.contains(request.method) {
                let list = allowed.map(\.rawValue).sorted().joined(separator: ", ")
                return APIError(.invalidArgument, "\(request.method.rawValue) is not allowed on \(Routes.quoted(path)); use \(list)",
                                status: .methodNotAllowed, headers: [.allow: list])
            }
            return APIError(.notFound, "no such endpoint: \(request.method.rawValue) \(Routes.quoted(path))")
        case .methodNotAllowed: return APIError(.invalidArgument, "\(request.method.rawValue) is not allowed", status: .methodNotAllowed)
        case .contentTooLarge: return APIError(.invalidArgument, "request body is too large", status: .contentTooLarge)
        default: return APIError(error.status.code < 500 ? .invalidArgument : .internalError, error.body ?? error.status.reasonPhrase)
        }
    }
}

/// The registered routes as data: the router is built from it, wrong methods are told apart from unknown paths
/// with it, and the OpenAPI test compares the description against the router built from it.
struct RouteTable: Sendable {
    struct Entry: Sendable {
        var method: HTTPRequest.Method
        var path: String
        var segments: [Substring] { path.split(separator: "/") }
    }

    var entries: [Entry]

    /// Methods registered for a concrete request path (`:name` segments match any one segment).
    func methods(forPath path: String) -> Set<HTTPRequest.Method> {
        let parts = path.split(separator: "/")
        var methods = Set<HTTPRequest.Method>()
        for entry in entries {
            let pattern = entry.segments
            guard pattern.count == parts.count else { continue }
            if zip(pattern, parts).allSatisfy({ $0.hasPrefix(":") || $0 == $1 }) { methods.insert(entry.method) }
        }
        return methods
    }
}
