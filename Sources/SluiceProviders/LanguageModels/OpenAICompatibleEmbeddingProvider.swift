import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// `{baseURL}/embeddings` in OpenAI's wire format (OpenAI, Ollama, vLLM, `Providers/local-embed`). Vectors come
/// back in input order, checked (one per text, same dimension, finite) and L2-normalised.
public struct OpenAICompatibleEmbeddingProvider: EmbeddingProvider {
    public let name = "openai-compatible-embeddings"
    public let model: String
    let url: String
    let apiKey: String?
    let http: ProviderHTTP
    let caller: ResilientCaller
    public var endpoint: String { url }
    public func probe() async -> String? { await http.probe(url) }

    public init(config: EmbeddingConfig, environment: [String: String], client: HTTPClient = .providers, logger: Logger) {
        model = config.model
        url = ProviderHTTP.join(config.baseURL, "/embeddings")
        apiKey = config.apiKeyEnv.flatMap { environment[$0] }.flatMap { $0.isEmpty ? nil : $0 }
        http = ProviderHTTP(name: "embedding provider", client: client, timeoutSeconds: config.timeoutSeconds,
                            maxResponseBytes: 64 << 20, secrets: [apiKey])
        caller = ResilientCaller(provider: "embeddings", retry: RetryState.Policy(maxAttempts: config.maxAttempts, initialBackoff: 0.5, maxBackoff: 10),
                                 breaker: CircuitBreaker.Policy(), maxInFlight: config.maxInFlight, logger: logger)
    }

    struct Request: Encodable {
        var model: String
        var input: [String]
        var encoding_format = "float"
    }

    struct Response: Decodable {
        struct Entry: Decodable {
            var index: Int
            var embedding: [Float]
        }

        var data: [Entry]
    }

    public func embed(_ texts: [String]) async throws(ProviderError) -> [[Float]] {
        guard !texts.isEmpty else { return [] }
        let body = (try? JSONEncoder().encode(Request(model: model, input: texts))) ?? Data()
        let headers = apiKey.map { [("Authorization", "Bearer \($0)")] } ?? []
        let (http, url, count) = (http, url, texts.count)
        return try await caller.call { () async throws(ProviderError) -> [[Float]] in
            let response = try http.decode(Response.self, from: try await http.postJSON(url, headers: headers, body: body))
            return try Self.ordered(response.data.map { ($0.index, $0.embedding) }, count: count, provider: http.name)
        }
    }

    /// One vector per input index, all the same dimension, finite and non-zero; normalised to length 1.
    static func ordered(_ entries: [(index: Int, vector: [Float])], count: Int, provider: String) throws(ProviderError) -> [[Float]] {
        var vectors = [[Float]?](repeating: nil, count: count)
        for (index, vector) in entries {
            guard vectors.indices.contains(index), vectors[index] == nil else {
                throw ProviderError(kind: .malformedResponse, message: "\(provider) answered index \(index) for \(count) input\(count == 1 ? "" : "s")")
            }
            vectors[index] = vector
        }
        let found = vectors.compactMap { $0 }
        guard found.count == count else {
            throw ProviderError(kind: .malformedResponse, message: "\(provider) answered \(found.count) vectors for \(count) inputs")
        }
        guard let dimension = found.first?.count, dimension > 0, found.allSatisfy({ $0.count == dimension }) else {
            throw ProviderError(kind: .malformedResponse, message: "\(provider) answered vectors of different or zero dimensions")
        }
        return try found.map { vector throws(ProviderError) -> [Float] in
            let norm = vector.reduce(Float(0)) { $0 + $1 * $1 }.squareRoot()
            guard norm.isFinite, norm > 0 else {
                throw ProviderError(kind: .malformedResponse, message: "\(provider) answered a zero or non-finite vector")
            }
            return vector.map { $0 / norm }
        }
    }
}
