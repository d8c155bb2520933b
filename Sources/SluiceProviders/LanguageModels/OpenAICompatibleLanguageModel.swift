import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// OpenAI-compatible chat completions answering with `response_format: json_schema` (strict): OpenAI, Ollama,
/// vLLM, llama.cpp server. Same base URL, key and resilience settings as the caption adapter.
public struct OpenAICompatibleLanguageModel: LanguageModelProvider {
    public let name = "openai-compatible"
    let setup: CaptionEndpoint
    public var model: String { setup.model }
    public var endpoint: String { setup.url }
    public func probe() async -> String? { await setup.http.probe(setup.url) }

    public init(config: CaptionConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        setup = CaptionEndpoint(provider: "threads-openai-compatible", path: "/chat/completions", config: config,
                                environment: environment, client: client, logger: logger)
    }

    public func answer(_ request: StructuredRequest) async throws(ProviderError) -> StructuredAnswer {
        let schema = try StructuredJSON.schema(request, provider: setup.http.name)
        let body = StructuredJSON.body([
            "model": model,
            "max_tokens": request.maxTokens,
            "temperature": 0,
            "messages": [["role": "system", "content": request.system], ["role": "user", "content": request.prompt]],
            "response_format": ["type": "json_schema", "json_schema": ["name": request.schemaName, "strict": true, "schema": schema]],
        ])
        let headers = setup.apiKey.map { [("Authorization", "Bearer \($0)")] } ?? []
        let (http, url, model, name) = (setup.http, setup.url, model, name)
        return try await setup.caller.call { () async throws(ProviderError) -> StructuredAnswer in
            let object = try StructuredJSON.object(try await http.postJSON(url, headers: headers, body: body), provider: http.name)
            guard let choice = (object["choices"] as? [[String: Any]])?.first, let message = choice["message"] as? [String: Any] else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has no choices[0].message")
            }
            if let refusal = message["refusal"] as? String, !refusal.isEmpty {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) refused: \(String(refusal.prefix(200)))")
            }
            if let finish = choice["finish_reason"] as? String, finish == "length" {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer was cut off at max_tokens")
            }
            guard let content = message["content"] as? String else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has no message content")
            }
            let usage = object["usage"] as? [String: Any]
            return StructuredAnswer(json: try StructuredJSON.answerObject(content, provider: http.name), provider: name, model: model,
                                    usage: CaptionUsage(inputTokens: StructuredJSON.int(usage?["prompt_tokens"]),
                                                        outputTokens: StructuredJSON.int(usage?["completion_tokens"]),
                                                        totalTokens: StructuredJSON.int(usage?["total_tokens"])))
        }
    }
}
