import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// OpenAI `omni-moderation-latest` as a `VisionProvider`: `POST {endpoint}/moderations` with the image as a
/// data URL, `category_scores` mapped to SafeSearch likelihoods.
///
/// Mapping (documented in README): adult ← `sexual`; racy ← `sexual` with lower cut points (suggestive content
/// scores low on `sexual`); violence ← max(`violence`, `violence/graphic`); medical ← `self-harm` (the
/// closest: wounds and injuries); spoof ← UNKNOWN (not scored).
/// Cut points: < 0.10 VERY_UNLIKELY, < 0.30 UNLIKELY, < 0.50 POSSIBLE, < 0.80 LIKELY, else VERY_LIKELY;
/// racy: < 0.05, < 0.15, < 0.30, < 0.60.
public struct OpenAIModerationProvider: VisionProvider {
    public let name = "openai-moderation"
    let url: String
    let model: String
    let apiKey: String?
    let http: ProviderHTTP
    public let caller: ResilientCaller

    public var endpoint: String { url }
    public func probe() async -> String? { await http.probe(url) }

    public init(config: VisionConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        url = ProviderHTTP.join(config.endpoint, "/moderations")
        model = config.model
        apiKey = config.apiKeyEnv.flatMap { environment[$0] }.flatMap { $0.isEmpty ? nil : $0 }
        http = ProviderHTTP(name: "vision provider (openai-moderation)", client: client, timeoutSeconds: config.timeoutSeconds,
                            maxResponseBytes: config.maxResponseBytes, secrets: [apiKey])
        caller = ResilientCaller(provider: name, retry: config.retryPolicy, breaker: config.breakerPolicy,
                                 maxInFlight: config.maxInFlight, logger: logger)
    }

    struct Request: Encodable {
        struct Input: Encodable {
            struct ImageURL: Encodable { var url: String }
            var type: String
            var image_url: ImageURL
        }

        var model: String
        var input: [Input]
    }

    struct Response: Decodable {
        struct Result: Decodable { var category_scores: [String: Double] }
        var results: [Result]
    }

    public static let cutPoints: [Double] = [0.10, 0.30, 0.50, 0.80]
    public static let racyCutPoints: [Double] = [0.05, 0.15, 0.30, 0.60]

    public static func likelihood(_ score: Double?, cutPoints: [Double] = cutPoints) -> Likelihood {
        guard let score, score.isFinite else { return .unknown }
        let levels: [Likelihood] = [.veryUnlikely, .unlikely, .possible, .likely]
        for (index, cut) in cutPoints.enumerated() where score < cut { return levels[index] }
        return .veryLikely
    }

    public static func map(_ scores: [String: Double]) -> SafeSearch {
        let violence = [scores["violence"], scores["violence/graphic"]].compactMap { $0 }.max()
        return SafeSearch(adult: likelihood(scores["sexual"]), spoof: .unknown, medical: likelihood(scores["self-harm"]),
                          violence: likelihood(violence), racy: likelihood(scores["sexual"], cutPoints: racyCutPoints))
    }

    public func classify(_ jpeg: Data) async throws(ProviderError) -> SafeSearch {
        let request = Request(model: model, input: [.init(type: "image_url", image_url: .init(url: "data:image/jpeg;base64,\(jpeg.base64EncodedString())"))])
        let body = (try? JSONEncoder().encode(request)) ?? Data()
        let headers = apiKey.map { [("Authorization", "Bearer \($0)")] } ?? []
        let (http, url) = (http, url)
        return try await caller.call { () async throws(ProviderError) -> SafeSearch in
            let data = try await http.postJSON(url, headers: headers, body: body)
            let response = try http.decode(Response.self, from: data)
            guard let first = response.results.first, response.results.count == 1 else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has \(response.results.count) results for 1 image")
            }
            guard first.category_scores["sexual"] != nil else {
                throw ProviderError(kind: .malformedResponse, message: "\(http.name) answer has no sexual score")
            }
            return Self.map(first.category_scores)
        }
    }
}
