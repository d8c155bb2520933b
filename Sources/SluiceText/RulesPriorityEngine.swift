import SluiceCore

/// The default priority engine: `PriorityScorer` over the message (the conversation context is not scored,
/// so an urgent earlier message does not make a calm reply urgent).
public struct RulesPriorityEngine: PriorityEngine {
    public let scorer: PriorityScorer

    public init(scorer: PriorityScorer) { self.scorer = scorer }

    public func score(_ text: String, context: String?) async -> PriorityVerdict { scorer.score(text) }
}
