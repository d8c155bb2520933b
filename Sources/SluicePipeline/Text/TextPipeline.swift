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

    public init(filter: ProfanityFilter, priority: any PriorityEngine, observer: any StageObserver = StageMetrics(), rules: ConversationRules? = nil) {
        self.filter = filter
        self.priority = priority
        self.observer = observer
        judging = Pipeline(FilterStage(filter: filter), observer: observer).then(PrioritiseStage(engine: priority)).verdict(by: "text")
        let parse = Pipeline(ParseStage(), observer: observer)
        if let rules {
            intake = parse.then(RulesStage(rules: rules)).then(FilterStage(filter: filter)).then(PrioritiseStage(engine: priority)).verdict(by: "text")
        } else {
            intake = parse.then(FilterStage(filter: filter)).then(PrioritiseStage(engine: priority)).verdict(by: "text")
        }
    }

    /// The same pipeline with the conversation rules stage before the filter (it needs the store).
    public func with(rules: ConversationRules) -> TextPipeline {
        TextPipeline(filter: filter, priority: priority, observer: observer, rules: rules)
    }
}
