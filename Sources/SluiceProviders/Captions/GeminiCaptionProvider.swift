import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// Google Gemini `{baseURL}/v1beta/models/{model}:generateContent` with `x-goog-api-key`.
public struct GeminiCaptionProvider: CaptionProvider {
    public let name = "gemini"
    let setup: CaptionEndpoint
    public var model: String { setup.model }
    public var endpoint: String { setup.url }
    public func probe() async -> String? { await setup.http.probe(setup.url) }
    public var caller: ResilientCaller { setup.caller }

    public init(config: CaptionConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        let model = config.effectiveModel
        let escapedModel = model.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._"))) ?? model
        setup = CaptionEndpoint(provider: "gemini", path: "/v1beta/models/\(escapedModel):generateContent", config: config,
                                   environment: environment, client: client, logger: logger)
    }

    struct Request: Encodable {
        struct Content: Encodable { var parts: [Part] }

        struct Part: Encodable {
            var text: String?
            var inline_data: InlineData?
        }

        struct InlineData: Encodable {
            var mime_type: String
            var data: String
        }

        struct GenerationConfig: Encodable { var maxOutputTokens: Int }

        var contents: [Content]
        var generationConfig: GenerationConfig
    }

    struct Response: Decodable {
        struct Candidate: Decodable {
            struct Content: Decodable {
                struct Part: Decodable { var text: String? }
                var parts: [Part]?
            }

            var content: Content?
            var finishReason: String?
            /// The mean log-probability of the candidate's tokens, when the model reports it.
            var avgLogprobs: Double?
        }

        struct Usage: Decodable {
            var promptTokenCount: Int?
            var candidatesTokenCount: Int?
            var totalTokenCount: Int?
        }

        var candidates: [Candidate]?
        var usageMetadata: Usage?
    }

    public func caption(_ image: Data, mimeType: String) async throws(ProviderError) -> Caption {
        let request = Request(contents: [.init(parts: [
            .init(text: setup.prompt),
            .init(inline_data: .init(mime_type: mimeType, data: image.base64EncodedString())),
        ])], generationConfig: .init(maxOutputTokens: setup.maxTokens))
        let body = (try? JSONEncoder().encode(request)) ?? Data()
        let headers = setup.apiKey.map { [("x-goog-api-key", $0)] } ?? []
        let started = Date()
        let (http, url, model, name) = (setup.http, setup.url, model, name)
        return try await caller.call { () async throws(ProviderError) -> Caption in
            let data = try await http.postJSON(url, headers: headers, body: body)
            let response = try http.decode(Response.self, from: data)
            let candidate = response.candidates?.first
            let text = (candidate?.content?.parts ?? []).compactMap(\.text).joined(separator: " ")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else {
                throw ProviderError(kind: .malformedResponse,
                                    message: "\(http.name) answer has no text\(candidate?.finishReason.map { " (finishReason \($0))" } ?? "")")
            }
            let usage = response.usageMetadata
            return Caption(caption: text, provider: name, model: model,
                           usage: CaptionUsage(inputTokens: usage?.promptTokenCount, outputTokens: usage?.candidatesTokenCount,
                                               totalTokens: usage?.totalTokenCount),
                           processingTimeMs: Date().timeIntervalSince(started) * 1000,
                           confidence: CaptionConfidence(meanLogProbability: candidate?.avgLogprobs))
        }
    }
}
