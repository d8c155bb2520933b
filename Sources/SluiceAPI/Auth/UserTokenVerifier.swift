import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import SluiceCore
import SluiceProviders

/// Verifies end users' JWTs with jwt-kit: HS256 with the configured secret; RS256 and ES256 with keys from a JWKS
/// file or URL (Firebase ID tokens: `api.auth.firebaseProjectId`); `exp`, `nbf`, `iss` and `aud` checked against
/// the configuration; the Firebase Auth emulator's unsigned tokens only when `allowEmulatorTokens` is on.
///
/// A JWKS URL is fetched on first use, cached, refreshed when older than `jwksRefreshSeconds` and when a token
/// names a key the cache does not have (at most every 30 s). If the URL is down, the cached keys keep working;
/// with no keys at all, user tokens are refused as UNAUTHENTICATED (never a 500).
actor UserTokenVerifier {
    struct Claims: JWTPayload {
        var sub: SubjectClaim?
        var exp: ExpirationClaim?
        var nbf: NotBeforeClaim?
        var iss: IssuerClaim?
        var aud: AudienceClaim?
        /// Every top-level claim whose value is a string (`api.auth.userIdClaim` names one of them).
        var strings: [String: String] = [:]

        private enum CodingKeys: String, CodingKey { case sub, exp, nbf, iss, aud }

        private struct AnyKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            sub = try c.decodeIfPresent(SubjectClaim.self, forKey: .sub)
            exp = try c.decodeIfPresent(ExpirationClaim.self, forKey: .exp)
            nbf = try c.decodeIfPresent(NotBeforeClaim.self, forKey: .nbf)
            iss = try c.decodeIfPresent(IssuerClaim.self, forKey: .iss)
            aud = try c.decodeIfPresent(AudienceClaim.self, forKey: .aud)
            let all = try decoder.container(keyedBy: AnyKey.self)
            for key in all.allKeys {
                if let value = try? all.decode(String.self, forKey: key) { strings[key.stringValue] = value }
            }
        }

        /// Time-based claims are checked by the verifier against its own clock.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// RFC 7518 §3.2: an HS256 key must be at least as long as the hash output.
    static let minimumSecretBytes = 32

    private let secret: Data?
    private let config: AuthConfig
    private let now: @Sendable () -> Date
    private let client: HTTPClient
    private let logger: Logger
    private var keys: JWTKeyCollection?
    private var jwks: JWKS?
    private var fetchedAt: Date?
    private var lastAttempt: Date?
    private var lastProblem: String?

    init(secret: Data?, config: AuthConfig, now: @escaping @Sendable () -> Date, client: HTTPClient = .shared,
         logger: Logger = Logger(label: "sluice.auth")) {
        self.secret = secret
        self.config = config
        self.now = now
        self.client = client
        self.logger = logger
    }

    /// Whether user tokens are accepted at all.
    nonisolated var enabled: Bool {
        secret != nil || config.jwksFile != nil || config.effectiveJWKSURL != nil || config.allowEmulatorTokens
    }

    /// The algorithms this configuration can verify.
    nonisolated var acceptedAlgorithms: [String] {
        var algorithms: [String] = []
        if secret != nil { algorithms.append("HS256") }
        if config.jwksFile != nil || config.effectiveJWKSURL != nil { algorithms += ["RS256", "ES256"] }
        return algorithms
    }

    /// Why the configured HS256 secret cannot be used, if it cannot (`sluice serve` refuses to start on it).
    nonisolated static func problem(withSecret secret: Data?, env: String) -> String? {
        guard let secret, secret.count < minimumSecretBytes else { return nil }
        return "the HS256 secret in \(env) is \(secret.count) bytes; at least \(minimumSecretBytes) are required (RFC 7518 §3.2)"
    }

    /// The token's user id (`sub`, or the claim `api.auth.userIdClaim` names), or the envelope's UNAUTHENTICATED with the reason.
    func verify(_ token: String) async throws -> String {
        guard enabled else { throw APIError(.unauthenticated, "bearer token is not an app token, and user tokens are not enabled") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URL(parts[0]),
              let header = try? JSONDecoder().decode(Header.self, from: headerData) else {
            throw APIError(.unauthenticated, "bearer token is neither an app token nor a JWT")
        }
        let claims: Claims
        if header.alg.lowercased() == "none" {
            guard config.allowEmulatorTokens, let payload = Self.base64URL(parts[1]),
                  let decoded = try? JSONDecoder().decode(Claims.self, from: payload) else {
                throw APIError(.unauthenticated, "JWT must use alg \(acceptedAlgorithms.joined(separator: " or "))")
            }
            claims = decoded
        } else {
            guard acceptedAlgorithms.contains(header.alg) else {
                throw APIError(.unauthenticated, "JWT must use alg \(acceptedAlgorithms.joined(separator: " or "))")
            }
            claims = try await verifySignature(token, kid: header.kid, alg: header.alg)
        }
        return try check(claims)
    }

    private func verifySignature(_ token: String, kid: String?, alg: String) async throws -> Claims {
        if alg != "HS256" { await refresh(force: jwks == nil || kid.map { !knows($0) } ?? false) }
        guard let keys = try await collection() else {
            throw APIError(.unauthenticated, "no keys to verify \(alg) tokens\(lastProblem.map { ": \($0)" } ?? "")")
        }
        do {
            return try await keys.verify(token, as: Claims.self)
        } catch let error as JWTError {
            switch error.errorType {
            case .signatureVerificationFailed: throw APIError(.unauthenticated, "JWT signature is invalid")
            case .unknownKID: throw APIError(.unauthenticated, "JWT key \(Identifiers.printable(kid ?? "", limit: 64)) is not known")
            case .missingKIDHeader: throw APIError(.unauthenticated, "JWT has no kid header")
            case .malformedToken: throw APIError(.unauthenticated, "JWT is malformed")
            default: throw APIError(.unauthenticated, "JWT cannot be verified: \(error.reason ?? "\(error.errorType)")")
            }
        } catch {
            throw APIError(.unauthenticated, "JWT cannot be verified")
        }
    }

    private func check(_ claims: Claims) throws -> String {
        let now = now()
        guard let exp = claims.exp else { throw APIError(.unauthenticated, "JWT has no exp") }
        guard exp.value > now else { throw APIError(.unauthenticated, "JWT has expired") }
        if let nbf = claims.nbf, nbf.value > now.addingTimeInterval(60) { throw APIError(.unauthenticated, "JWT is not valid yet") }
        if let issuer = config.effectiveIssuer, claims.iss?.value != issuer {
            throw APIError(.unauthenticated, "JWT issuer is not \(issuer)")
        }
        if let audience = config.effectiveAudience, claims.aud?.value.contains(audience) != true {
            throw APIError(.unauthenticated, "JWT audience is not \(audience)")
        }
        let claim = config.userIdClaim
        guard let user = claim == "sub" ? claims.sub?.value : claims.strings[claim], !user.isEmpty else {
            throw APIError(.unauthenticated, claim == "sub" ? "JWT has no sub" : "JWT has no string claim \(Identifiers.printable(claim, limit: 64)) (api.auth.userIdClaim)")
        }
        // The user id everything else uses (pending/{userId}/…, relations, reports): a claim that cannot be one is
        // refused here, as X-User-Id is, rather than accepted by some callables and refused by others.
        if let problem = Identifiers.problem(with: user, role: "JWT \(claim)") {
            throw APIError(.unauthenticated, problem + (claim == "sub" ? " (api.auth.userIdClaim can name another claim that holds the user id)" : ""))
        }
        return user
    }

    // MARK: Keys

    private struct Header: Decodable {
        var alg: String
        var kid: String?
    }

    private func knows(_ kid: String) -> Bool {
        jwks?.keys.contains { $0.keyIdentifier?.string == kid } ?? false
    }

    /// The keys as now known: the HS256 secret and the JWKS keys.
    private func collection() async throws -> JWTKeyCollection? {
        if let keys { return keys }
        guard secret != nil || jwks != nil else { return nil }
        let collection = JWTKeyCollection()
        if let secret, secret.count >= Self.minimumSecretBytes { await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256) }
        if let jwks { try await collection.add(jwks: JWKS(keys: jwks.keys.filter { Self.usable($0) })) }
        keys = collection
        return collection
    }

    /// RSA and P-256 signing keys only (a JWKS can carry encryption keys and curves Sluice does not verify).
    private static func usable(_ key: JWK) -> Bool {
        key.keyType == .rsa || key.keyType == .ecdsa
    }

    /// Loads the JWKS (file or URL) when forced (no keys yet, an unknown `kid`) or when older than
    /// `jwksRefreshSeconds`; never more than one attempt every 30 s. A failure keeps the keys already known.
    private func refresh(force: Bool) async {
        let now = now()
        if let lastAttempt, now.timeIntervalSince(lastAttempt) < 30 { return }
        if !force, let fetchedAt, now.timeIntervalSince(fetchedAt) < config.jwksRefreshSeconds { return }
        lastAttempt = now
        do {
            let document: Data
            if let file = config.jwksFile {
                document = try Data(contentsOf: file)
            } else if let url = config.effectiveJWKSURL {
                document = try await fetch(url)
            } else {
                return
            }
            jwks = try JSONDecoder().decode(JWKS.self, from: document)
            fetchedAt = now
            keys = nil
            lastProblem = nil
        } catch {
            lastProblem = "JWKS at \(config.jwksFile?.path ?? config.effectiveJWKSURL ?? "?") could not be loaded: \(error)"
            logger.warning("cannot load JWKS; keeping the keys already known", metadata: ["problem": "\(lastProblem ?? "")"])
        }
    }

    private func fetch(_ url: String) async throws -> Data {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        // The answer, its body included, within the timeout (`HTTPClient.exchange`).
        let (status, body) = try await client.exchange(request, timeout: .milliseconds(Int64(config.jwksTimeoutSeconds * 1000))) { response in
            guard response.status.code == 200 else { return (Int(response.status.code), ByteBuffer()) }
            return (200, try await response.body.collect(upTo: 1 << 20))
        }
        guard status == 200 else { throw JWKSFetchError(status: status) }
        return Data(buffer: body)
    }

    struct JWKSFetchError: Error, CustomStringConvertible {
        var status: Int
        var description: String { "HTTP \(status)" }
    }

    static func base64URL(_ text: some StringProtocol) -> Data? {
        var base = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base.count % 4 != 0 { base += "=" }
        return Data(base64Encoded: base)
    }
}
