import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// A `TextClassifier` over OpenAI's moderation wire format with a text input: `POST {endpoint}/moderations`
/// `{"model", "input": "…"}` → `results[0].category_scores`. OpenAI's `omni-moderation-latest` and the bundled
/// `Providers/local-text` both answer it (`text.classifier` = `openai-moderation` or `local`).
///
/// Mapping onto Sluice's categories (a Sluice category takes the highest of its sources):
/// harassment ← `harassment`; threat ← `harassment/threatening`, `hate/threatening`, `illicit/violent`;
/// hate ← `hate`, `hate/threatening`; selfHarm ← `self-harm`, `self-harm/intent`, `self-harm/instructions`;
/// sexual ← `sexual`; sexualMinors ← `sexual/minors`; violence ← `violence`, `violence/graphic`; illicit ← `illicit`.
public struct OpenAIModerationTextClassifier: TextClassifier {
    public let name: String
    let url: String
    let model: String
    let apiKey: String?
    let http: ProviderHTTP
    public let caller: ResilientCaller

    public var endpoint: String { url }
    public func probe() async -> String? { await http.probe(url) }

    public static let sources: [TextCategory: [String]] = [
        .harassment: ["harassment"],
        .threat: ["harassment/threatening", "hate/threatening", "illicit/violent"],
        .hate: ["hate", "hate/threatening"],
        .selfHarm: ["self-harm", "self-harm/intent", "self-harm/instructions"],
        .sexual: ["sexual"],
        .sexualMinors: ["sexual/minors"],
        .violence: ["violence", "violence/graphic"],
        .illicit: ["illicit"],
    ]

    public init(config: TextClassifierConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        name = config.kind == .local ? "local-text" : "openai-moderation"
        url = ProviderHTTP.join(config.effectiveEndpoint, "/moderations")
        model = config.effectiveModel
        apiKey = config.effectiveAPIKeyEnv.flatMap { environment[$0] }.flatMap { $0.isEmpty ? nil : $0 }
        http = ProviderHTTP(name: "text classifier (\(name))", client: client, timeoutSeconds: config.timeoutSeconds,
                            maxResponseBytes: 1 << 20, secrets: [apiKey])
        caller = ResilientCaller(provider: name, retry: RetryState.Policy(maxAttempts: config.maxAttempts, initialBackoff: 0.5, maxBackoff: 10),
                                 breaker: CircuitBreaker.Policy(), maxInFlight: config.maxInFlight, logger: logger)
    }

    struct Request: Encodable {
        var model: String
        var input: String
    }

    struct Response: Decodable {
        struct Result: Decodable { var category_scores: [String: Double] }
        var results: [Result]
    }

    /// Sluice's scores from the provider's; nil when the answer scores none of the categories Sluice reads.
    public static func map(_ scores: [String: Double]) -> [TextCategory: Double]? {
        var mapped: [TextCategory: Double] = [:]
        for (category, names) in sources {
            let values = names.compactMap { scores[$0] }.filter(\.isFinite)
            if let top = values.max() { mapped[category] = min(max(top, 0), 1) }
        }
        return mapped.isEmpty ? nil : mapped
    }

    public func classify(_ text: String) async throws(ProviderError) -> [TextCategory: Double] {
        let body = (try? JSONEncoder().encode(Request(model: model, input: text))) ?? Data()
        let headers = apiKey.map { [("Authorization", "Bearer \($0)")] } ?? []
        let (http, url) = (http, url)
        return try await caller.call { () async throws(ProviderError) -> [TextCategory: Double] in
            let data = try await http.postJSON(url, headers: headers, body: body)
            let response = try http.decode(Response.self, from: data)
            guard let first = response.results.first, response.results.count == 1 else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has \(response.results.count) results for 1 text")
            }
            guard let mapped = Self.map(first.category_scores) else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer scores none of Sluice's categories: "
                                    + first.category_scores.keys.sorted().prefix(8).joined(separator: ", "))
            }
            return mapped
        }
    }
}
