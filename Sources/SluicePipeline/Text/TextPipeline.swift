import Foundation
import SluiceCore
import SluiceText

/// The text stages in order, assembled once from config: parse → rules (when the store is there) → text (the
/// filter) → priority. The daemon's text queues run every stage; `sluice reprocess` runs the stored message from
/// the filter on (the rules' verdict stands).
public struct TextPipeline: Sendable {
    /// A queue line to a verdict.
    public let intake: Pipeline<QueueLine, Prioritised>
    /// A stored message judged again.
    public let judging: Pipeline<ParsedMessage, Prioritised>
    public let filter: ProfanityFilter
    public let priority: any PriorityEngine
    let observer: any StageObserver
    /// The conversation rules of `intake`, when it has them.
    public let rules: ConversationRules?

    public init(filter: ProfanityFilter, priority: any PriorityEngine, observer: any StageObserver = StageMetrics(), rules: ConversationRules? = nil) {
        self.filter = filter
        self.priority = priority
        self.observer = observer
        self.rules = rules
        judging = Pipeline(FilterStage(filter: filter), observer: observer).then(PrioritiseStage(engine: priority)).verdict(by: "text")
        let parse = Pipeline(ParseStage(), observer: observer)
        if let rules {
            intake = parse.then(RulesStage(rules: rules)).then(FilterStage(filter: filter)).then(PrioritiseStage(engine: priority)).verdict(by: "text")
        } else {
            intake = parse.then(FilterStage(filter: filter)).then(PrioritiseStage(engine: priority)).verdict(by: "text")
        }
    }

    /// Writes what the conversation rules counted since they last did (call before recording a batch of verdicts).
    public func settle() async throws(StoreError) {
        try await rules?.ledger.flush()
    }

    /// The same pipeline with the conversation rules stage before the filter (it needs the store).
    public func with(rules: ConversationRules) -> TextPipeline {
        TextPipeline(filter: filter, priority: priority, observer: observer, rules: rules)
    }
}
