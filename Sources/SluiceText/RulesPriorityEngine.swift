import Foundation
import SluiceCore

/// The default priority engine: `PriorityScorer` over the message and its conversation context (an urgent earlier
/// message makes a short follow-up urgent; it does not make a calm reply urgent).
public struct RulesPriorityEngine: PriorityEngine {
    public let scorer: PriorityScorer
    /// Where a message's send time is read as a time of day (`priority.timeZone`).
    public let timeZone: TimeZone

    public init(scorer: PriorityScorer, timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) {
        self.scorer = scorer
        self.timeZone = timeZone
    }

    public func score(_ text: String, context: String?) async -> PriorityVerdict { scorer.score(text, context: context) }

    public func score(_ text: String, context: String?, sentAt: Date) async -> PriorityVerdict {
        scorer.score(text, context: context, sentAt: timeZone.minutesOfDay(at: sentAt))
    }
}
