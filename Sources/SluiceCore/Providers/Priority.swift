/// How urgent a message is, in the seed's `detectPriority` shape.
public struct PriorityVerdict: Sendable, Codable, Equatable {
    /// `high` (score ≥ 70), `medium` (20–69) or `low` (< 20).
    public var priority: String
    public var urgencyScore: Int
    public var isUrgent: Bool
    public var reason: String
    public var urgencyIndicators: [String]
    /// `rules`, `llm`, or `rules (llm fallback)`.
    public var engine: String
    /// Why the LLM engine's answer was not used, when it was not.
    public var fallbackReason: String?

    public init(urgencyScore: Int, reason: String, urgencyIndicators: [String], engine: String, fallbackReason: String? = nil) {
        let score = min(100, max(0, urgencyScore))
        self.urgencyScore = score
        priority = Self.band(score)
        isUrgent = score >= 70
        self.reason = reason
        self.urgencyIndicators = urgencyIndicators
        self.engine = engine
        self.fallbackReason = fallbackReason
    }

    /// The seed's thresholds.
    public static func band(_ score: Int) -> String {
        score >= 70 ? "high" : score >= 20 ? "medium" : "low"
    }
}

/// Scores how urgent a message is.
public protocol PriorityEngine: Sendable {
    func score(_ text: String, context: String?) async -> PriorityVerdict
}
