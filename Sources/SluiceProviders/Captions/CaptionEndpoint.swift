import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// What every caption adapter shares: model, URL, key, prompt, limits, HTTP and resilience.
struct CaptionEndpoint: Sendable {
    let model: String
    let url: String
    let apiKey: String?
    let prompt: String
    let maxTokens: Int
    let logprobs: Bool
    let http: ProviderHTTP
    let caller: ResilientCaller

    /// `path` is appended to the configured base URL.
    init(provider: String, path: String, config: CaptionConfig, environment: [String: String], client: HTTPClient, logger: Logger) {
        model = config.effectiveModel
        url = ProviderHTTP.join(config.effectiveBaseURL, path)
        apiKey = environment[config.effectiveAPIKeyEnv].flatMap { $0.isEmpty ? nil : $0 }
        prompt = config.prompt
        maxTokens = config.maxTokens
        logprobs = config.logprobs
        http = ProviderHTTP(name: "caption provider (\(provider))", client: client, timeoutSeconds: config.timeoutSeconds,
                            maxResponseBytes: config.maxResponseBytes, secrets: [apiKey])
        caller = ResilientCaller(provider: provider, retry: config.retryPolicy, breaker: config.breakerPolicy,
                                 maxInFlight: config.maxInFlight, logger: logger)
    }
}
