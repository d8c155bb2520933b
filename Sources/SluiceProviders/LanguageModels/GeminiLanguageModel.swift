import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// Google Gemini `generateContent` with `responseMimeType: application/json` and `responseJsonSchema`.
public struct GeminiLanguageModel: LanguageModelProvider {
    public let name = "gemini"
    let setup: CaptionEndpoint
    public var model: String { setup.model }
    public var endpoint: String { setup.url }
    public func probe() async -> String? { await setup.http.probe(setup.url) }

    public init(config: CaptionConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        let model = config.effectiveModel
        let escaped = model.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._"))) ?? model
        setup = CaptionEndpoint(provider: "threads-gemini", path: "/v1beta/models/\(escaped):generateContent", config: config,
                                environment: environment, client: client, logger: logger)
    }

    public func answer(_ request: StructuredRequest) async throws(ProviderError) -> StructuredAnswer {
        let schema = try StructuredJSON.schema(request, provider: setup.http.name)
        let body = StructuredJSON.body([
            "systemInstruction": ["parts": [["text": request.system]]],
            "contents": [["role": "user", "parts": [["text": request.prompt]]]],
            "generationConfig": ["maxOutputTokens": request.maxTokens, "temperature": 0,
                                 "responseMimeType": "application/json", "responseJsonSchema": schema],
        ])
        let headers = setup.apiKey.map { [("x-goog-api-key", $0)] } ?? []
        let (http, url, model, name) = (setup.http, setup.url, model, name)
        return try await setup.caller.call { () async throws(ProviderError) -> StructuredAnswer in
            let object = try StructuredJSON.object(try await http.postJSON(url, headers: headers, body: body), provider: http.name)
            let candidate = (object["candidates"] as? [[String: Any]])?.first
            let finish = candidate?["finishReason"] as? String
            if finish == "MAX_TOKENS" { throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer was cut off at maxOutputTokens") }
            let parts = ((candidate?["content"] as? [String: Any])?["parts"] as? [[String: Any]]) ?? []
            let text = parts.compactMap { $0["text"] as? String }.joined()
            guard !text.isEmpty else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has no text\(finish.map { " (finishReason \($0))" } ?? "")")
            }
            let usage = object["usageMetadata"] as? [String: Any]
            return StructuredAnswer(json: try StructuredJSON.answerObject(text, provider: http.name), provider: name, model: model,
                                    usage: CaptionUsage(inputTokens: StructuredJSON.int(usage?["promptTokenCount"]),
                                                        outputTokens: StructuredJSON.int(usage?["candidatesTokenCount"]),
                                                        totalTokens: StructuredJSON.int(usage?["totalTokenCount"])))
        }
    }
}
