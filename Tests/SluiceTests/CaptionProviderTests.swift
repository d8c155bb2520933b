import Foundation
import Logging
import SluiceCore
import SluiceProviders
import SluiceTesting
import Testing

/// Each caption adapter against a fake server: the exact request it sends, the real response formats,
/// error bodies, 429/5xx retries, malformed and huge answers, and no key in any message.
@Suite struct CaptionProviderTests {
    /// A real photo; a missing fixture stops the test instead of comparing empty data with empty data.
    static var jpeg: Data {
        get throws {
            let data = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
            try #require(data.count > 10_000, "rocket.jpg fixture is missing or truncated")
            return data
        }
    }
    static let quiet: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }()

    func config(_ provider: CaptionProviderKind, _ server: FakeJSONServer, path: String = "", edit: (inout CaptionConfig) -> Void = { _ in }) -> CaptionConfig {
        var config = CaptionConfig()
        config.provider = provider
        config.baseURL = server.baseURL + path
        config.apiKeyEnv = "TEST_CAPTION_KEY"
        config.initialBackoffSeconds = 0.01
        config.maxBackoffSeconds = 0.05
        config.timeoutSeconds = 60
        edit(&config)
        return config
    }

    let environment = ["TEST_CAPTION_KEY": "sk-test-SECRET-123"]

    func dataURLImage(_ url: String?) -> Data? {
        guard let url, url.hasPrefix("data:image/jpeg;base64,") else { return nil }
        return Data(base64Encoded: String(url.dropFirst("data:image/jpeg;base64,".count)))
    }

    @Test func openAICompatibleSendsChatCompletionWithDataURL() async throws {
        let jpeg = try Self.jpeg
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: #"{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":" A rocket on a launch pad. "},"finish_reason":"stop"}],"usage":{"prompt_tokens":850,"completion_tokens":9,"total_tokens":859}}"#)
        }
        defer { server.stop() }
        let provider = OpenAICompatibleCaptionProvider(config: config(.openAICompatible, server, path: "/v1") { $0.model = "llava:7b" },
                                                       environment: environment, logger: Self.quiet)
        let caption = try await provider.caption(jpeg, mimeType: "image/jpeg")
        #expect(caption.caption == "A rocket on a launch pad.")
        #expect(caption.provider == "openai-compatible" && caption.model == "llava:7b")
        #expect(caption.usage == CaptionUsage(inputTokens: 850, outputTokens: 9, totalTokens: 859))
        let request = try #require(server.received.first)
        #expect(request.method == "POST" && request.path == "/v1/chat/completions")
        #expect(request.headers["authorization"] == "Bearer sk-test-SECRET-123")
        #expect(request.headers["content-type"]?.hasPrefix("application/json") == true)
        let body = try #require(request.json)
        #expect(body["model"] as? String == "llava:7b")
        #expect(body["max_tokens"] as? Int == 120)
        let message = try #require((body["messages"] as? [[String: Any]])?.first)
        #expect(message["role"] as? String == "user")
        let parts = try #require(message["content"] as? [[String: Any]])
        #expect(parts.map { $0["type"] as? String } == ["text", "image_url"])
        #expect(parts[0]["text"] as? String == CaptionConfig().prompt)
        #expect(dataURLImage((parts[1]["image_url"] as? [String: Any])?["url"] as? String) == jpeg)
    }

    @Test func anthropicSendsMessagesWithBase64Source() async throws {
        let jpeg = try Self.jpeg
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: #"{"id":"msg_1","type":"message","role":"assistant","model":"claude-3-5-haiku-latest","content":[{"type":"text","text":"A white rocket."}],"stop_reason":"end_turn","usage":{"input_tokens":1200,"output_tokens":6}}"#)
        }
        defer { server.stop() }
        let provider = AnthropicCaptionProvider(config: config(.anthropic, server), environment: environment, logger: Self.quiet)
        let caption = try await provider.caption(jpeg, mimeType: "image/jpeg")
        #expect(caption.caption == "A white rocket.")
        #expect(caption.usage == CaptionUsage(inputTokens: 1200, outputTokens: 6, totalTokens: 1206))
        let request = try #require(server.received.first)
        #expect(request.path == "/v1/messages")
        #expect(request.headers["x-api-key"] == "sk-test-SECRET-123")
        #expect(request.headers["anthropic-version"] == "2023-06-01")
        #expect(request.headers["authorization"] == nil)
        let body = try #require(request.json)
        #expect(body["model"] as? String == "claude-3-5-haiku-latest")
        let parts = try #require(((body["messages"] as? [[String: Any]])?.first)?["content"] as? [[String: Any]])
        let source = try #require(parts.first?["source"] as? [String: Any])
        #expect(parts.first?["type"] as? String == "image")
        #expect(source["type"] as? String == "base64" && source["media_type"] as? String == "image/jpeg")
        #expect(Data(base64Encoded: source["data"] as? String ?? "") == jpeg)
        #expect(parts.last?["type"] as? String == "text")
    }

    @Test func geminiSendsGenerateContentWithInlineData() async throws {
        let jpeg = try Self.jpeg
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: #"{"candidates":[{"content":{"parts":[{"text":"Rocket at dusk."}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":260,"candidatesTokenCount":4,"totalTokenCount":264}}"#)
        }
        defer { server.stop() }
        let provider = GeminiCaptionProvider(config: config(.gemini, server), environment: environment, logger: Self.quiet)
        let caption = try await provider.caption(jpeg, mimeType: "image/jpeg")
        #expect(caption.caption == "Rocket at dusk.")
        #expect(caption.usage == CaptionUsage(inputTokens: 260, outputTokens: 4, totalTokens: 264))
        let request = try #require(server.received.first)
        #expect(request.path == "/v1beta/models/gemini-2.0-flash:generateContent")
        #expect(request.headers["x-goog-api-key"] == "sk-test-SECRET-123")
        let body = try #require(request.json)
        let parts = try #require(((body["contents"] as? [[String: Any]])?.first)?["parts"] as? [[String: Any]])
        #expect(parts.first?["text"] as? String == CaptionConfig().prompt)
        let inline = try #require(parts.last?["inline_data"] as? [String: Any])
        #expect(inline["mime_type"] as? String == "image/jpeg")
        #expect(Data(base64Encoded: inline["data"] as? String ?? "") == jpeg)
        #expect((body["generationConfig"] as? [String: Any])?["maxOutputTokens"] as? Int == 120)
    }

    @Test func errorBodiesAreQuotedWithoutTheKey() async throws {
        let jpeg = try Self.jpeg
        let server = try await FakeJSONServer.start { _, _ in
            .init(status: 401, body: #"{"error":{"message":"Incorrect API key provided: sk-test-SECRET-123.","type":"invalid_request_error","code":"invalid_api_key"}}"#)
        }
        defer { server.stop() }
        let provider = OpenAICompatibleCaptionProvider(config: config(.openAICompatible, server, path: "/v1"),
                                                       environment: environment, logger: Self.quiet)
        do {
            _ = try await provider.caption(jpeg, mimeType: "image/jpeg")
            Issue.record("no error")
        } catch {
            #expect(error.status == 401)
            #expect(error.description.contains("Incorrect API key provided: ***."), "\(error.description)")
            #expect(!error.description.contains("SECRET"))
        }
        #expect(server.received.count == 1, "401 is not retried")
    }

    @Test func rateLimitsAndOverloadsAreRetried() async throws {
        let jpeg = try Self.jpeg
        let server = try await FakeJSONServer.start { _, index in
            switch index {
            case 0: .init(status: 429, body: #"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#, headers: ["retry-after": "0"])
            case 1: .init(status: 529, body: #"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            default: .init(body: #"{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1,"output_tokens":1}}"#)
            }
        }
        defer { server.stop() }
        let provider = AnthropicCaptionProvider(config: config(.anthropic, server), environment: environment, logger: Self.quiet)
        let caption = try await provider.caption(jpeg, mimeType: "image/jpeg")
        #expect(caption.caption == "ok")
        #expect(server.received.count == 3)
    }

    @Test(arguments: [
        ("not json", 200, "not in the expected format"),
        (#"{"choices": "nope"}"#, 200, "wrong type at choices"),
        (#"{"choices": []}"#, 200, "no caption text"),
        (#"{"choices":[{"message":{"content":null}}]}"#, 200, "no caption text"),
        (#"{"error":{"message":"model not found"}}"#, 404, "HTTP 404: model not found"),
    ])
    func malformedAnswersAreClearErrors(body: String, status: Int, expected: String) async throws {
        let jpeg = try Self.jpeg
        let server = try await FakeJSONServer.start { _, _ in .init(status: status, body: body) }
        defer { server.stop() }
        let provider = OpenAICompatibleCaptionProvider(config: config(.openAICompatible, server, path: "/v1"),
                                                       environment: environment, logger: Self.quiet)
        do {
            _ = try await provider.caption(jpeg, mimeType: "image/jpeg")
            Issue.record("no error for \(body)")
        } catch {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test func hugeAnswerIsCappedNotBuffered() async throws {
        let jpeg = try Self.jpeg
        let server = try await FakeJSONServer.start { _, _ in .init(bytes: Data(repeating: 0x61, count: 3 << 20)) }
        defer { server.stop() }
        let provider = GeminiCaptionProvider(config: config(.gemini, server), environment: environment, logger: Self.quiet)
        do {
            _ = try await provider.caption(jpeg, mimeType: "image/jpeg")
            Issue.record("no error")
        } catch {
            #expect(error.kind == .responseTooLarge)
        }
    }

    @Test func providerChoiceIsAConfigChange() {
        var config = CaptionConfig()
        #expect(CaptionProviders.make(config, environment: [:], logger: Self.quiet).failureReason == "caption.provider is \"none\"")
        config.provider = .anthropic
        #expect(CaptionProviders.make(config, environment: [:], logger: Self.quiet).failureReason == "no API key: ANTHROPIC_API_KEY is not set")
        #expect(CaptionProviders.make(config, environment: ["ANTHROPIC_API_KEY": "k"], logger: Self.quiet).providerName == "anthropic")
        config.provider = .gemini
        #expect(CaptionProviders.make(config, environment: ["GEMINI_API_KEY": "k"], logger: Self.quiet).providerName == "gemini")
        config.provider = .openAICompatible
        config.baseURL = "http://localhost:11434/v1"
        #expect(CaptionProviders.make(config, environment: [:], logger: Self.quiet).providerName == "openai-compatible",
                "a local Ollama needs no key")
    }
}

extension Result where Success == any CaptionProvider, Failure == CaptionUnavailable {
    var failureReason: String? { if case let .failure(error) = self { error.reason } else { nil } }
    var providerName: String? { if case let .success(provider) = self { provider.name } else { nil } }
}
