import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceCore

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
            return APIError(.invalidArgument, "request body is too large for \(Identifiers.printable(request.uri.path))", status: .contentTooLarge)
        }
        guard let error = error as? HTTPError else {
            context.logger.error("request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            return APIError(.internalError, "internal error")
        }
        let path = request.uri.path
        switch error.status {
        case .notFound:
            var allowed = routes.methods(forPath: path)
            // HEAD is answered wherever GET is (HeadAsGetResponder).
            if allowed.contains(.get) { allowed.insert(.head) }
            if !allowed.isEmpty, !allowed.contains(request.method) {
                let list = allowed.map(\.rawValue).sorted().joined(separator: ", ")
                return APIError(.invalidArgument, "\(request.method.rawValue) is not allowed on \(Identifiers.printable(path)); use \(list)",
                                status: .methodNotAllowed, headers: [.allow: list])
            }
            return APIError(.notFound, "no such endpoint: \(request.method.rawValue) \(Identifiers.printable(path))")
        case .methodNotAllowed: return APIError(.invalidArgument, "\(request.method.rawValue) is not allowed", status: .methodNotAllowed)
        case .contentTooLarge: return APIError(.invalidArgument, "request body is too large", status: .contentTooLarge)
        default: return APIError(error.status.code < 500 ? .invalidArgument : .internalError, error.body ?? error.status.reasonPhrase)
        }
    }
}

/// The registered routes (read back from a router holding every route collection), so a wrong method on a
/// known path is told apart from an unknown path.
struct RouteTable: Sendable {
    struct Entry: Sendable {
        var method: HTTPRequest.Method
        var path: String
        var segments: [Substring] { path.split(separator: "/") }
    }

    var entries: [Entry]

    /// Methods registered for a concrete request path: of the patterns that match (`{name}` segments match any one
    /// segment), those with the most literal segments, as the router itself prefers literals.
    func methods(forPath path: String) -> Set<HTTPRequest.Method> {
        let parts = path.split(separator: "/")
        var best = -1
        var methods = Set<HTTPRequest.Method>()
        for entry in entries {
            let pattern = entry.segments
            guard pattern.count == parts.count, zip(pattern, parts).allSatisfy({ $0.hasPrefix("{") || $0 == $1 }) else { continue }
            let literals = pattern.filter { !$0.hasPrefix("{") }.count
            if literals > best {
                best = literals
                methods = []
            }
            if literals == best { methods.insert(entry.method) }
        }
        return methods
    }
}
