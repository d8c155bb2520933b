import CryptoExtras
import Foundation
import JWTKit
import Synchronization

/// An identity provider stand-in on loopback: an RSA (RS256) and a P-256 (ES256) key made for the test, their
/// JWKS served at `jwksURL` (as Google serves Firebase's), and tokens signed with them. `goDown()` makes the JWKS
/// endpoint answer 503, as a provider outage would; `drip(every:)` makes it answer at once and then send the document
/// a byte at a time.
public final class FakeTokenIssuer: Sendable {
    public struct Claims: JWTPayload {
        public var sub: SubjectClaim?
        public var exp: ExpirationClaim?
        public var iss: IssuerClaim?
        public var aud: AudienceClaim?
        /// A custom claim some issuers add (an app's own user id).
        public var uid: String?

        public func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private let keys: JWTKeyCollection
    private let down = Mutex(false)
    private let dripEvery = Mutex(0.0)
    private let box: Mutex<FakeJSONServer?>
    /// The JWKS document (public keys only), also what `jwksFile` setups read from disk.
    public let jwks: String

    public var jwksURL: String { (box.withLock { $0 }?.baseURL ?? "http://127.0.0.1:9") + "/jwks.json" }
    /// How many times the JWKS was fetched.
    public var fetches: Int { box.withLock { $0 }?.received.count ?? 0 }

    public static func start() async throws -> FakeTokenIssuer {
        let rsa = try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        let ec = ES256PrivateKey()
        let keys = JWTKeyCollection()
        await keys.add(rsa: rsa, digestAlgorithm: .sha256, kid: "rsa-1")
        await keys.add(ecdsa: ec, kid: "ec-1")
        let (modulus, exponent) = try rsa.publicKey.getKeyPrimitives()
        guard let point = ec.publicKey.parameters else { throw CocoaError(.coderInvalidValue) }
        let document: [String: Any] = ["keys": [
            ["kty": "RSA", "kid": "rsa-1", "alg": "RS256", "use": "sig", "n": base64URL(modulus), "e": base64URL(exponent)],
            ["kty": "EC", "kid": "ec-1", "alg": "ES256", "use": "sig", "crv": "P-256", "x": point.x, "y": point.y],
        ]]
        let jwks = String(decoding: try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]), as: UTF8.self)
        let issuer = FakeTokenIssuer(keys: keys, jwks: jwks)
        let server = try await FakeJSONServer.start { [issuer] _, _ in
            issuer.down.withLock { $0 } ? .init(status: 503, body: #"{"error":"down"}"#) : .init(body: jwks, dripEvery: issuer.dripEvery.withLock { $0 })
        }
        issuer.box.withLock { $0 = server }
        return issuer
    }

    private init(keys: JWTKeyCollection, jwks: String) {
        self.keys = keys
        self.jwks = jwks
        box = Mutex(nil)
    }

    public func goDown() { down.withLock { $0 = true } }
    public func comeBack() { down.withLock { $0 = false } }
    /// From now on the JWKS answer's head comes at once and its body a byte every `seconds` (0: all at once).
    public func drip(every seconds: Double) { dripEvery.withLock { $0 = seconds } }
    public func stop() { box.withLock { $0 }?.stop() }

    /// A token signed with the RSA key (`kid` "rsa-1") or the EC key ("ec-1").
    public func token(sub: String?, expires: Date, issuer: String?, audience: String?, kid: String = "rsa-1", uid: String? = nil) async throws -> String {
        let claims = Claims(sub: sub.map(SubjectClaim.init(value:)), exp: ExpirationClaim(value: expires),
                            iss: issuer.map(IssuerClaim.init(value:)), aud: audience.map { AudienceClaim(value: [$0]) }, uid: uid)
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// An unsigned token, as the Firebase Auth emulator issues them (`alg: none`, empty signature).
    public static func emulatorToken(sub: String, expires: Date, issuer: String, audience: String) -> String {
        let header = base64URL(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let payload = base64URL(Data(#"{"sub":"\#(sub)","exp":\#(Int(expires.timeIntervalSince1970)),"iss":"\#(issuer)","aud":"\#(audience)"}"#.utf8))
        return "\(header).\(payload)."
    }

    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
