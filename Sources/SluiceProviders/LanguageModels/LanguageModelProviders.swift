import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// Picks the thread LLM adapter from config (`threads.llm`, else `caption`); the reason when there is none.
public enum LanguageModelProviders {
    public static func make(_ config: CaptionConfig, environment: [String: String], client: HTTPClient = .providers,
                            logger: Logger) -> Result<any LanguageModelProvider, CaptionUnavailable> {
        if config.provider == .none { return .failure(CaptionUnavailable(reason: "no LLM provider: threads.llm (or caption) provider is \"none\"")) }
        let keyEnv = config.effectiveAPIKeyEnv
        let hasKey = environment[keyEnv].map { !$0.isEmpty } ?? false
        let isLocal = URL(string: config.effectiveBaseURL).map { ["localhost", "127.0.0.1", "::1"].contains($0.host ?? "") } ?? false
        if !hasKey, !(config.provider == .openAICompatible && isLocal) {
            return .failure(CaptionUnavailable(reason: "no LLM API key: \(keyEnv) is not set"))
        }
        switch config.provider {
        case .anthropic: return .success(AnthropicLanguageModel(config: config, environment: environment, client: client, logger: logger))
        case .gemini: return .success(GeminiLanguageModel(config: config, environment: environment, client: client, logger: logger))
        case .openAICompatible, .none:
            return .success(OpenAICompatibleLanguageModel(config: config, environment: environment, client: client, logger: logger))
        }
    }
}
