import Foundation
import Hummingbird
import SluiceCore

/// App tokens (`X-App-Token` or `Authorization: Bearer`, optionally acting for `X-User-Id`) and end users' JWTs
/// (`Authorization: Bearer`, verified by `UserTokenVerifier`; `sub` is the user id). Everything but `/healthz`
/// needs one.
struct AuthMiddleware: RouterMiddleware {
    let appTokens: Set<String>
    let users: UserTokenVerifier
    let trustForwardedFor: Bool

    func handle(_ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response) async throws -> Response {
        // The console signs reviewers in with its own sessions; app tokens and user JWTs never open it.
        if request.uri.path == "/healthz" || request.uri.path == "/console" || request.uri.path.hasPrefix("/console/") {
            return try await next(request, context)
        }
        var context = context
        if trustForwardedFor, let forwarded = request.headers.first(named: SluiceHeader.forwardedFor)?.split(separator: ",").first {
            context.clientAddress = forwarded.trimmingCharacters(in: .whitespaces)
        }
        context.principal = try await authenticate(request)
        return try await next(request, context)
    }

    func authenticate(_ request: Request) async throws -> Principal {
        let actingFor = request.headers.first(named: SluiceHeader.userId)
        if let actingFor, let problem = Identifiers.problem(with: actingFor, role: "X-User-Id") { throw APIError(.invalidArgument, problem) }
        if let token = request.headers.first(named: SluiceHeader.appToken) {
            guard appTokens.contains(token) else { throw APIError(.unauthenticated, "X-App-Token is not a valid app token") }
            return .app(actingFor: actingFor)
        }
        guard let authorization = request.headers[.authorization] else {
            throw APIError(.unauthenticated, "missing credentials: send X-App-Token or Authorization: Bearer")
        }
        guard authorization.lowercased().hasPrefix("bearer ") else {
            throw APIError(.unauthenticated, "Authorization must be \"Bearer <token>\"")
        }
        let bearer = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        if appTokens.contains(bearer) { return .app(actingFor: actingFor) }
        return .user(try await users.verify(bearer))
    }
}

/// Start-up checks of the credentials the API is configured with.
public enum APISecrets {
    /// Why `sluice serve` must not start with this configuration, if it must not.
    public static func problem(config: PipelineConfig, environment: [String: String]) -> String? {
        let secret = environment[config.api.jwtSecretEnv].flatMap { $0.isEmpty ? nil : Data($0.utf8) }
        return UserTokenVerifier.problem(withSecret: secret, env: config.api.jwtSecretEnv)
    }
}
