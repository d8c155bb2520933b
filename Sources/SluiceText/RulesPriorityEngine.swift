import SluiceCore

/// The default priority engine: `PriorityScorer` over the message and its conversation context (an urgent earlier
/// message makes a short follow-up urgent; it does not make a calm reply urgent).
public struct RulesPriorityEngine: PriorityEngine {
    public let scorer: PriorityScorer

    public init(scorer: PriorityScorer) { self.scorer = scorer }

    public func score(_ text: String, context: String?) async -> PriorityVerdict { scorer.score(text, context: context) }
}
