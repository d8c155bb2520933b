import Foundation

/// One request for text from an LLM whose answer must be one JSON object following `schema` (a JSON Schema
/// object, as JSON text). Each adapter asks in its provider's own strict form (OpenAI `json_schema`, Anthropic a
/// forced tool, Gemini `responseJsonSchema`) and returns the object's JSON text; the caller still validates it.
public struct StructuredRequest: Sendable, Equatable {
    public var system: String
    public var prompt: String
    /// A name for the answer (`[A-Za-z0-9_-]{1,64}`: OpenAI's schema name, Anthropic's tool name).
    public var schemaName: String
    public var schema: String
    public var maxTokens: Int

    public init(system: String, prompt: String, schemaName: String, schema: String, maxTokens: Int) {
        self.system = system
        self.prompt = prompt
        self.schemaName = schemaName
        self.schema = schema
        self.maxTokens = maxTokens
    }
}

/// The JSON object an LLM answered, and what it cost.
public struct StructuredAnswer: Sendable, Equatable {
    public var json: String
    public var provider: String
    public var model: String
    public var usage: CaptionUsage

    public init(json: String, provider: String, model: String, usage: CaptionUsage) {
        self.json = json
        self.provider = provider
        self.model = model
        self.usage = usage
    }
}

/// An LLM that answers with one JSON object (the thread callables: summaries, action items, decisions).
public protocol LanguageModelProvider: ProviderProbe {
    var model: String { get }
    func answer(_ request: StructuredRequest) async throws(ProviderError) -> StructuredAnswer
}

/// Turns texts into vectors for semantic search (one vector per text, same order, L2-normalised by the caller).
public protocol EmbeddingProvider: ProviderProbe {
    var model: String { get }
    func embed(_ texts: [String]) async throws(ProviderError) -> [[Float]]
}
