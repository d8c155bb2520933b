import Crypto
import Foundation
import Hummingbird

/// App tokens (`X-App-Token` or `Authorization: Bearer`) and HS256 JWTs (`Authorization: Bearer`, `sub` = user id,
/// `exp` checked). Everything but `/healthz` needs one.
struct AuthMiddleware: RouterMiddleware {
    let appTokens: Set<String>
    /// The HS256 secret's bytes (a `SymmetricKey` is made per check; the key type is not Sendable).
    let jwtSecret: Data?
    let trustForwardedFor: Bool
    let now: @Sendable () -> Date

    func handle(_ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response) async throws -> Response {
        if request.uri.path == "/healthz" { return try await next(request, context) }
        var context = context
        if trustForwardedFor, let forwarded = request.headers.first(named: SluiceHeader.forwardedFor)?.split(separator: ",").first {
            context.clientAddress = forwarded.trimmingCharacters(in: .whitespaces)
        }
        context.principal = try authenticate(request)
        return try await next(request, context)
    }

    func authenticate(_ request: Request) throws -> Principal {
        let actingFor = request.headers.first(named: SluiceHeader.userId).flatMap { $0.isEmpty ? nil : $0 }
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
        return .user(try verifyJWT(bearer))
    }

    /// HS256 only; returns `sub`.
    func verifyJWT(_ token: String) throws -> String {
        guard let jwtSecret else { throw APIError(.unauthenticated, "bearer token is not an app token, and user tokens are not enabled") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerData = Self.base64URL(parts[0]), let payloadData = Self.base64URL(parts[1]),
              let signature = Self.base64URL(parts[2]) else {
            throw APIError(.unauthenticated, "bearer token is neither an app token nor a JWT")
        }
        guard let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any], header["alg"] as? String == "HS256" else {
            throw APIError(.unauthenticated, "JWT must use alg HS256")
        }
        let signed = Data("\(parts[0]).\(parts[1])".utf8)
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signed, using: SymmetricKey(data: jwtSecret)) else {
            throw APIError(.unauthenticated, "JWT signature is invalid")
        }
        guard let payload = (try? JSONSerialization.jsonObject(with: payloadData)) as? [String: Any] else {
            throw APIError(.unauthenticated, "JWT payload is not a JSON object")
        }
        guard let exp = (payload["exp"] as? NSNumber)?.doubleValue else { throw APIError(.unauthenticated, "JWT has no exp") }
        guard exp > now().timeIntervalSince1970 else { throw APIError(.unauthenticated, "JWT has expired") }
        guard let sub = payload["sub"] as? String, !sub.isEmpty else { throw APIError(.unauthenticated, "JWT has no sub") }
        return sub
    }

    static func base64URL(_ text: String) -> Data? {
        var base = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base.count % 4 != 0 { base += "=" }
        return Data(base64Encoded: base)
    }
}
