import Foundation

/// Token counts as the provider reported them.
public struct CaptionUsage: Sendable, Codable, Equatable {
    public var inputTokens: Int?
    public var outputTokens: Int?
    public var totalTokens: Int?

    public init(inputTokens: Int? = nil, outputTokens: Int? = nil, totalTokens: Int? = nil) {
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.totalTokens = totalTokens ?? inputTokens.flatMap { i in outputTokens.map { i + $0 } }
    }
}

/// How sure the model was of its own words, when the provider says: from the mean log-probability of the
/// caption's tokens (≥ −0.3 high, ≥ −1.0 medium, lower low). LLM captioners report no confidence of their own,
/// so without token log-probabilities it is `unknown`, never invented.
public enum CaptionConfidence: String, Sendable, Codable, Equatable {
    case high, medium, low, unknown

    public init(meanLogProbability: Double?) {
        guard let mean = meanLogProbability, mean.isFinite, mean <= 0 else {
            self = .unknown
            return
        }
        self = mean >= -0.3 ? .high : mean >= -1.0 ? .medium : .low
    }
}

/// A generated caption and what it cost.
public struct Caption: Sendable, Codable, Equatable {
    public var caption: String
    public var provider: String
    public var model: String
    public var usage: CaptionUsage
    /// Wall time of the provider call, retries included, in milliseconds.
    public var processingTimeMs: Double
    /// nil for captions stored before Sluice kept it (read as `unknown`).
    public var confidence: CaptionConfidence?

    public init(caption: String, provider: String, model: String, usage: CaptionUsage, processingTimeMs: Double,
                confidence: CaptionConfidence = .unknown) {
        self.caption = caption
        self.provider = provider
        self.model = model
        self.usage = usage
        self.processingTimeMs = processingTimeMs
        self.confidence = confidence
    }
}

/// What happened at the caption stage for an item: a caption, or why there is none.
public struct CaptionOutcome: Sendable, Codable, Equatable {
    public var caption: Caption?
    /// Why no caption: skipped (provider `none`, no key) or the provider failed.
    public var skipped: String?
    public var error: String?

    public init(caption: Caption? = nil, skipped: String? = nil, error: String? = nil) {
        self.caption = caption
        self.skipped = skipped
        self.error = error
    }
}

/// Generates a caption for one image through an LLM.
public protocol CaptionProvider: ProviderProbe {
    var model: String { get }
    func caption(_ image: Data, mimeType: String) async throws(ProviderError) -> Caption
}

/// Why captioning is off: `caption.provider` is `none`, or its API key is not set.
public struct CaptionUnavailable: Error, Sendable, Equatable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
}
