import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// OpenAI-compatible chat completions with the image as a base64 data URL: OpenAI, Ollama, vLLM,
/// llama.cpp server, LM Studio — chosen by `caption.baseURL` (which includes the version; `/chat/completions`
/// is appended).
public struct OpenAICompatibleCaptionProvider: CaptionProvider {
    public let name = "openai-compatible"
    let setup: CaptionEndpoint
    public var model: String { setup.model }
    public var endpoint: String { setup.url }
    public func probe() async -> String? { await setup.http.probe(setup.url) }
    public var caller: ResilientCaller { setup.caller }

    public init(config: CaptionConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        setup = CaptionEndpoint(provider: "openai-compatible", path: "/chat/completions", config: config,
                                   environment: environment, client: client, logger: logger)
    }

    struct Request: Encodable {
        struct Message: Encodable {
            var role: String
            var content: [Part]
        }

        struct Part: Encodable {
            var type: String
            var text: String?
            var image_url: ImageURL?
        }

        struct ImageURL: Encodable { var url: String }

        var model: String
        var max_tokens: Int
        var messages: [Message]
        /// Only sent when `caption.logprobs` is on.
        var logprobs: Bool?
    }

    struct Response: Decodable {
        struct Choice: Decodable {
            struct Message: Decodable { var content: String? }
            struct LogProbs: Decodable {
                struct Token: Decodable { var logprob: Double? }
                var content: [Token]?
            }
            var message: Message
            var logprobs: LogProbs?
        }

        struct Usage: Decodable {
            var prompt_tokens: Int?
            var completion_tokens: Int?
            var total_tokens: Int?
        }

        var choices: [Choice]
        var usage: Usage?
    }

    public func caption(_ image: Data, mimeType: String) async throws(ProviderError) -> Caption {
        let request = Request(model: model, max_tokens: setup.maxTokens, messages: [
            .init(role: "user", content: [
                .init(type: "text", text: setup.prompt),
                .init(type: "image_url", image_url: .init(url: "data:\(mimeType);base64,\(image.base64EncodedString())")),
            ]),
        ], logprobs: setup.logprobs ? true : nil)
        let body = (try? JSONEncoder().encode(request)) ?? Data()
        let headers = setup.apiKey.map { [("Authorization", "Bearer \($0)")] } ?? []
        let started = Date()
        let (http, url, model, name) = (setup.http, setup.url, model, name)
        return try await caller.call { () async throws(ProviderError) -> Caption in
            let data = try await http.postJSON(url, headers: headers, body: body)
            let response = try http.decode(Response.self, from: data)
            guard let text = response.choices.first?.message.content?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has no caption text")
            }
            return Caption(caption: text, provider: name, model: model,
                           usage: CaptionUsage(inputTokens: response.usage?.prompt_tokens, outputTokens: response.usage?.completion_tokens,
                                               totalTokens: response.usage?.total_tokens),
                           processingTimeMs: Date().timeIntervalSince(started) * 1000,
                           confidence: CaptionConfidence(meanLogProbability: Self.mean(response.choices.first?.logprobs?.content?.compactMap(\.logprob))))
        }
    }

    static func mean(_ values: [Double]?) -> Double? {
        guard let values, !values.isEmpty else { return nil }
        return values.reduce(0, +) / Double(values.count)
    }
}
