import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

extension CaptionConfig {
    public var retryPolicy: RetryState.Policy {
        RetryState.Policy(maxAttempts: maxAttempts, initialBackoff: initialBackoffSeconds, maxBackoff: maxBackoffSeconds)
    }

    public var breakerPolicy: CircuitBreaker.Policy {
        CircuitBreaker.Policy(failureThreshold: breakerFailures, openSeconds: breakerOpenSeconds)
    }
}

/// Picks the caption adapter from config; nil with the reason when captioning is off.
public enum CaptionProviders {
    public static func make(_ config: CaptionConfig, environment: [String: String], client: HTTPClient = .providers,
                            logger: Logger) -> Result<any CaptionProvider, CaptionUnavailable> {
        if config.provider == .none { return .failure(CaptionUnavailable(reason: "caption.provider is \"none\"")) }
        let keyEnv = config.effectiveAPIKeyEnv
        let hasKey = environment[keyEnv].map { !$0.isEmpty } ?? false
        // Local OpenAI-compatible servers (Ollama, llama.cpp, LM Studio) need no key; hosted APIs do.
        let isLocal = URL(string: config.effectiveBaseURL).map { ["localhost", "127.0.0.1", "::1"].contains($0.host ?? "") } ?? false
        if !hasKey, !(config.provider == .openAICompatible && isLocal) {
            return .failure(CaptionUnavailable(reason: "no API key: \(keyEnv) is not set"))
        }
        switch config.provider {
        case .anthropic: return .success(AnthropicCaptionProvider(config: config, environment: environment, client: client, logger: logger))
        case .gemini: return .success(GeminiCaptionProvider(config: config, environment: environment, client: client, logger: logger))
        case .openAICompatible, .none: return .success(OpenAICompatibleCaptionProvider(config: config, environment: environment, client: client, logger: logger))
        }
    }
}
