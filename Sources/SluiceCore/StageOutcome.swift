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

/// What one stage returns: go on with a typed value, or finish the item with a verdict.
public enum StageOutcome<Value: Sendable>: Sendable {
    case proceed(Value)
    case finish(Verdict)
}

/// One step of a pipeline. Stages are values, assembled into an ordered pipeline in one place.
public protocol Stage: Sendable {
    associatedtype Input: Sendable
    associatedtype Output: Sendable
    /// Recorded with the verdict when this stage ends the item.
    var name: String { get }
    func run(_ input: Input) async -> StageOutcome<Output>
}
