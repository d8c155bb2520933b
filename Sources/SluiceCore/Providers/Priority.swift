import Foundation

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
    /// Seed 004's optional fields: how sure (`high`|`medium`|`low`, from the score's distance to the nearest band
    /// edge), when to act (`immediate`|`today`|`soon`|`none`), what it is about, and what to do.
    public var confidence: String?
    public var timeframe: String?
    public var category: String?
    public var recommendedAction: String?

    public init(urgencyScore: Int, reason: String, urgencyIndicators: [String], engine: String, fallbackReason: String? = nil,
                confidence: String? = nil, timeframe: String? = nil, category: String? = nil, recommendedAction: String? = nil) {
        let score = min(100, max(0, urgencyScore))
        self.urgencyScore = score
        priority = Self.band(score)
        isUrgent = score >= 70
        self.reason = reason
        self.urgencyIndicators = urgencyIndicators
        self.engine = engine
        self.fallbackReason = fallbackReason
        self.confidence = confidence
        self.timeframe = timeframe
        self.category = category
        self.recommendedAction = recommendedAction
    }

    /// The seed's thresholds.
    public static func band(_ score: Int) -> String {
        score >= 70 ? "high" : score >= 20 ? "medium" : "low"
    }
}

/// Scores how urgent a message is.
public protocol PriorityEngine: Sendable {
    func score(_ text: String, context: String?) async -> PriorityVerdict
    /// The same for a message sent at `sentAt`: a deadline said as a time of day ("by 5pm") counts from it, in
    /// `priority.timeZone`. Engines that cannot use the time score the text alone.
    func score(_ text: String, context: String?, sentAt: Date) async -> PriorityVerdict
}

extension PriorityEngine {
    public func score(_ text: String, context: String?, sentAt: Date) async -> PriorityVerdict {
        await score(text, context: context)
    }

    /// As sent at `sentAt` when it is known, on the words alone when it is not.
    public func score(_ text: String, context: String?, sentAt: Date?) async -> PriorityVerdict {
        if let sentAt { await score(text, context: context, sentAt: sentAt) } else { await score(text, context: context) }
    }
}

extension TimeZone {
    /// Minutes since midnight of `date` here (a priority engine reads a message's send time with it).
    public func minutesOfDay(at date: Date) -> Int {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down)) + secondsFromGMT(for: date)
        // Floor division: a moment before 1970 is still in the minute it is in.
        let minutes = seconds >= 0 ? seconds / 60 : (seconds - 59) / 60
        return (minutes % 1440 + 1440) % 1440
    }
}
