#if canImport(Glibc)
import Glibc
#endif
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

/// The caption service, metrics, health, wrong methods and the OpenAPI description, as clients see them.
@Suite(.serialized) struct APIContractTests {
    static let environment = ["SLUICE_APP_TOKENS": "app-1", "SLUICE_JWT_SECRET": "jwt-secret-of-at-least-32-bytes!!", "TEST_CAPTION_KEY": "sk-test-SECRET"]
    static let app: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "application/json"]

    static var quiet: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    static func services(_ config: PipelineConfig) async throws -> APIServices {
        try await Services.live(config: config, environment: environment, logger: quiet).api()
    }

    static func application(_ services: APIServices, now: @escaping @Sendable () -> Date = Date.init) -> some ApplicationProtocol {
        buildApplication(services: services, environment: environment, now: now, logger: quiet)
    }

    static func object(_ buffer: ByteBuffer) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(buffer: buffer))) as? [String: Any]) ?? [:]
    }

    static func captionError(_ buffer: ByteBuffer) -> String? {
        let object = object(buffer)
        guard object["success"] as? Bool == false, let error = object["error"] as? [String: Any],
              error["message"] is String, error["timestamp"] is String else { return nil }
        return error["code"] as? String
    }

    static func captionBody(_ data: Data, mimeType: String) -> ByteBuffer {
        let body = try? JSONSerialization.data(withJSONObject: ["imageData": data.base64EncodedString(), "mimeType": mimeType])
        return ByteBuffer(data: body ?? Data())
    }

    static func captionConfig(_ root: TemporaryDataRoot, server: FakeJSONServer?) -> PipelineConfig {
        root.config(endpoint: "http://127.0.0.1:9/v1") { config in
            guard let server else { return }
            config.caption.provider = .openAICompatible
            config.caption.baseURL = server.baseURL + "/v1"
            config.caption.model = "llava:7b"
            config.caption.apiKeyEnv = "TEST_CAPTION_KEY"
            config.caption.maxAttempts = 1
        }
    }

    @Test func generateCaptionAnswersInTheSeedEnvelopeAndSendsAMetadataFreeJPEG() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: #"{"id":"c1","object":"chat.completion","model":"llava:7b","choices":[{"index":0,"message":{"role":"assistant","content":"A dog on a sofa."},"finish_reason":"stop"}],"usage":{"prompt_tokens":700,"completion_tokens":6,"total_tokens":706}}"#)
        }
        defer { server.stop() }
        // A JPEG that carries GPS coordinates in its EXIF.
        let photo = try Data(contentsOf: TestEnvironment.fixture("images/exif-edge/exif_gps.jpg"))
        try await Self.application(Self.services(Self.captionConfig(root, server: server))).test(.router) { client in
            // The window's reset is after the second the request was sent in (compared with the time after the answer,
            // a slow run crossing the window's end failed).
            let sent = Int(Date().timeIntervalSince1970)
            try await client.execute(uri: "/api/generateCaption", method: .post, headers: Self.app,
                                     body: Self.captionBody(photo, mimeType: "image/jpeg")) { response in
                #expect(response.status == .ok)
                // The seed's own client models decode it.
                let decoded = try JSONDecoder().decode(SeedCaptionModels.CaptionResponse.self, from: Data(buffer: response.body))
                #expect(decoded.success)
                #expect(decoded.data.caption == "A dog on a sofa.")
                #expect(decoded.data.provider == "OpenAI-compatible" && decoded.data.model == "llava:7b")
                #expect(decoded.data.confidence == "unknown", "no logprobs were asked for, so none is invented")
                #expect(decoded.data.usage?.promptTokens == 700 && decoded.data.usage?.completionTokens == 6 && decoded.data.usage?.totalTokens == 706)
                #expect(decoded.data.processingTime.hasSuffix("ms") && Int(decoded.data.processingTime.dropLast(2)) != nil)
                #expect(decoded.data.requestId.hasPrefix("req_") && response.headers.value("X-Request-Id") == decoded.data.requestId)
                #expect(decoded.metadata.requestId == decoded.data.requestId && decoded.metadata.provider == "openai-compatible")
                #expect(decoded.metadata.mimeType == "image/jpeg" && decoded.metadata.imageSize == photo.count)
                #expect("\(decoded.metadata.processingTime)ms" == decoded.data.processingTime)
                #expect(decoded.metadata.timestamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(decoded.metadata.timestamp)")
                #expect(response.headers.value("X-RateLimit-Limit") == "60")
                #expect(response.headers.value("X-RateLimit-Remaining") == "59")
                #expect(Int(response.headers.value("X-RateLimit-Reset") ?? "").map { $0 > sent } == true)
            }
        }
        // What reached the provider: a JPEG data URL without EXIF (no GPS leaves the machine).
        let request = try #require(server.received.first)
        #expect(request.path == "/v1/chat/completions" && request.headers["authorization"] == "Bearer sk-test-SECRET")
        let messages = try #require(request.json?["messages"] as? [[String: Any]])
        let parts = try #require(messages.first?["content"] as? [[String: Any]])
        let urls: [String] = parts.compactMap { part in (part["image_url"] as? [String: Any])?["url"] as? String }
        let url = try #require(urls.first)
        let prefix = "data:image/jpeg;base64,"
        #expect(url.hasPrefix(prefix))
        let sent = try #require(Data(base64Encoded: String(url.dropFirst(prefix.count))))
        #expect(JPEGInspector.dimensions(sent) != nil)
        #expect(!JPEGInspector.metadataSegments(sent).contains { $0.hasPrefix("APP1") })
    }

    @Test func generateCaptionErrorsUseTheSeedCodes() async throws {
        let root = try TemporaryDataRoot()
        // Its error body echoes part of a key, as OpenAI's do: callers are told the status, not the provider's words.
        let failing = try await FakeJSONServer.start { _, _ in
            .init(status: 401, body: #"{"error":{"message":"Incorrect API key provided: sk-live****9876"}}"#)
        }
        defer { failing.stop() }
        let png = try Data(contentsOf: TestEnvironment.fixture("images/photos/coffee.png"))
        let services = try await Self.services(Self.captionConfig(root, server: failing))
        try await Self.application(services).test(.router) { client in
            func expect(_ method: HTTPRequest.Method = .post, headers: HTTPFields = Self.app, body: ByteBuffer = ByteBuffer(),
                        _ status: HTTPResponse.Status, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                try await client.execute(uri: "/api/generateCaption", method: method, headers: headers, body: body) { response in
                    #expect(response.status == status, sourceLocation: sourceLocation)
                    #expect(Self.captionError(response.body) == code, sourceLocation: sourceLocation)
                    // Past the rate check (a signed-in POST), an error carries the rate headers and a request id too.
                    if status != .unauthorized, method == .post {
                        #expect(response.headers.value("X-RateLimit-Limit") != nil
                                && response.headers.value("X-Request-Id")?.hasPrefix("req_") == true, sourceLocation: sourceLocation)
                    }
                }
            }
            try await expect(headers: [:], body: Self.captionBody(png, mimeType: "image/png"), .unauthorized, "AUTH_001")
            try await expect(headers: [HTTPField.Name("X-App-Token")!: "wrong"], .unauthorized, "AUTH_001")
            try await expect(.get, .methodNotAllowed, "METHOD_001")
            try await expect(.put, .methodNotAllowed, "METHOD_001")
            // Seed 002: Content-Type is required and must be application/json.
            try await expect(headers: [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "text/plain"], body: Self.captionBody(png, mimeType: "image/png"),
                             .badRequest, "VAL_001")
            try await expect(headers: [HTTPField.Name("X-App-Token")!: "app-1"], body: Self.captionBody(png, mimeType: "image/png"), .badRequest, "VAL_001")
            try await expect(body: ByteBuffer(string: "{not json"), .badRequest, "VAL_001")
            try await expect(body: ByteBuffer(string: #"{"imageData": 5, "mimeType": "image/png"}"#), .badRequest, "VAL_001")
            try await expect(body: Self.captionBody(png, mimeType: "image/gif"), .badRequest, "VAL_001")
            try await expect(body: Self.captionBody(png, mimeType: "image/jpeg"), .badRequest, "VAL_001")
            try await expect(body: ByteBuffer(string: #"{"imageData": "@@@not base64@@@", "mimeType": "image/png"}"#), .badRequest, "VAL_001")
            try await expect(body: Self.captionBody(Data(repeating: 0xFF, count: 5 * 1024 * 1024 + 1), mimeType: "image/jpeg"),
                             .badRequest, "VAL_001")
            // The provider answering an error is AI_001.
            try await expect(body: Self.captionBody(png, mimeType: "image/png"), .internalServerError, "AI_001")
            try await client.execute(uri: "/api/generateCaption", method: .post, headers: Self.app, body: Self.captionBody(png, mimeType: "image/png")) { response in
                let text = String(buffer: response.body)
                #expect(text.contains("HTTP 401") && !text.contains("Incorrect") && !text.contains("sk-live"), "\(text)")
            }
            try await client.execute(uri: "/api/nothing", method: .post, headers: Self.app) { response in
                #expect(response.status == .notFound && Self.captionError(response.body) == "VAL_001")
            }
        }
    }

    @Test func generateCaptionLimitsEachClientAddressTo60PerMinute() async throws {
        let root = try TemporaryDataRoot()
        let services = try await Self.services(Self.captionConfig(root, server: nil))
        // A fixed clock: the limit's windows are fixed minutes, and a real clock could cross into the next one
        // between the 60th and 61st request.
        let instant = Date(timeIntervalSince1970: 1_800_000_010)
        try await Self.application(services, now: { instant }).test(.router) { client in
            // Counted before the body is read: invalid bodies count too.
            for _ in 0..<60 {
                try await client.execute(uri: "/api/generateCaption", method: .post, headers: Self.app, body: ByteBuffer(string: "{}")) { response in
                    #expect(response.status == .badRequest)
                }
            }
            try await client.execute(uri: "/api/generateCaption", method: .post, headers: Self.app, body: ByteBuffer(string: "{}")) { response in
                #expect(response.status == .tooManyRequests && Self.captionError(response.body) == "RATE_001")
                #expect(Int(response.headers[.retryAfter] ?? "") ?? 0 >= 1)
            }
        }
        // No provider configured: AI_001 once the limit resets (fresh root).
        let other = try TemporaryDataRoot()
        let png = try Data(contentsOf: TestEnvironment.fixture("images/photos/coffee.png"))
        try await Self.application(Self.services(Self.captionConfig(other, server: nil))).test(.router) { client in
            try await client.execute(uri: "/api/generateCaption", method: .post, headers: Self.app,
                                     body: Self.captionBody(png, mimeType: "image/png")) { response in
                #expect(response.status == .internalServerError && Self.captionError(response.body) == "AI_001")
            }
        }
    }

    @Test func wrongMethodsAndUnknownPathsGetTheEnvelope() async throws {
        let root = try TemporaryDataRoot()
        try await Self.application(Self.services(root.config(endpoint: "http://127.0.0.1:9/v1"))).test(.router) { client in
            for (method, uri, allow) in [(HTTPRequest.Method.patch, "/v1/items/alice/a", "DELETE, GET, HEAD"), (.get, "/v1/uploads/alice", "POST"),
                                         (.put, "/healthz", "GET, HEAD"), (.get, "/v1/functions/validate_text", "POST"), (.post, "/metrics", "GET, HEAD")] {
                try await client.execute(uri: uri, method: method, headers: Self.app) { response in
                    #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                    #expect(response.headers[.allow] != nil)
                    #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                    #expect((Self.object(response.body)["error"] as? [String: Any])?["status"] as? String == "INVALID_ARGUMENT")
                }
            }
            try await client.execute(uri: "/nothing/here", method: .get, headers: Self.app) { response in
                #expect(response.status == .notFound)
                #expect((Self.object(response.body)["error"] as? [String: Any])?["status"] as? String == "NOT_FOUND")
            }
            try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: Self.app,
                                     body: ByteBuffer(repeating: UInt8(ascii: "a"), count: 2 << 20)) { response in
                #expect(response.status == .contentTooLarge)
                #expect((Self.object(response.body)["error"] as? [String: Any])?["status"] as? String == "INVALID_ARGUMENT")
            }
        }
    }

    @Test func metricsAndHealthShowTheDaemonsStagesAndProviders() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "alice", name: "a.jpg")
        // The real daemon process publishes its metrics into the store as it stops.
        let config = try root.writeConfigFile(endpoint: vision.endpoint)
        let run = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"])
        #expect(run.status == 0, "\(run.stderr)")
        let services = try await Self.services(root.config(endpoint: vision.endpoint))
        try await Self.application(services).test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/metrics", method: .get, headers: SeedClientTests.user("alice")) { response in
                #expect(response.status == .forbidden, "an end user does not read every user's counts and the daemons' hosts")
            }
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
                let object = Self.object(response.body)
                #expect(object["status"] as? String == "ok" && object["store"] as? String == "reachable")
                let providers = try #require(object["providers"] as? [[String: Any]])
                let visionEntry = try #require(providers.first { $0["role"] as? String == "vision" })
                #expect(visionEntry["name"] as? String == "google-vision" && visionEntry["reachable"] as? Bool == true)
                #expect((visionEntry["circuit"] as? [String: String])?["daemon"] == "closed")
            }
            try await client.execute(uri: "/metrics", method: .get, headers: Self.app) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                let text = String(buffer: response.body)
                #expect(text.contains(#"sluice_items{kind="image",status="approved"} 1"#))
                // Each daemon publishes as its own instance (host:pid), so several daemons never overwrite each other.
                #expect(text.contains(#/sluice_stage_duration_seconds_count\{process="daemon",instance="[^"]+:[0-9]+",stage="decode"\} 1/#))
                #expect(text.contains(#/sluice_stage_duration_seconds_bucket\{process="daemon",instance="[^"]+",stage="classify",le="\+Inf"\} 1/#))
                #expect(text.contains(#/sluice_provider_calls_total\{process="daemon",instance="[^"]+",provider="google-vision",outcome="success"\} 1/#))
                #expect(text.contains(#"sluice_http_requests_total{process="serve",route="/healthz",method="GET",status="200"} 1"#))
                // One TYPE line per family, as Prometheus requires.
                let types = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }
                #expect(Set(types).count == types.count)
            }
        }
        // Two more daemon instances (another host) and one that stopped two days ago: every fresh instance is served
        // with its own label, the stale one is left out, and health reports a provider's circuit as the worst of the
        // daemon instances'.
        let circuit = "# TYPE sluice_provider_circuit_state gauge\nsluice_provider_circuit_state{provider=\"google-vision\"} "
        try await services.store.publishMetrics(source: "daemon@other-host:11", body: circuit + "2\n", at: Date())
        try await services.store.publishMetrics(source: "daemon@other-host:12", body: circuit + "0\n", at: Date())
        try await services.store.publishMetrics(source: "daemon@old-host:9", body: circuit + "1\n", at: Date().addingTimeInterval(-2 * 86_400))
        try await Self.application(services).test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get, headers: Self.app) { response in
                let text = String(buffer: response.body)
                #expect(text.contains(#"sluice_provider_circuit_state{process="daemon",instance="other-host:11",provider="google-vision"} 2"#))
                #expect(text.contains(#"sluice_provider_circuit_state{process="daemon",instance="other-host:12",provider="google-vision"} 0"#))
                #expect(!text.contains("old-host"))
                #expect(text.contains(#"sluice_metrics_snapshot_age_seconds{process="daemon",instance="other-host:11"}"#))
            }
            try await client.execute(uri: "/healthz", method: .get) { response in
                let visionEntry = (Self.object(response.body)["providers"] as? [[String: Any]])?.first { $0["role"] as? String == "vision" }
                #expect((visionEntry?["circuit"] as? [String: String])?["daemon"] == "open")
            }
        }
        // The provider gone: health says degraded and which provider.
        vision.stop()
        let later = try await Self.services(root.config(endpoint: "http://127.0.0.1:9/v1"))
        try await Self.application(later).test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                let object = Self.object(response.body)
                #expect(response.status == .ok && object["status"] as? String == "degraded")
                let providers = object["providers"] as? [[String: Any]] ?? []
                #expect(providers.first?["reachable"] as? Bool == false && providers.first?["problem"] is String)
            }
        }
    }

    @Test func theOpenAPIDescriptionMatchesTheRegisteredRoutes() async throws {
        let file = TestEnvironment.repositoryRoot.appendingPathComponent("Sources/SluiceAPI/openapi.json")
        let spec = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        #expect(spec["openapi"] as? String == "3.1.0")
        let paths = try #require(spec["paths"] as? [String: [String: Any]])
        var described = Set<String>()
        for (path, operations) in paths {
            for (method, operation) in operations where ["get", "head", "post", "put", "delete", "patch"].contains(method) {
                described.insert("\(method.uppercased()) \(path)")
                let responses = (operation as? [String: Any])?["responses"] as? [String: Any] ?? [:]
                #expect(responses.keys.contains { $0.hasPrefix("2") }, "\(method) \(path) documents no success")
                #expect(responses.keys.contains { $0.hasPrefix("4") }, "\(method) \(path) documents no error")
            }
        }
        let root = try TemporaryDataRoot()
        let router = buildRouter(services: try await Self.services(root.config(endpoint: "http://127.0.0.1:9/v1")), environment: Self.environment)
        // The review console is HTML for people (README describes it), not part of the API contract.
        let registered = Set(router.routes.filter { !$0.path.description.hasPrefix("/console") }.map { route in
            "\(route.method.rawValue) " + route.path.description.split(separator: "/")
                .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.reduce("") { $0 + "/" + $1 }
        })
        #expect(described == registered, "only described: \(described.subtracting(registered)), only registered: \(registered.subtracting(described))")
    }
}
