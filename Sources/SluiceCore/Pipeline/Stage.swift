/// How an item ends.
public enum Verdict: Sendable, Equatable {
    case approved
    case blocked(reason: String)
    case review(reason: String)
    case rejected(reason: String)

    public var status: ItemStatus {
        switch self {
        case .approved: .approved
        case .blocked: .blocked
        case .review: .review
        case .rejected: .rejected
        }
    }

    public var reason: String? {
        switch self {
        case .approved: nil
        case let .blocked(reason), let .review(reason), let .rejected(reason): reason
        }
    }
}

/// How a pipeline run ends before its last stage.
public enum Conclusion: Sendable, Equatable {
    /// The item ends with this verdict.
    case verdict(Verdict)
    /// The item stays exactly as it is, for this reason: a re-judgement or a decision that could not be carried
    /// out (the stored file is unreadable, the provider failed). Only runs that do not fail closed end this way.
    case keep(reason: String)
}

/// What a stage learned, recorded onto the item when the run ends. Each stage's output carries its input, so
/// the last value of a run knows everything learned on the way.
public protocol ItemFacts: Sendable {
    func record(into item: inout Item, scope: RecordScope)
}

/// How much of what a run learned goes onto the item.
public enum RecordScope: Sendable {
    /// A new upload or queue line: everything.
    case upload
    /// A stored item judged again (reprocessing, a human decision): the verdict and what it produced; the facts
    /// about the original upload (its size, hash, format, dimensions, timings) stay as first recorded.
    case rejudge
}

/// What one stage returns: go on with a typed value, or end the run. `facts` is what is known when a stage
/// ends the run with more than its input carries (nil: the input's facts).
public enum StageOutcome<Value: Sendable>: Sendable {
    case proceed(Value)
    case finish(Conclusion, facts: (any ItemFacts)? = nil)
}

/// One step of a pipeline: one file, one type. Stages are values, assembled into an ordered `Pipeline` in one
/// place; each stage's output type is the next stage's input type.
public protocol Stage<Input, Output>: Sendable {
    associatedtype Input: ItemFacts
    associatedtype Output: ItemFacts
    /// Timed, recorded in metrics, and named in the event when this stage ends the item.
    var name: String { get }
    func run(_ input: Input, context: StageContext) async -> StageOutcome<Output>
}

/// What every stage of one run may consult: why the item is being judged, the item as stored, and which stages
/// run for real.
public struct StageContext: Sendable {
    public enum Mode: Sendable, Equatable {
        /// A new upload or queue line (the daemon, the caption API): failures fail closed — rejected when the
        /// input is bad, review when Sluice could not judge it. A human decision standing on the same content stands.
        case intake
        /// A stored item judged again (`sluice reprocess`): a failure keeps the item as it was; a machine verdict
        /// that disagrees with a standing human decision sends the item to review, never straight to approved.
        case reprocess
        /// A person's decision: it is the verdict; a failure (the kept original cannot be used) keeps the item.
        case decision(HumanDecision)
    }

    public var mode: Mode
    /// The item as stored before this run; nil for a new upload or line.
    public var current: Item?
    /// Stages that run for real; the others pass on what is stored. nil: every stage.
    public var stages: Set<String>?
    /// Compute, but write no file (`sluice reprocess --dry-run`).
    public var dryRun: Bool

    public init(mode: Mode, current: Item? = nil, stages: Set<String>? = nil, dryRun: Bool = false) {
        self.mode = mode
        self.current = current
        self.stages = stages
        self.dryRun = dryRun
    }

    public static let intake = StageContext(mode: .intake)

    /// Whether `stage` runs for real in this run.
    public func runs(_ stage: String) -> Bool { stages?.contains(stage) ?? true }

    public var failsClosed: Bool { mode == .intake }

    public var scope: RecordScope { mode == .intake ? .upload : .rejudge }

    /// A stage that cannot go on: the fail-closed verdict on intake, otherwise the item is kept with `keep`.
    public func cannotContinue(_ verdict: Verdict, keep: String) -> Conclusion {
        failsClosed ? .verdict(verdict) : .keep(reason: keep)
    }

    /// A classifier that could not be asked: on intake the item is held for review (`"[what ]not classified, held for
    /// review: {provider} {what went wrong}"`), otherwise it is kept as stored, saying why. The stored reason names the
    /// kind of failure only (`ProviderError.publicSummary`): it is served to the item's owner, and a provider's own
    /// error text can echo parts of keys or account names. Its whole text is in the log (`provider call failed`) and
    /// in what a re-judging run prints to the operator.
    public func notClassified(_ what: String? = nil, by provider: String, because failure: ProviderError) -> Conclusion {
        let error = "\(provider) \(failure.publicSummary)"
        let kept = current.map { "re-classification failed, kept as \($0.status.rawValue): \(failure)" } ?? error
        return cannotContinue(.review(reason: (what.map { "\($0) " } ?? "") + "not classified, held for review: \(error)"), keep: kept)
    }
}
