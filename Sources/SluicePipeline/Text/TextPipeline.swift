import Foundation
import SluiceCore
import SluiceText

/// The text stages in order, assembled once from config: parse → text (the filter) → priority. The daemon's
/// text queues run every stage; `sluice reprocess` runs the stored message from the filter on.
public struct TextPipeline: Sendable {
    /// A queue line to a verdict.
    public let intake: Pipeline<QueueLine, Prioritised>
    /// A stored message judged again.
    public let judging: Pipeline<ParsedMessage, Prioritised>
    public let filter: ProfanityFilter
    public let priority: any PriorityEngine

    public init(filter: ProfanityFilter, priority: any PriorityEngine, observer: any StageObserver = StageMetrics()) {
        self.filter = filter
        self.priority = priority
        judging = Pipeline(FilterStage(filter: filter), observer: observer).then(PrioritiseStage(engine: priority)).verdict(by: "text")
        intake = Pipeline(ParseStage(), observer: observer).then(FilterStage(filter: filter)).then(PrioritiseStage(engine: priority))
            .verdict(by: "text")
    }
}
