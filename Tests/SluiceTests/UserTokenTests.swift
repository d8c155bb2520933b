import Foundation
import Synchronization
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SluiceAPI
import SluiceCore
import SluiceServices
import SluiceTesting
import Testing

/// End users' tokens as real apps send them: Firebase-style RS256 (and ES256) from a JWKS served on loopback or
/// read from a file, issuer and audience checks, the emulator's unsigned tokens only when allowed, and an identity
/// provider that goes down.
@Suite(.serialized) struct UserTokenTests {
    static let project = "demo-sluice"
    static var issuer: String { "https://securetoken.google.com/\(project)" }

    func application(_ root: TemporaryDataRoot, now: @escaping @Sendable () -> Date = Date.init,
                     edit: (inout AuthConfig) -> Void) async throws -> some ApplicationProtocol {
        let config = root.config(endpoint: "http://127.0.0.1:9/v1") { config in
            // The fake issuer's first answer can take seconds on a loaded 2-core machine (CI once missed 5 s); the
            // fetch deadline is not what these tests check.
            config.api.auth.jwksTimeoutSeconds = 60
            edit(&config.api.auth)
        }
        let services = try await Services.live(config: config, environment: [:], logger: quietLogger).api()
        return buildApplication(services: services, environment: ["SLUICE_APP_TOKENS": "app-1"], now: now, logger: quietLogger)
    }

    static func status(_ response: TestResponse) -> (code: HTTPResponse.Status, status: String?, message: String?) {
        let object = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        return (response.status, error?["status"] as? String, error?["message"] as? String)
    }

    @Test func firebaseIDTokensAreVerifiedAgainstTheJWKS() async throws {
        let root = try TemporaryDataRoot()
        let idp = try await FakeTokenIssuer.start()
        defer { idp.stop() }
        let app = try await application(root) { auth in
            auth.firebaseProjectId = Self.project
            auth.jwksURL = idp.jwksURL
        }
        let soon = Date().addingTimeInterval(600)
        try await app.test(.router) { client in
            func call(_ token: String, _ check: @escaping @Sendable (TestResponse) -> Void) async throws {
                try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post,
                                         headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                                         body: ByteBuffer(string: #"{"data": null}"#)) { check($0) }
            }
            // RS256 and ES256 tokens from the project's JWKS work, and `sub` is the user.
            for kid in ["rsa-1", "ec-1"] {
                let token = try await idp.token(sub: "alice", expires: soon, issuer: Self.issuer, audience: Self.project, kid: kid)
                try await call(token) { response in
                    #expect(response.status == .ok, "\(kid): \(Self.status(response))")
                    let result = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["result"] as? [String: Any]
                    #expect(result?["text_message"] != nil)
                }
            }
            #expect(idp.fetches == 1, "the JWKS is fetched once and cached")
            let cases: [(String, String)] = [
                (try await idp.token(sub: "alice", expires: Date().addingTimeInterval(-5), issuer: Self.issuer, audience: Self.project), "JWT has expired"),
                (try await idp.token(sub: "alice", expires: soon, issuer: "https://securetoken.google.com/other", audience: Self.project),
                 "JWT issuer is not \(Self.issuer)"),
                (try await idp.token(sub: "alice", expires: soon, issuer: Self.issuer, audience: "other-project"), "JWT audience is not \(Self.project)"),
                (try await idp.token(sub: nil, expires: soon, issuer: Self.issuer, audience: Self.project), "JWT has no sub"),
                (try await idp.token(sub: "../evil", expires: soon, issuer: Self.issuer, audience: Self.project),
                 "JWT sub \"../evil\" has characters outside [A-Za-z0-9_-] (api.auth.userIdClaim can name another claim that holds the user id)"),
                (FakeTokenIssuer.emulatorToken(sub: "alice", expires: soon, issuer: Self.issuer, audience: Self.project), "JWT must use alg RS256 or ES256"),
                (APITests.jwt(sub: "alice", exp: soon.timeIntervalSince1970), "JWT must use alg RS256 or ES256"),
                ("not.a.jwt", "bearer token is neither an app token nor a JWT"),
            ]
            for (token, message) in cases {
                try await call(token) { response in
                    #expect(Self.status(response).code == .unauthorized && Self.status(response).status == "UNAUTHENTICATED", "\(message)")
                    #expect(Self.status(response).message == message)
                }
            }
            // A signature that does not match: the RSA token's payload swapped for another user's.
            let genuine = try await idp.token(sub: "alice", expires: soon, issuer: Self.issuer, audience: Self.project)
            let parts = genuine.split(separator: ".")
            let forgedPayload = FakeTokenIssuer.base64URL(Data(#"{"sub":"mallory","exp":\#(Int(soon.timeIntervalSince1970)),"iss":"\#(Self.issuer)","aud":"\#(Self.project)"}"#.utf8))
            try await call("\(parts[0]).\(forgedPayload).\(parts[2])") { response in
                #expect(Self.status(response).message == "JWT signature is invalid")
            }
        }
    }

    /// An issuer whose subjects cannot be user ids (Auth0's `auth0|…`): `api.auth.userIdClaim` names the claim that
    /// holds the user id instead; a token without it is refused, naming the claim.
    @Test func anotherClaimCanHoldTheUserId() async throws {
        let root = try TemporaryDataRoot()
        let idp = try await FakeTokenIssuer.start()
        defer { idp.stop() }
        let app = try await application(root) { auth in
            auth.jwksURL = idp.jwksURL
            auth.issuer = "https://tenant.auth0.test/"
            auth.userIdClaim = "uid"
        }
        let soon = Date().addingTimeInterval(600)
        try await app.test(.router) { client in
            func call(_ token: String) async throws -> (code: HTTPResponse.Status, status: String?, message: String?) {
                try await client.execute(uri: "/v1/items/alice/none", method: .get, headers: [.authorization: "Bearer \(token)"]) { Self.status($0) }
            }
            let alice = try await idp.token(sub: "auth0|5f7c8ec7c33c6c004bbafe82", expires: soon, issuer: "https://tenant.auth0.test/", audience: nil, uid: "alice")
            #expect(try await call(alice).code == .notFound, "verified as alice (the item simply does not exist)")
            // The claim, not the sub, is the user: alice's token uploads as alice and not as anyone else.
            let png = try Data(contentsOf: TestEnvironment.fixture("images/photos/coffee.png"))
            let upload: HTTPFields = [.authorization: "Bearer \(alice)", .contentType: "image/png"]
            try await client.execute(uri: "/v1/uploads/alice/c1", method: .put, headers: upload, body: ByteBuffer(data: png)) { response in
                #expect(response.status == .created)
            }
            #expect(root.exists("pending/alice/c1.png"))
            try await client.execute(uri: "/v1/uploads/bob/c1", method: .put, headers: upload, body: ByteBuffer(data: png)) { response in
                #expect(response.status != .created && response.status != .ok, "\(response.status)")
            }
            #expect(!root.exists("pending/bob/c1.png"))
            let without = try await idp.token(sub: "auth0|5f7c8ec7c33c6c004bbafe82", expires: soon, issuer: "https://tenant.auth0.test/", audience: nil)
            #expect(try await call(without) == (.unauthorized, "UNAUTHENTICATED", "JWT has no string claim \"uid\" (api.auth.userIdClaim)"))
            let bad = try await idp.token(sub: "x", expires: soon, issuer: "https://tenant.auth0.test/", audience: nil, uid: "a|b")
            #expect(try await call(bad) == (.unauthorized, "UNAUTHENTICATED", "JWT uid \"a|b\" has characters outside [A-Za-z0-9_-]"))
        }
        // The config refuses an empty claim name, naming the key.
        #expect { try PipelineConfig.parse(Data(#"{"dataRoot": "/tmp/x", "api": {"auth": {"userIdClaim": ""}}}"#.utf8), baseDirectory: root.url) } throws: { error in
            "\(error)".contains("userIdClaim") && "\(error)".contains("claim name")
        }
        #expect { try PipelineConfig.parse(Data(#"{"dataRoot": "/tmp/x", "api": {"auth": {"jwksTimeoutSeconds": 0}}}"#.utf8), baseDirectory: root.url) } throws: { error in
            "\(error)".contains("api.auth.jwksTimeoutSeconds") && "\(error)".contains("1...120")
        }
    }

    @Test func cachedKeysOutliveAnOutageAndNoKeysIsUnauthenticated() async throws {
        let root = try TemporaryDataRoot()
        let idp = try await FakeTokenIssuer.start()
        defer { idp.stop() }
        let clock = Mutex(Date())
        let app = try await application(root, now: { clock.withLock { $0 } }) { auth in
            auth.jwksURL = idp.jwksURL
            auth.issuer = "https://idp.test"
            auth.audience = "sluice"
            auth.jwksRefreshSeconds = 60
        }
        try await app.test(.router) { client in
            func status(_ token: String) async throws -> HTTPResponse.Status {
                try await client.execute(uri: "/v1/items/alice/none", method: .get, headers: [.authorization: "Bearer \(token)"]) { $0.status }
            }
            let token = try await idp.token(sub: "alice", expires: Date().addingTimeInterval(3600), issuer: "https://idp.test", audience: "sluice")
            #expect(try await status(token) == .notFound, "verified (the item simply does not exist)")
            idp.goDown()
            clock.withLock { $0 = $0.addingTimeInterval(120) }
            #expect(try await status(token) == .notFound, "the JWKS is stale and unreachable: the cached keys keep working")
            #expect(idp.fetches == 2, "one refresh was tried")
        }
        // A fresh server whose JWKS was never reachable has no keys: UNAUTHENTICATED, never a 500.
        let cold = try await application(root) { auth in auth.jwksURL = idp.jwksURL }
        try await cold.test(.router) { client in
            let token = try await idp.token(sub: "alice", expires: Date().addingTimeInterval(3600), issuer: nil, audience: nil)
            try await client.execute(uri: "/v1/items/alice/none", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                #expect(Self.status(response).code == .unauthorized)
                #expect(Self.status(response).message?.hasPrefix("no keys to verify RS256 tokens: JWKS at") == true, "\(Self.status(response))")
            }
        }
    }

    /// `jwksTimeoutSeconds` bounds the whole fetch: a JWKS whose answer begins at once and then drips (for minutes
    /// here) fails at the timeout, and with no keys yet an RS256 token is UNAUTHENTICATED, instead of the request waiting
    /// for as long as the body drips.
    @Test func aJWKSThatDripsItsBodyTimesOut() async throws {
        let root = try TemporaryDataRoot()
        let idp = try await FakeTokenIssuer.start()
        defer { idp.stop() }
        idp.drip(every: 0.2)
        let app = try await application(root) { auth in
            auth.jwksURL = idp.jwksURL
            auth.jwksTimeoutSeconds = 2
        }
        try await app.test(.router) { client in
            let token = try await idp.token(sub: "alice", expires: Date().addingTimeInterval(3600), issuer: nil, audience: nil)
            try await client.execute(uri: "/v1/items/alice/none", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                #expect(Self.status(response).code == .unauthorized)
                #expect(Self.status(response).message?.hasPrefix("no keys to verify RS256 tokens: JWKS at") == true, "\(Self.status(response))")
            }
        }
        #expect(idp.fetches == 1)
    }

    @Test func aJWKSFileServesAirGappedSetupsAndEmulatorTokensNeedTheSwitch() async throws {
        let root = try TemporaryDataRoot()
        let idp = try await FakeTokenIssuer.start()
        defer { idp.stop() }
        let file = root.url.appendingPathComponent("jwks.json")
        try Data(idp.jwks.utf8).writeClosingOnExec(to: file)
        let soon = Date().addingTimeInterval(600)
        let app = try await application(root) { auth in
            auth.jwksFile = file
            auth.firebaseProjectId = Self.project
            auth.allowEmulatorTokens = true
        }
        try await app.test(.router) { client in
            let signed = try await idp.token(sub: "bob", expires: soon, issuer: Self.issuer, audience: Self.project, kid: "ec-1")
            let emulator = FakeTokenIssuer.emulatorToken(sub: "bob", expires: soon, issuer: Self.issuer, audience: Self.project)
            let wrongProject = FakeTokenIssuer.emulatorToken(sub: "bob", expires: soon, issuer: Self.issuer, audience: "elsewhere")
            for (token, expected) in [(signed, HTTPResponse.Status.notFound), (emulator, .notFound), (wrongProject, .unauthorized)] {
                try await client.execute(uri: "/v1/items/bob/none", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                    #expect(response.status == expected, "\(Self.status(response))")
                }
            }
        }
        #expect(idp.fetches == 0, "a JWKS file is never fetched from the network")
        // The Firebase shortcut: issuer, audience and Google's JWKS URL.
        var firebase = AuthConfig()
        firebase.firebaseProjectId = Self.project
        #expect(firebase.effectiveIssuer == Self.issuer && firebase.effectiveAudience == Self.project)
        #expect(firebase.effectiveJWKSURL == AuthConfig.googleSecureTokenJWKS)
    }

    @Test func shortSecretsAndTheEmulatorSwitchAreCheckedAtStart() throws {
        let root = try TemporaryDataRoot()
        let config = root.config(endpoint: "http://127.0.0.1:9/v1")
        #expect(APISecrets.problem(config: config, environment: ["SLUICE_JWT_SECRET": "short"])?
            .contains("is 5 bytes; at least 32 are required") == true)
        #expect(APISecrets.problem(config: config, environment: ["SLUICE_JWT_SECRET": String(repeating: "k", count: 32)]) == nil)
        let parsed = try PipelineConfig.parse(Data(#"{"api": {"auth": {"jwksFile": "keys/jwks.json", "allowEmulatorTokens": true}}}"#.utf8),
                                              baseDirectory: URL(fileURLWithPath: "/srv/sluice"))
        #expect(parsed.api.auth.jwksFile?.path == "/srv/sluice/keys/jwks.json" && parsed.api.auth.allowEmulatorTokens)
        #expect(throws: ConfigurationError.self) {
            try PipelineConfig.parse(Data(#"{"api": {"auth": {"jwksURL": "ftp://x"}}}"#.utf8), baseDirectory: URL(fileURLWithPath: "/"))
        }
    }
}
