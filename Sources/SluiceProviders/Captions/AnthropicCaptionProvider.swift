import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// Anthropic Messages API: `{baseURL}/v1/messages` with `x-api-key` and `anthropic-version`.
public struct AnthropicCaptionProvider: CaptionProvider {
    public static let apiVersion = "2023-06-01"
    public let name = "anthropic"
    let setup: CaptionEndpoint
    public var model: String { setup.model }
    public var endpoint: String { setup.url }
    public func probe() async -> String? { await setup.http.probe(setup.url) }
    public var caller: ResilientCaller { setup.caller }

    public init(config: CaptionConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        setup = CaptionEndpoint(provider: "anthropic", path: "/v1/messages", config: config,
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
            var source: Source?
        }

        struct Source: Encodable {
            var type: String
            var media_type: String
            var data: String
        }

        var model: String
        var max_tokens: Int
        var messages: [Message]
    }

    struct Response: Decodable {
        struct Block: Decodable {
            var type: String
            var text: String?
        }

        struct Usage: Decodable {
            var input_tokens: Int?
            var output_tokens: Int?
        }

        var content: [Block]
        var usage: Usage?
    }

    public func caption(_ image: Data, mimeType: String) async throws(ProviderError) -> Caption {
        let request = Request(model: model, max_tokens: setup.maxTokens, messages: [
            .init(role: "user", content: [
                .init(type: "image", source: .init(type: "base64", media_type: mimeType, data: image.base64EncodedString())),
                .init(type: "text", text: setup.prompt),
            ]),
        ])
        let body = (try? JSONEncoder().encode(request)) ?? Data()
        let headers = [("anthropic-version", Self.apiVersion)] + (setup.apiKey.map { [("x-api-key", $0)] } ?? [])
        let started = Date()
        let (http, url, model, name) = (setup.http, setup.url, model, name)
        return try await caller.call { () async throws(ProviderError) -> Caption in
            let data = try await http.postJSON(url, headers: headers, body: body)
            let response = try http.decode(Response.self, from: data)
            let text = response.content.filter { $0.type == "text" }.compactMap(\.text).joined(separator: " ")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has no text block") }
            return Caption(caption: text, provider: name, model: model,
                           usage: CaptionUsage(inputTokens: response.usage?.input_tokens, outputTokens: response.usage?.output_tokens),
                           processingTimeMs: Date().timeIntervalSince(started) * 1000)
        }
    }
}
