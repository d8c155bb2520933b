import Foundation

/// `threads.embeddings.provider`.
public enum EmbeddingProviderKind: String, ConfigChoice {
    /// `{baseURL}/embeddings` in OpenAI's wire format: OpenAI, Ollama, vLLM, and `Providers/local-embed`.
    case openAICompatible = "openai-compatible"
    /// No vectors: smart search is keyword-only.
    case none
    public static let role = "an embedding provider"
}

/// `threads.embeddings`: vectors for smart search, computed by the daemon as messages are approved.
public struct EmbeddingConfig: Sendable, Equatable {
    public var provider: EmbeddingProviderKind = .none
    /// Includes the version; `/embeddings` is appended. The default is `Providers/local-embed`.
    public var baseURL: String = "http://127.0.0.1:8091/v1"
    public var model: String = "all-MiniLM-L6-v2"
    /// Env var with a bearer key (nil: no key, as for local servers).
    public var apiKeyEnv: String?
    /// Texts per provider call.
    public var batchSize: Int = 64
    public var timeoutSeconds: Double = 30
    public var maxAttempts: Int = 3
    public var maxInFlight: Int = 2
    /// How often the daemon looks for approved messages still without a vector.
    public var intervalMilliseconds: Int = 500
    public init() {}
}

/// `threads`: seed 004's thread callables (summarizeThread, extractActionItems, trackDecisions, smartSearch).
public struct ThreadsConfig: Sendable, Equatable {
    /// The LLM for summaries, action items and decisions: the caption section's keys without `prompt` and `logprobs`.
    /// nil (absent): the `caption` section's provider is used.
    public var llm: CaptionConfig?
    public var embeddings = EmbeddingConfig()
    /// Largest `messageLimit` a caller may ask for.
    public var maxMessageLimit: Int = 500
    /// Longest thread text sent to the LLM, in characters; the oldest messages are left out beyond it.
    public var maxPromptCharacters: Int = 48_000
    /// Semantic hits below this cosine similarity are not results.
    public var minSimilarity: Double = 0.3
    /// Reciprocal rank fusion's k: hybrid score = Σ 1 / (k + rank).
    public var fusionK: Int = 60
    public init() {}

    /// The LLM settings in force: `threads.llm`, else `caption`'s (with a token budget for JSON answers).
    public func languageModel(caption: CaptionConfig) -> CaptionConfig {
        if let llm { return llm }
        var config = caption
        config.maxTokens = max(caption.maxTokens, 1500)
        return config
    }
}

extension EmbeddingConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case provider, baseURL, model, apiKeyEnv, batchSize, timeoutSeconds, maxAttempts, maxInFlight, intervalMilliseconds
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = EmbeddingConfig()
        v.provider = try c.value(.provider, default: v.provider)
        v.baseURL = try c.value(.baseURL, default: v.baseURL)
        v.model = try c.value(.model, default: v.model)
        v.apiKeyEnv = try c.optional(String.self, forKey: .apiKeyEnv)
        v.batchSize = try c.value(.batchSize, default: v.batchSize)
        v.timeoutSeconds = try c.value(.timeoutSeconds, default: v.timeoutSeconds)
        v.maxAttempts = try c.value(.maxAttempts, default: v.maxAttempts)
        v.maxInFlight = try c.value(.maxInFlight, default: v.maxInFlight)
        v.intervalMilliseconds = try c.value(.intervalMilliseconds, default: v.intervalMilliseconds)
        self = v
    }
}

extension ThreadsConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case llm, embeddings, maxMessageLimit, maxPromptCharacters, minSimilarity, fusionK
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = ThreadsConfig()
        if c.contains(.llm) {
            try c.superDecoder(forKey: .llm).rejectUnknownKeys(CaptionConfig.CodingKeys.allCases.map(\.rawValue).filter { $0 != "prompt" && $0 != "logprobs" })
            var llm = try c.required(CaptionConfig.self, forKey: .llm)
            if try c.nestedContainer(keyedBy: CaptionConfig.CodingKeys.self, forKey: .llm).contains(.maxTokens) == false { llm.maxTokens = 1500 }
            v.llm = llm
        }
        v.embeddings = try c.value(.embeddings, default: v.embeddings)
        v.maxMessageLimit = try c.value(.maxMessageLimit, default: v.maxMessageLimit)
        v.maxPromptCharacters = try c.value(.maxPromptCharacters, default: v.maxPromptCharacters)
        v.minSimilarity = try c.value(.minSimilarity, default: v.minSimilarity)
        v.fusionK = try c.value(.fusionK, default: v.fusionK)
        self = v
    }
}
