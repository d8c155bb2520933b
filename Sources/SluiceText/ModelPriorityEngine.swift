import SluiceCore

/// `priority.engine: "model"`: the band from `PriorityModel` (trained on the labelled messages), checked against the
/// rules — when one says high and the other low, the message is medium (neither is trusted with the other
/// extreme) — and the rest of the answer (indicators, category, timeframe) from the rules' reading of the message.
/// Offline and deterministic, like the rules.
public struct ModelPriorityEngine: PriorityEngine {
    public let model: PriorityModel
    public let scorer: PriorityScorer

    public init(model: PriorityModel, scorer: PriorityScorer) {
        self.model = model
        self.scorer = scorer
    }

    public func score(_ text: String, context: String?) async -> PriorityVerdict { verdict(text, context: context) }

    /// The verdict (synchronous: nothing here waits).
    public func verdict(_ text: String, context: String?) -> PriorityVerdict {
        let rules = scorer.score(text, context: context)
        let (predicted, probabilities) = model.band(text, context: context)
        let disagree = [predicted, rules.priority].sorted() == ["high", "low"]
        let band = disagree ? "medium" : predicted
        let probability = { (name: String) -> Double in model.bands.firstIndex(of: name).map { probabilities[$0] } ?? 0 }
        let sorted = probabilities.sorted(by: >)
        let margin = sorted.count > 1 ? sorted[0] - sorted[1] : 1
        let confidence = disagree ? "low" : margin >= 0.5 ? "high" : margin >= 0.2 ? "medium" : "low"
        let shown = model.bands.map { "\($0) \(Int((probability($0) * 100).rounded()))%" }.joined(separator: ", ")
        var indicators = rules.urgencyIndicators
        indicators.append("model: \(shown)")
        let score: Int
        let timeframe: String
        let reason: String
        if band == rules.priority {
            score = rules.urgencyScore
            timeframe = rules.timeframe ?? (band == "high" ? "immediate" : band == "medium" ? "soon" : "none")
            reason = rules.reason
        } else {
            switch band {
            case "high":
                score = 70 + Int((30 * probability("high")).rounded(.down))
                timeframe = "immediate"
                reason = "Urgent (word model, \(shown))"
            case "medium":
                score = 20 + Int((49 * probability("medium")).rounded(.down))
                timeframe = rules.priority == "high" ? "today" : "soon"
                reason = disagree ? "Needs an answer: the word model said \(predicted), the rules \(rules.priority)"
                    : "Needs an answer (word model, \(shown))"
            default:
                score = Int((19 * (1 - probability("low"))).rounded(.down))
                timeframe = "none"
                reason = "Not urgent (word model, \(shown))"
            }
        }
        let category = rules.category ?? (band == "low" ? "social" : "info")
        return PriorityVerdict(urgencyScore: score, reason: reason, urgencyIndicators: indicators, engine: "model",
                               confidence: confidence, timeframe: timeframe, category: category,
                               recommendedAction: PriorityScorer.action(band: band, category: category, timeframe: timeframe))
    }
}
