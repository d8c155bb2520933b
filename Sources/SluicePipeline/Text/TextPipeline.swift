import Foundation
import SluiceCore
import SluiceText

/// The text stages in order, assembled once from config: parse → rules (when the store is there) → text (the
/// filter) → classify-text (when `text.classifier` is set) → priority. The daemon's text queues run every stage;
/// `sluice reprocess` runs the stored message from the filter on (the rules' verdict stands).
public struct TextPipeline: Sendable {
    /// A queue line to a verdict.
    public let intake: Pipeline<QueueLine, Prioritised>
    /// A stored message judged again.
    public let judging: Pipeline<ParsedMessage, Prioritised>
    public let filter: ProfanityFilter
    public let priority: any PriorityEngine
    /// The second opinion on allowed messages, with its policy; nil: wordlists only.
    public let classifier: (any TextClassifier)?
    let classifierConfig: TextClassifierConfig
    let observer: any StageObserver
    /// The conversation rules of `intake`, when it has them.
    public let rules: ConversationRules?

    public init(filter: ProfanityFilter, priority: any PriorityEngine, classifier: (any TextClassifier)? = nil,
                classifierConfig: TextClassifierConfig = TextClassifierConfig(),
                observer: any StageObserver = StageMetrics(), rules: ConversationRules? = nil) {
        self.filter = filter
        self.priority = priority
        self.classifier = classifier
        self.classifierConfig = classifierConfig
        self.observer = observer
        self.rules = rules
        func judged<Input>(_ head: Pipeline<Input, Filtered>, keepingStored: Bool = false) -> Pipeline<Input, Prioritised> {
            let blocking = Set(Severity.allCases.filter { filter.options.actions[$0, default: .block] == .block })
            let screened = classifier.map {
                head.then(ClassifyTextStage(classifier: $0, policy: classifierConfig.policy, mayAllow: Set(classifierConfig.mayAllow), blocking: blocking))
            } ?? (keepingStored ? head.then(KeepClassificationStage()) : head)
            return screened.then(PrioritiseStage(engine: priority)).verdict(by: "text")
        }
        // Re-judging without a classifier still keeps a stored classification unless classify-text is re-run.
        judging = judged(Pipeline(FilterStage(filter: filter), observer: observer), keepingStored: true)
        let parse = Pipeline(ParseStage(), observer: observer)
        if let rules {
            intake = judged(parse.then(RulesStage(rules: rules)).then(FilterStage(filter: filter)))
        } else {
            intake = judged(parse.then(FilterStage(filter: filter)))
        }
    }

    /// Lines a text queue may judge at once: one at a time without a classifier (the rules see lines in order);
    /// with one, as many as the classifier may be asked at once.
    public var concurrentLines: Int { classifier == nil ? 1 : classifierConfig.maxInFlight }

    /// Writes what the conversation rules counted since they last did (call before recording a batch of verdicts);
    /// `final` when the daemon stops: the texts sent once that the rules hold unwritten too.
    public func settle(final: Bool = false) async throws(StoreError) {
        try await rules?.ledger.flush(final: final)
    }

    /// The same pipeline with the conversation rules stage before the filter (it needs the store).
    public func with(rules: ConversationRules) -> TextPipeline {
        TextPipeline(filter: filter, priority: priority, classifier: classifier, classifierConfig: classifierConfig, observer: observer, rules: rules)
    }
}
