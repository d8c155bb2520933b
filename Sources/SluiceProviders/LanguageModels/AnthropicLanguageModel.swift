import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// Anthropic Messages API answering through one forced tool whose `input_schema` is the answer's schema (the
/// documented way to get schema-shaped JSON from Claude): `{baseURL}/v1/messages`, `tool_choice {type: tool}`.
public struct AnthropicLanguageModel: LanguageModelProvider {
    public let name = "anthropic"
    let setup: CaptionEndpoint
    public var model: String { setup.model }
    public var endpoint: String { setup.url }
    public func probe() async -> String? { await setup.http.probe(setup.url) }

    public init(config: CaptionConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        setup = CaptionEndpoint(provider: "threads-anthropic", path: "/v1/messages", config: config,
                                environment: environment, client: client, logger: logger)
    }

    public func answer(_ request: StructuredRequest) async throws(ProviderError) -> StructuredAnswer {
        let schema = try StructuredJSON.schema(request, provider: setup.http.name)
        let body = StructuredJSON.body([
            "model": model,
            "max_tokens": request.maxTokens,
            "temperature": 0,
            "system": request.system,
            "messages": [["role": "user", "content": request.prompt]],
            "tools": [["name": request.schemaName, "description": "Record the answer.", "input_schema": schema]],
            "tool_choice": ["type": "tool", "name": request.schemaName],
        ])
        let headers = [("anthropic-version", AnthropicCaptionProvider.apiVersion)] + (setup.apiKey.map { [("x-api-key", $0)] } ?? [])
        let (http, url, model, name, tool) = (setup.http, setup.url, model, name, request.schemaName)
        return try await setup.caller.call { () async throws(ProviderError) -> StructuredAnswer in
            let object = try StructuredJSON.object(try await http.postJSON(url, headers: headers, body: body), provider: http.name)
            if object["stop_reason"] as? String == "max_tokens" {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer was cut off at max_tokens")
            }
            let blocks = object["content"] as? [[String: Any]] ?? []
            guard let block = blocks.first(where: { $0["type"] as? String == "tool_use" && $0["name"] as? String == tool }),
                  let input = block["input"] as? [String: Any],
                  let data = try? JSONSerialization.data(withJSONObject: input, options: [.sortedKeys]) else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has no \(tool) tool_use block with an input object")
            }
            let usage = object["usage"] as? [String: Any]
            return StructuredAnswer(json: String(decoding: data, as: UTF8.self), provider: name, model: model,
                                    usage: CaptionUsage(inputTokens: StructuredJSON.int(usage?["input_tokens"]),
                                                        outputTokens: StructuredJSON.int(usage?["output_tokens"])))
        }
    }
}
