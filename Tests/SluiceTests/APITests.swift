import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SluiceAPI
import SluiceCore
import SluiceServices
import SluiceStore
import SluiceTesting
import Testing

/// `sluice serve`'s routes in process (Hummingbird's router testing) over a real data root.
@Suite(.serialized) struct APITests {
    static let environment = ["SLUICE_APP_TOKENS": "app-1, app-2", "SLUICE_JWT_SECRET": "jwt-secret-of-at-least-32-bytes!!"]

    /// alice/a approved (rocket), alice/r in review, bob/b approved; text item t1 by alice.
    func makeServices(_ root: TemporaryDataRoot) async throws -> APIServices {
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "alice", name: "a.jpg")
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "bob", name: "b.png")
        try await runOnce(root, server: clean)
        let possible = try await FakeVisionServer.always(SafeSearch(adult: .possible, spoof: .unlikely, medical: .unlikely,
                                                                    violence: .unlikely, racy: .unlikely))
        defer { possible.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/chelsea.png"), user: "alice", name: "r.png")
        let store = try await runOnce(root, server: possible)
        try await store.recordVerdict(Item(id: "t1", kind: .text, userId: "alice", status: .blocked, reason: "Content contains prohibited terms: shit"))
        let config = root.config(endpoint: clean.endpoint)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return try await Services.live(config: config, environment: [:], logger: logger).api()
    }

    func app(_ services: APIServices) -> some ApplicationProtocol {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return buildApplication(services: services, environment: Self.environment, logger: logger)
    }

    static func jwt(sub: String, exp: Double, secret: String = "jwt-secret-of-at-least-32-bytes!!", alg: String = "HS256") -> String {
        func b64(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let header = b64(Data(#"{"alg":"\#(alg)","typ":"JWT"}"#.utf8))
        let payload = b64(Data(#"{"sub":"\#(sub)","exp":\#(Int(exp))}"#.utf8))
        let signature = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(payload)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "\(header).\(payload).\(b64(Data(signature)))"
    }

    /// A 1×1 PNG.
    static let tinyPNG: [UInt8] = Array(Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==") ?? Data())

    static func envelope(_ buffer: ByteBuffer) -> (status: String?, message: String?) {
        let object = (try? JSONSerialization.jsonObject(with: Data(buffer: buffer))) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        return (error?["status"] as? String, error?["message"] as? String)
    }

    @Test func credentialsAreRequiredExceptForHealth() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        try await app(services).test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("\"store\":\"reachable\""))
            }
            try await client.execute(uri: "/v1/items/alice/a", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect(Self.envelope(response.body).status == "UNAUTHENTICATED")
            }
            try await client.execute(uri: "/v1/items/alice/a", method: .get, headers: [HTTPField.Name("X-App-Token")!: "nope"]) { response in
                #expect(response.status == .unauthorized)
                #expect(Self.envelope(response.body).message == "X-App-Token is not a valid app token")
            }
            let expired = Self.jwt(sub: "alice", exp: Date().timeIntervalSince1970 - 10)
            try await client.execute(uri: "/v1/items/alice/a", method: .get, headers: [.authorization: "Bearer \(expired)"]) { response in
                #expect(Self.envelope(response.body).message == "JWT has expired")
            }
            let forged = Self.jwt(sub: "alice", exp: Date().timeIntervalSince1970 + 600, secret: "wrong")
            try await client.execute(uri: "/v1/items/alice/a", method: .get, headers: [.authorization: "Bearer \(forged)"]) { response in
                #expect(Self.envelope(response.body).message == "JWT signature is invalid")
            }
            let none = Self.jwt(sub: "alice", exp: Date().timeIntervalSince1970 + 600, alg: "none")
            try await client.execute(uri: "/v1/items/alice/a", method: .get, headers: [.authorization: "Bearer \(none)"]) { response in
                #expect(Self.envelope(response.body).message == "JWT must use alg HS256")
            }
        }
    }

    @Test func itemsShowTheSeedImageStatusToWhoMaySeeThem() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        let alice = Self.jwt(sub: "alice", exp: Date().timeIntervalSince1970 + 600)
        try await app(services).test(.router) { client in
            try await client.execute(uri: "/v1/items/alice/a", method: .get, headers: [HTTPField.Name("X-App-Token")!: "app-2"]) { response in
                #expect(response.status == .ok)
                let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                #expect(object["imageStatus"] as? String == "approved" && object["status"] as? String == "approved")
                #expect(object["createdAt"] is String && object["updatedAt"] is String)
            }
            try await client.execute(uri: "/v1/items/alice/r", method: .get, headers: [.authorization: "Bearer app-1"]) { response in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                #expect(object["status"] as? String == "review" && object["imageStatus"] as? String == "pending")
                #expect((object["reason"] as? String)?.contains("POSSIBLE") == true)
            }
            try await client.execute(uri: "/v1/items/t1", method: .get, headers: [.authorization: "Bearer \(alice)"]) { response in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                #expect(object["imageStatus"] as? String == "blocked" && object["kind"] as? String == "text")
            }
            // A user sees their own items, and other users' approved images (seed 000: all users can read approved
            // images), but nothing else of theirs.
            try await client.execute(uri: "/v1/items/bob/b", method: .get, headers: [.authorization: "Bearer \(alice)"]) { response in
                #expect(response.status == .ok)
            }
            let bob = Self.jwt(sub: "bob", exp: Date().timeIntervalSince1970 + 600)
            try await client.execute(uri: "/v1/items/alice/r", method: .get, headers: [.authorization: "Bearer \(bob)"]) { response in
                #expect(response.status == .notFound, "alice/r is in review: only alice sees it")
                #expect(Self.envelope(response.body).status == "NOT_FOUND")
            }
            try await client.execute(uri: "/v1/items/alice/nothing", method: .get, headers: [.authorization: "Bearer app-1"]) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/v1/items/al%20ice/a", method: .get, headers: [.authorization: "Bearer app-1"]) { response in
                #expect(response.status == .badRequest)
                #expect(Self.envelope(response.body).status == "INVALID_ARGUMENT")
            }
        }
    }

    /// `X-User-Id` with an app token asks on that user's behalf: the backend then reads, erases, uploads and changes
    /// only what that user may; without the header it acts as the backend.
    @Test func aBackendActingForAUserActsOnlyOnThatUsersThings() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        try await services.store.recordVerdict(Item(id: "t2", kind: .text, userId: "bob", status: .blocked, reason: "Content contains prohibited terms: shit"))
        let forAlice: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", HTTPField.Name("X-User-Id")!: "alice", .contentType: "application/json"]
        let backend: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "application/json"]
        let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
        try await app(services).test(.router) { client in
            try await client.execute(uri: "/v1/items/t2", method: .get, headers: forAlice) { response in
                #expect(response.status == .notFound, "bob's blocked message is not alice's to read")
            }
            try await client.execute(uri: "/v1/items/t2", method: .get, headers: backend) { response in #expect(response.status == .ok) }
            try await client.execute(uri: "/v1/items/alice/r", method: .get, headers: forAlice) { response in #expect(response.status == .ok) }
            for (method, uri, body) in [(HTTPRequest.Method.delete, "/v1/items/t2", ""), (.delete, "/v1/items/bob/b", ""), (.delete, "/v1/users/bob", ""),
                                        (.put, "/v1/users/bob/follows/carol", ""), (.put, "/v1/users/bob/profile", #"{"trusted": true}"#),
                                        (.post, "/v1/functions/deleteProfilePicture", #"{"data": {"userId": "bob"}}"#)] {
                try await client.execute(uri: uri, method: method, headers: forAlice, body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .forbidden, "\(method) \(uri)")
                    #expect(Self.envelope(response.body).status == "PERMISSION_DENIED", "\(method) \(uri)")
                    #expect(Self.envelope(response.body).message?.contains("alice") == true, "\(Self.envelope(response.body))")
                }
            }
            var upload = forAlice
            upload[.contentType] = "image/jpeg"
            try await client.execute(uri: "/v1/uploads/bob/x1", method: .put, headers: upload, body: ByteBuffer(bytes: jpeg)) { response in
                #expect(response.status == .forbidden)
            }
            #expect(!root.exists("pending/bob/x1.jpg"))
            #expect(try await services.store.item("t2") != nil, "nothing of bob's was erased")
            #expect(try await services.store.item("bob/b") != nil, "nothing of bob's was erased")
            #expect(try await services.store.relationUser("bob")?.trusted != true)
            // What only the backend itself does is refused for every user, alice's own profile's trust included.
            for (method, uri, body) in [(HTTPRequest.Method.get, "/v1/reports", ""), (.get, "/v1/banks", ""), (.get, "/metrics", ""),
                                        (.put, "/v1/users/alice/profile", #"{"trusted": true}"#),
                                        (.put, "/v1/users/alice/profile", #"{"createdAt": 1000}"#)] {
                try await client.execute(uri: uri, method: method, headers: forAlice, body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .forbidden && Self.envelope(response.body).message?.contains("no user may") == true, "\(method) \(uri)")
                }
            }
            try await client.execute(uri: "/v1/users/alice/profile", method: .put, headers: forAlice,
                                     body: ByteBuffer(string: #"{"messagePrivacy": "anyone"}"#)) { response in
                #expect(response.status == .ok, "her own privacy may be set for her")
            }
            try await client.execute(uri: "/v1/items/t1", method: .delete, headers: forAlice) { response in
                #expect(response.status == .ok, "alice's own message")
            }
            try await client.execute(uri: "/v1/items/t2", method: .delete, headers: backend) { response in
                #expect(response.status == .ok, "the backend itself")
            }
        }
    }

    @Test func onlyApprovedImagesAreServedWithCachingHeaders() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        let token: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1"]
        try await app(services).test(.router) { client in
            var etag = ""
            try await client.execute(uri: "/v1/images/approved/alice/a.jpg", method: .get, headers: token) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/jpeg")
                #expect(response.headers[.cacheControl] == "private, max-age=3600")
                etag = response.headers[.eTag] ?? ""
                #expect(etag.hasPrefix("\"") && etag.count > 10)
                #expect(Data(buffer: response.body) == (try? Data(contentsOf: root.file("approved/alice/a.jpg"))))
            }
            // The tag itself, its weak form, `*` and a list holding it all answer 304; another tag does not.
            for (value, status) in [(etag, HTTPResponse.Status.notModified), ("W/" + etag, .notModified), ("*", .notModified),
                                    (#""other", "# + etag, .notModified), (#""other""#, .ok)] {
                var conditional = token
                conditional[.ifNoneMatch] = value
                try await client.execute(uri: "/v1/images/approved/alice/a.jpg", method: .get, headers: conditional) { response in
                    #expect(response.status == status, "If-None-Match: \(value)")
                }
            }
            // HEAD: the same status and headers, the length, no body.
            let size = try Data(contentsOf: root.file("approved/alice/a.jpg")).count
            try await client.execute(uri: "/v1/images/approved/alice/a.jpg", method: .head, headers: token) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.eTag] == etag && response.headers[.contentLength] == String(size))
                #expect(response.body.readableBytes == 0)
            }
            try await client.execute(uri: "/v1/images/review/alice/r.png", method: .head, headers: token) { response in
                #expect(response.status == .notFound)
            }
            // Every GET route answers HEAD (load balancers probe /healthz with it); a route without GET says what it has.
            for uri in ["/healthz", "/v1/items/alice/a", "/v1/reports", "/v1/banks"] {
                let length = try await client.execute(uri: uri, method: .get, headers: token) { Int($0.headers[.contentLength] ?? "") ?? $0.body.readableBytes }
                try await client.execute(uri: uri, method: .head, headers: token) { response in
                    #expect(response.status == .ok, "\(uri)")
                    #expect(response.body.readableBytes == 0 && response.headers[.contentLength] == String(length), "\(uri)")
                }
            }
            try await client.execute(uri: "/v1/functions/validate_text", method: .head, headers: token) { response in
                #expect(response.status == .methodNotAllowed && response.headers[.allow] == "POST")
            }
            try await client.execute(uri: "/v1/images/thumbnails/alice/a.jpg", method: .get, headers: token) { response in
                #expect(response.status == .ok)
                #expect(JPEGInspector.dimensions(Data(buffer: response.body)).map { max($0.width, $0.height) } == 200)
            }
            for uri in ["/v1/images/approved/alice/r.jpg", "/v1/images/approved/alice/r.png", "/v1/images/review/alice/r.png",
                        "/v1/images/quarantine/alice/a.jpg", "/v1/images/approved/alice/..%2F..%2Fsluice.sqlite",
                        "/v1/images/approved/../a.jpg"] {
                try await client.execute(uri: uri, method: .get, headers: token) { response in
                    #expect(response.status == .notFound || response.status == .badRequest, "\(uri): \(response.status)")
                    #expect(Self.envelope(response.body).status != nil, "\(uri) answered without the envelope")
                    #expect(response.headers[.contentType] == "application/json")
                }
            }
        }
    }

    @Test func callableFunctionsSpeakTheFirebaseProtocol() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        let token: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "application/json"]
        try await app(services).test(.router) { client in
            for path in ["/v1/functions/validate_text", "/demo-project/us-central1/validate_text"] {
                try await client.execute(uri: path, method: .post, headers: token,
                                         body: ByteBuffer(string: #"{"data": {"text": "what the f.u.c.k", "context": "chat"}}"#)) { response in
                    #expect(response.status == .ok)
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                    let result = try #require(object["result"] as? [String: Any])
                    #expect(result["allowed"] as? Bool == false)
                    #expect(result["reason"] as? String == "Content contains prohibited terms: fuck")
                }
            }
            try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: token,
                                     body: ByteBuffer(string: #"{"data": {"text": "a cocktail in Scunthorpe"}}"#)) { response in
                let result = try #require((try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["result"] as? [String: Any])
                #expect(result["allowed"] as? Bool == true)
                #expect(result["reason"] is NSNull)
            }
            try await client.execute(uri: "/v1/functions/detectPriority", method: .post, headers: token,
                                     body: ByteBuffer(string: #"{"data": {"messageText": "server down, need help ASAP!!!"}}"#)) { response in
                let result = try #require((try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["result"] as? [String: Any])
                #expect(result["priority"] as? String == "high" && result["isUrgent"] as? Bool == true)
                #expect(result["urgencyScore"] is Int && result["urgencyIndicators"] is [String] && result["reason"] is String)
            }
            let bad: [(String, String, String)] = [
                ("/v1/functions/validate_text", "not json", "body is not valid JSON (Invalid value around character 1): it must be a JSON object {\"data\": {…}}"),
                ("/v1/functions/validate_text", "[1]", "body is not a JSON object (an array): it must be a JSON object {\"data\": {…}}"),
                ("/v1/functions/validate_text", #"{"text": "hi"}"#, "missing \"data\" object"),
                ("/v1/functions/validate_text", #"{"data": []}"#, "\"data\" must be a JSON object"),
                ("/v1/functions/validate_text", #"{"data": "hi"}"#, "\"data\" must be a JSON object"),
                // The decoder calls a number it cannot hold "not valid JSON": the field is named.
                ("/v1/functions/summarizeThread", #"{"data": {"conversationId": "c", "messageLimit": 1.5}}"#, "data.messageLimit must be an integer"),
                ("/v1/functions/smartSearch", #"{"data": {"query": "x", "limit": 1e30}}"#, "data.limit must be an integer"),
                ("/v1/functions/healthCheck", #"{"foo": 1}"#, "unknown field \"foo\": the body is {\"data\": null}, {\"data\": {}} or {}"),
                ("/v1/functions/get_rate_limits", #"{"data": null, "extra": true}"#, "unknown field \"extra\": the body is {\"data\": null}, {\"data\": {}} or {}"),
                ("/v1/functions/validate_text", #"{"data": {"text": 5}}"#, "data.text must be a string"),
                ("/v1/functions/validate_text", #"{"data": {"text": ""}}"#, "text is empty"),
                ("/v1/functions/detectPriority", #"{"data": {}}"#, "data.messageText must be a non-empty string"),
                ("/v1/functions/detectPriority", "{\"data\": {\"messageText\": \"\(String(repeating: "a", count: 10_001))\"}}",
                 "data.messageText is 10001 characters long, over the 10000 limit (text.maxLength)"),
                // A NUL would be cut off (SQLite) or refused (PostgreSQL) by a store: refused, named, in every body.
                ("/v1/functions/submit_report", #"{"data": {"messageId": "m3", "category": "spam", "description": "a\u0000b"}}"#,
                 #"data.description may not contain a NUL character (\u0000)"#),
            ]
            for (path, body, message) in bad {
                try await client.execute(uri: path, method: .post, headers: token, body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .badRequest, "\(body)")
                    #expect(Self.envelope(response.body) == ("INVALID_ARGUMENT", message))
                }
            }
            // validate_text stores nothing: a NUL is judged as an invisible character inside the word.
            try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: token,
                                     body: ByteBuffer(string: #"{"data": {"text": "fu\u0000ck"}}"#)) { response in
                #expect(response.status == .ok && String(buffer: response.body).contains(#""allowed":false"#), "\(String(buffer: response.body))")
            }
            try await client.execute(uri: "/v1/functions/nope", method: .post, headers: token, body: ByteBuffer(string: #"{"data": {}}"#)) { response in
                #expect(response.status == .notFound)
                #expect(Self.envelope(response.body).status == "NOT_FOUND")
            }
            try await client.execute(uri: "/v1/functions/validate_text", method: .get, headers: token) { response in
                #expect(response.status.code < 500)
                #expect(Self.envelope(response.body).status != nil)
            }
        }
    }

    /// detectPriority scores a message as sent now, in priority.timeZone: "by 5pm" asked at 16:50 there is due in 10
    /// minutes (high); at noon it is not.
    @Test func detectPriorityCountsATimeOfDayFromNow() async throws {
        let root = try TemporaryDataRoot()
        var config = root.config(endpoint: "http://127.0.0.1:9/v1")
        config.priority.timeZone = "America/New_York"
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let services = try await Services.live(config: config, environment: [:], logger: logger).api()
        let token: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "application/json"]
        for (hour, band) in [(16, "high"), (12, "medium")] {
            let now = PriorityTests.sentInNewYork(hour, 50)
            let application = buildApplication(services: services, environment: Self.environment, now: { now }, logger: logger)
            try await application.test(.router) { client in
                try await client.execute(uri: "/v1/functions/detectPriority", method: .post, headers: token,
                                         body: ByteBuffer(string: #"{"data": {"messageText": "can you call the bank by 5pm"}}"#)) { response in
                    #expect(response.status == .ok)
                    let result = try #require((try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["result"] as? [String: Any])
                    #expect(result["priority"] as? String == band, "at \(hour):50: \(result)")
                    #expect(((result["urgencyIndicators"] as? [String]) ?? []).contains("deadline: by 5pm, 10 min after it was sent") == (band == "high"))
                }
            }
        }
    }

    @Test func uploadsLandInPendingForTheDaemon() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        let fixed = Date(timeIntervalSince1970: 1_800_000_000)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let application = buildApplication(services: services, environment: Self.environment, now: { fixed }, logger: logger)
        let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
        let app: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "image/jpeg"]
        let imageId = try await application.test(.router) { client -> String in
            let imageId = try await client.execute(uri: "/v1/uploads/carol", method: .post, headers: app, body: ByteBuffer(bytes: jpeg)) { response -> String in
                #expect(response.status == .created)
                let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                #expect(object["imageStatus"] as? String == "pending")
                return object["imageId"] as? String ?? ""
            }
            #expect(root.exists("pending/carol/\(imageId).jpg"))
            #expect(try Data(contentsOf: root.file("pending/carol/\(imageId).jpg")) == jpeg)
            try await client.execute(uri: "/v1/uploads/carol", method: .post, headers: app, body: ByteBuffer(string: "hello")) { response in
                #expect(response.status == .badRequest)
                #expect(Self.envelope(response.body).message?.hasPrefix("not an image") == true)
            }
            var text = app
            text[.contentType] = "text/plain"
            try await client.execute(uri: "/v1/uploads/carol", method: .post, headers: text, body: ByteBuffer(bytes: jpeg)) { response in
                #expect(Self.envelope(response.body) == ("INVALID_ARGUMENT", "Content-Type must be an image type"))
            }
            let bob = Self.jwt(sub: "bob", exp: 1_800_000_600)
            try await client.execute(uri: "/v1/uploads/carol", method: .post, headers: [.authorization: "Bearer \(bob)", .contentType: "image/jpeg"],
                                     body: ByteBuffer(bytes: jpeg)) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/v1/uploads/..", method: .post, headers: app, body: ByteBuffer(bytes: jpeg)) { response in
                #expect(response.status.code < 500)
            }
            // 20 uploads an hour per user: one is done; the 21st is refused.
            var acting = app
            acting[HTTPField.Name("X-User-Id")!] = "dave"
            for _ in 0..<20 {
                try await client.execute(uri: "/v1/uploads/dave", method: .post, headers: acting, body: ByteBuffer(bytes: jpeg)) { response in
                    #expect(response.status == .created)
                }
            }
            try await client.execute(uri: "/v1/uploads/dave", method: .post, headers: acting, body: ByteBuffer(bytes: jpeg)) { response in
                #expect(response.status == .tooManyRequests)
                #expect(Self.envelope(response.body).status == "RESOURCE_EXHAUSTED")
                #expect(Self.envelope(response.body).message?.contains("resets at 2027-01-15T09:00:00Z") == true, "\(Self.envelope(response.body))")
            }
            return imageId
        }
        // The daemon moderates what the API wrote.
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let store = try await runOnce(root, server: clean)
        #expect(try await store.item("carol/\(imageId)")?.status == .approved)
    }

    /// Several uploads of one id at once: one is stored (201), the same bytes again are 200 and other bytes 409 —
    /// never a 500 — and only the stored one uses upload quota.
    @Test func uploadsOfOneIdAtOnceAreAnsweredOneByOne() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        let files = try ["rocket.jpg", "coffee.png", "chelsea.png"].map { try Data(contentsOf: TestEnvironment.fixture("images/photos/\($0)")) }
        let alice = Self.jwt(sub: "alice", exp: Date().timeIntervalSince1970 + 600)
        try await app(services).test(.live) { client in
            let port = try #require(client.port)
            // Each on its own connection (the test client's one connection would take them in turn).
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<9 {
                    let body = files[index % 3]
                    group.addTask {
                        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/uploads/alice/same")
                        request.method = .PUT
                        request.headers.add(name: "Authorization", value: "Bearer \(alice)")
                        request.headers.add(name: "Content-Type", value: "image/jpeg")
                        request.body = .bytes(ByteBuffer(bytes: body))
                        return Int(try await HTTPClient.shared.execute(request, timeout: .seconds(30)).status.code)
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 201 }.count == 1, "\(statuses)")
            #expect(statuses.allSatisfy { [200, 201, 409].contains($0) }, "\(statuses)")
            #expect(statuses.filter { $0 == 409 }.count == 6, "the two other images, three times each: \(statuses)")
            try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post,
                                     headers: [.authorization: "Bearer \(alice)", .contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"data": {}}"#)) { response in
                let result = try #require((try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["result"] as? [String: [String: Any]])
                #expect(result["image_upload"]?["current"] as? Int == 1)
            }
        }
        #expect(services.layout.pendingUploads(of: try #require(ImageRef(userId: "alice", imageId: "same"))).count == 1)
    }

    @Test func reportsAndRateLimits() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        let fixed = Date(timeIntervalSince1970: 1_800_000_030)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let application = buildApplication(services: services, environment: Self.environment, now: { fixed }, logger: logger)
        let erin: HTTPFields = [.authorization: "Bearer \(Self.jwt(sub: "erin", exp: 1_800_000_600))", .contentType: "application/json"]
        try await application.test(.router) { client in
            try await client.execute(uri: "/v1/functions/submit_report", method: .post, headers: erin,
                                     body: ByteBuffer(string: #"{"data": {"messageId": "t1", "category": "harassment", "description": "rude"}}"#)) { response in
                #expect(response.status == .ok)
                let result = try #require((try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["result"] as? [String: Any])
                #expect(result["success"] as? Bool == true)
                #expect((result["reportId"] as? String)?.hasPrefix("rpt_") == true)
            }
            #expect(try await services.store.reports().first?.reporterUserId == "erin")
            for (body, message) in [(#"{"data": {"messageId": "t1", "category": "rude"}}"#, "data.category must be one of spam, harassment, inappropriate, other"),
                                    (#"{"data": {"category": "spam"}}"#, "data.messageId must be a string of 1-256 characters"),
                                    ("{\"data\": {\"messageId\": \"t1\", \"category\": \"spam\", \"description\": \"\(String(repeating: "x", count: 1001))\"}}", "data.description is 1001 characters, over 1000")] {
                try await client.execute(uri: "/v1/functions/submit_report", method: .post, headers: erin, body: ByteBuffer(string: body)) { response in
                    #expect(Self.envelope(response.body) == ("INVALID_ARGUMENT", message))
                }
            }
            for _ in 0..<2 {
                try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: erin,
                                         body: ByteBuffer(string: #"{"data": {"text": "hello"}}"#)) { _ in }
            }
            // Refused input is not a message: it uses none of the quota (the count below stays 2).
            try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: erin,
                                     body: ByteBuffer(string: #"{"data": {"text": ""}}"#)) { response in
                #expect(response.status == .badRequest)
            }
            try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post,
                                     headers: [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "application/json"],
                                     body: ByteBuffer(string: #"{"data": {}}"#)) { response in
                #expect(Self.envelope(response.body) == ("UNAUTHENTICATED", "no user: send X-User-Id with the app token, or a user token"))
            }
            try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post, headers: erin, body: ByteBuffer(string: #"{"data": {}}"#)) { response in
                let result = try #require((try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["result"] as? [String: [String: Any]])
                #expect(result["text_message"]?["current"] as? Int == 2)
                #expect(result["text_message"]?["remaining"] as? Int == 58)
                #expect(result["text_message"]?["windowSeconds"] as? Int == 60)
                #expect(result["text_message"]?["resetAt"] as? String == "2027-01-15T08:01:00Z")
                #expect(result["report"]?["current"] as? Int == 1 && result["report"]?["limit"] as? Int == 10)
                #expect(result["image_upload"]?["current"] as? Int == 0 && result["image_upload"]?["limit"] as? Int == 20)
            }
            for _ in 0..<58 {
                try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: erin,
                                         body: ByteBuffer(string: #"{"data": {"text": "hello"}}"#)) { response in #expect(response.status == .ok) }
            }
            try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: erin,
                                     body: ByteBuffer(string: #"{"data": {"text": "hello"}}"#)) { response in
                #expect(response.status == .tooManyRequests)
                #expect(Self.envelope(response.body).status == "RESOURCE_EXHAUSTED")
            }
        }
    }

    @Test func naughtyStringsNeverCauseA500() async throws {
        let root = try TemporaryDataRoot()
        let services = try await makeServices(root)
        let strings = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: TestEnvironment.fixture("text/blns.json"))) as? [String])
        let token: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "application/json"]
        try await app(services).test(.router) { client in
            for string in strings {
                let body = try JSONSerialization.data(withJSONObject: ["data": ["text": string]])
                try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: token, body: ByteBuffer(bytes: body)) { response in
                    #expect(response.status == .ok || response.status == .badRequest, "\(string.debugDescription): \(response.status)")
                }
                let escaped = string.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "x"
                try await client.execute(uri: "/v1/items/\(escaped)", method: .get, headers: token) { response in
                    #expect(response.status.code < 500, "\(string.debugDescription): \(response.status)")
                }
                // As a user id and an image id in every path that takes one, and in the other callables' fields.
                for (method, uri) in [(HTTPRequest.Method.get, "/v1/items/\(escaped)/a"), (.get, "/v1/items/alice/\(escaped)"),
                                      (.get, "/v1/images/approved/\(escaped)/a.jpg"), (.get, "/v1/images/thumbnails/alice/\(escaped).jpg"),
                                      (.post, "/v1/uploads/\(escaped)"), (.put, "/v1/uploads/\(escaped)/a"), (.put, "/v1/uploads/alice/\(escaped)"),
                                      (.get, "/v1/items/bob/\(escaped)/events"), (.delete, "/v1/items/\(escaped)"),
                                      (.delete, "/v1/items/\(escaped)/a"), (.delete, "/v1/users/\(escaped)"),
                                      (.put, "/v1/users/\(escaped)/blocks/alice"), (.get, "/v1/users/alice/can-message/\(escaped)"),
                                      (.post, "/v1/items/alice/\(escaped)/appeal"), (.post, "/v1/reports/\(escaped)/resolve")] {
                    var headers = token
                    headers[.contentType] = "image/png"
                    try await client.execute(uri: uri, method: method, headers: headers, body: ByteBuffer(bytes: Self.tinyPNG)) { response in
                        #expect(response.status.code < 500, "\(uri): \(response.status)")
                        if response.status.code >= 400 { #expect(Self.envelope(response.body).status != nil, "\(uri)") }
                    }
                }
                for data in [["messageId": string, "category": "spam"], ["messageText": string], ["text": string, "context": string], ["userId": string],
                             ["recipientId": string], ["blockedID": string, "blockerID": "alice"]] {
                    let name = data["messageId"] != nil ? "submit_report" : data["messageText"] != nil ? "detectPriority"
                        : data["userId"] != nil ? "deleteProfilePicture" : data["recipientId"] != nil ? "canMessage"
                        : data["blockedID"] != nil ? "blockUser" : "validate_text"
                    let body = try JSONSerialization.data(withJSONObject: ["data": data])
                    // canMessage needs a user: the app token acts for alice there.
                    var headers = token
                    if name == "canMessage" { headers[HTTPField.Name("X-User-Id")!] = "alice" }
                    try await client.execute(uri: "/v1/functions/\(name)", method: .post, headers: headers, body: ByteBuffer(bytes: body)) { response in
                        #expect(response.status == .ok || response.status == .badRequest, "\(name) \(string.debugDescription): \(response.status)")
                    }
                }
            }
        }
    }
}
