import Foundation
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

/// What the seed apps' own clients do, as they do it: `call(nil)` callables, seed 004's healthCheck and
/// deleteProfilePicture, approved images shared with every signed-in user, client-chosen upload ids, live
/// status over Server-Sent Events, and the Caption API's error model.
@Suite(.serialized) struct SeedClientTests {
    static let environment = ["SLUICE_APP_TOKENS": "app-1", "SLUICE_JWT_SECRET": "jwt-secret-of-at-least-32-bytes!!"]
    static let app: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "application/json"]

    static func application(_ root: TemporaryDataRoot,
                            edit: (inout PipelineConfig) -> Void = { _ in }) async throws -> some ApplicationProtocol {
        try await application(root, now: Date.init, edit: edit)
    }

    static func application(_ root: TemporaryDataRoot, now: @escaping @Sendable () -> Date,
                            edit: (inout PipelineConfig) -> Void) async throws -> some ApplicationProtocol {
        let config = root.config(endpoint: "http://127.0.0.1:9/v1", edit: edit)
        return buildApplication(services: try await Services.live(config: config, environment: [:], logger: quietLogger).api(),
                                environment: environment, now: now, logger: quietLogger)
    }

    static func json(_ buffer: ByteBuffer) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(buffer: buffer))) as? [String: Any]) ?? [:]
    }

    static func user(_ id: String, now: Date = Date()) -> HTTPFields {
        [.authorization: "Bearer \(APITests.jwt(sub: id, exp: now.timeIntervalSince1970 + 600))", .contentType: "application/json"]
    }

    @Test func callablesTakeNullDataAndAnswerInTheSeedShapes() async throws {
        let root = try TemporaryDataRoot()
        let fixed = Date(timeIntervalSince1970: 1_800_000_030)
        try await Self.application(root, now: { fixed }) { config in
            config.limits.rate.detectPriority = RateLimitRule(limit: 2, windowSeconds: 60)
            config.limits.rate.textMessage = RateLimitRule(limit: 5, windowSeconds: 120)
        }.test(.router) { client in
            // The Firebase SDK sends call(nil) as {"data": null}; some clients send no data at all, or no body.
            for body in [#"{"data": null}"#, "{}", ""] {
                try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post, headers: Self.user("erin", now: fixed),
                                         body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .ok, "\(body)")
                    let result = Self.json(response.body)["result"] as? [String: [String: Any]]
                    #expect(result?["text_message"]?["limit"] as? Int == 5 && result?["text_message"]?["windowSeconds"] as? Int == 120)
                    #expect(result?["image_upload"]?["limit"] as? Int == 20 && result?["report"]?["limit"] as? Int == 10)
                }
            }
            try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post, headers: Self.user("erin", now: fixed),
                                     body: ByteBuffer(string: #"{"data": {"x": 1}}"#)) { response in
                #expect(response.status == .badRequest)
            }
            // Without a user there are no limits to report.
            try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post, headers: Self.app,
                                     body: ByteBuffer(string: #"{"data": null}"#)) { response in
                #expect(response.status == .unauthorized && (Self.json(response.body)["error"] as? [String: Any])?["status"] as? String == "UNAUTHENTICATED")
            }
            // Seed 004's healthCheck.
            try await client.execute(uri: "/demo-project/us-central1/healthCheck", method: .post, headers: Self.user("erin", now: fixed),
                                     body: ByteBuffer(string: "{}")) { response in
                #expect(response.status == .ok)
                let result = try #require(Self.json(response.body)["result"] as? [String: Any])
                #expect(result["status"] as? String == "unhealthy", "the vision provider (port 9) does not answer")
                #expect((result["message"] as? String)?.contains("vision provider google-vision unreachable") == true)
                #expect(result["timestamp"] as? String == "2027-01-15T08:00:30.000Z")
            }
            // detectPriority is limited per user too (limits.rate.detectPriority).
            for expected in [HTTPResponse.Status.ok, .ok, .tooManyRequests] {
                try await client.execute(uri: "/v1/functions/detectPriority", method: .post, headers: Self.user("erin", now: fixed),
                                         body: ByteBuffer(string: #"{"data": {"messageText": "help!"}}"#)) { response in
                    #expect(response.status == expected)
                }
            }
            // A Firebase-shaped URL with a project id that is not one: no such endpoint.
            try await client.execute(uri: "/v1/x/validate_text", method: .post, headers: Self.app,
                                     body: ByteBuffer(string: #"{"data": {"text": "hi"}}"#)) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test func approvedImagesAreSharedAndUploadsKeepTheClientsId() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "alice", name: "shared.jpg")
        try await runOnce(root, server: clean)
        let bob = Self.user("bob")
        try await Self.application(root).test(.router) { client in
            // Seed 000: all users can read approved images (a message's recipient sees the sender's photo).
            for uri in ["/v1/images/approved/alice/shared.jpg", "/v1/images/thumbnails/alice/shared.jpg", "/v1/items/alice/shared"] {
                try await client.execute(uri: uri, method: .get, headers: bob) { response in
                    #expect(response.status == .ok, "\(uri)")
                }
            }
            // Client-chosen ids, as the seed's pending/{userId}/{imageId}.
            let png = try Data(contentsOf: TestEnvironment.fixture("images/photos/coffee.png"))
            let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
            var headers = Self.user("bob")
            headers[.contentType] = "image/png"
            try await client.execute(uri: "/v1/uploads/bob/msg-42", method: .put, headers: headers, body: ByteBuffer(data: png)) { response in
                #expect(response.status == .created)
                #expect(Self.json(response.body)["id"] as? String == "bob/msg-42" && Self.json(response.body)["userId"] as? String == "bob")
            }
            #expect(root.exists("pending/bob/msg-42.png"))
            try await client.execute(uri: "/v1/uploads/bob/msg-42", method: .put, headers: headers, body: ByteBuffer(data: png)) { response in
                #expect(response.status == .ok, "the same bytes again: nothing new")
            }
            try await client.execute(uri: "/v1/uploads/bob/msg-42", method: .put, headers: headers, body: ByteBuffer(data: jpeg)) { response in
                #expect(response.status == .conflict && (Self.json(response.body)["error"] as? [String: Any])?["status"] as? String == "ALREADY_EXISTS")
            }
            try await client.execute(uri: "/v1/uploads/alice/msg-43", method: .put, headers: headers, body: ByteBuffer(data: png)) { response in
                #expect(response.status == .notFound, "users upload only for themselves")
            }
            try await client.execute(uri: "/v1/uploads/bob/has%20space", method: .put, headers: headers, body: ByteBuffer(data: png)) { response in
                #expect(response.status == .badRequest)
            }
            // bob's upload is pending: he reads it as pending; alice cannot see it at all.
            try await client.execute(uri: "/v1/items/bob/msg-42", method: .get, headers: bob) { response in
                #expect(response.status == .ok && Self.json(response.body)["status"] as? String == "pending", "\(String(buffer: response.body))")
            }
            for uri in ["/v1/items/bob/msg-42/events", "/v1/items/bob/msg-42"] {
                try await client.execute(uri: uri, method: .get, headers: Self.user("alice")) { response in
                    #expect(response.status == .notFound, "\(uri)")
                }
            }
        }
        // Once judged, an upload under the same id never replaces the item: the same bytes answer with its status,
        // other bytes are refused (a blocked image under appeal, an approved one with its files).
        try await runOnce(root, server: clean)
        let approved = try Data(contentsOf: root.file("approved/bob/msg-42.jpg"))
        try await Self.application(root).test(.router) { client in
            let png = try Data(contentsOf: TestEnvironment.fixture("images/photos/coffee.png"))
            let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
            var headers = Self.user("bob")
            headers[.contentType] = "image/png"
            try await client.execute(uri: "/v1/uploads/bob/msg-42", method: .put, headers: headers, body: ByteBuffer(data: png)) { response in
                #expect(response.status == .ok && Self.json(response.body)["status"] as? String == "approved", "\(String(buffer: response.body))")
            }
            try await client.execute(uri: "/v1/uploads/bob/msg-42", method: .put, headers: headers, body: ByteBuffer(data: jpeg)) { response in
                #expect(response.status == .conflict && (Self.json(response.body)["error"] as? [String: Any])?["status"] as? String == "ALREADY_EXISTS")
            }
        }
        #expect(root.allFiles().filter { $0.hasPrefix("pending/") }.isEmpty, "nothing was written for the daemon to judge again")
        #expect(try Data(contentsOf: root.file("approved/bob/msg-42.jpg")) == approved)
        // The owner-only setting keeps approved images to their owner.
        try await Self.application(root) { $0.api.images.visibility = .owner }.test(.router) { client in
            try await client.execute(uri: "/v1/images/approved/alice/shared.jpg", method: .get, headers: bob) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/v1/images/approved/alice/shared.jpg", method: .get, headers: Self.user("alice")) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func liveStatusStreamsUntilTheVerdict() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "carol", name: "live.jpg")
        let application = try await Self.application(root) { config in
            config.api.events.pollMilliseconds = 50
            config.api.events.timeoutSeconds = 20
        }
        try await application.test(.router) { client in
            // The daemon judges the upload while the stream is open.
            let daemon = Task {
                try await Task.sleep(nanoseconds: 300_000_000)
                try await runOnce(root, server: clean)
            }
            try await client.execute(uri: "/v1/items/carol/live/events", method: .get, headers: Self.user("carol")) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "text/event-stream")
                let text = String(buffer: response.body)
                let events = text.components(separatedBy: "\n\n").filter { $0.hasPrefix("event: status") }
                let statuses = events.compactMap { event -> String? in
                    guard let line = event.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }) else { return nil }
                    return (try? JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8)) as? [String: Any])?["status"] as? String
                }
                #expect(statuses.first == "pending" && statuses.last == "approved", "\(statuses)")
                #expect(Set(statuses).count == statuses.count, "one event per change: \(statuses)")
            }
            try await daemon.value
            // A final status closes at once.
            try await client.execute(uri: "/v1/items/carol/live/events", method: .get, headers: Self.user("carol")) { response in
                #expect(String(buffer: response.body).components(separatedBy: "event: status").count == 2)
            }
            try await client.execute(uri: "/v1/items/carol/nothing/events", method: .get, headers: Self.user("carol")) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    @Test func captionErrorsDecodeWithTheSeedsModelAndCarryRateHeaders() async throws {
        let root = try TemporaryDataRoot()
        let fixed = Date(timeIntervalSince1970: 1_800_000_010)
        try await Self.application(root, now: { fixed }) { $0.limits.rate.caption = RateLimitRule(limit: 2, windowSeconds: 60) }.test(.router) { client in
            for expected in ["VAL_001", "VAL_001", "RATE_001"] {
                try await client.execute(uri: "/api/generateCaption", method: .post, headers: Self.app, body: ByteBuffer(string: "{}")) { response in
                    let error = try JSONDecoder().decode(SeedCaptionModels.ErrorResponse.self, from: Data(buffer: response.body))
                    #expect(!error.success && error.error.code == expected)
                    #expect(error.error.timestamp.hasSuffix("Z") && error.error.timestamp.contains("."), "\(error.error.timestamp)")
                    #expect(response.headers.value("X-RateLimit-Limit") == "2")
                    #expect(response.headers.value("X-RateLimit-Reset") == "1800000060")
                }
            }
        }
    }
}
