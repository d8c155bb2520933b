/// The rule that makes human decisions final: how a machine verdict meets a decision a person made about the
/// same content. Image policy and text re-judging both ask it, so no stage overrides a person.
public enum StandingDecision: Sendable, Equatable {
    /// No decision stands for this content: the machine verdict applies.
    case none
    /// A person decided and their verdict stays (status and reason as stored).
    case stands
    /// Re-judging found a machine verdict that disagrees with the person: review, with this reason.
    case disputed(reason: String)

    /// `machine` is the verdict the stages reached; `current` the item as stored; `contentHash` the hash of the
    /// content judged now (a re-upload with other bytes is new content, and no decision covers it).
    public static func check(machine: ItemStatus, machineReason: String?, current: Item?, contentHash: String?,
                             mode: StageContext.Mode) -> StandingDecision {
        guard let current, let decision = current.decision, let decided = current.decidedStatus else { return .none }
        switch mode {
        case .decision:
            return .none
        case .intake:
            // Re-judging the same bytes (say their outputs were lost): the person's verdict stands.
            guard contentHash != nil, contentHash == current.contentHash else { return .none }
            return .stands
        case .reprocess:
            if machine == decided { return .stands }
            let finding = machineReason.map { " (\($0))" } ?? ""
            return .disputed(reason: "the machine verdict \(machine.rawValue)\(finding) disagrees with the human decision \(decision.summary); held for review")
        }
    }
}

extension Item {
    /// What a person decided for this item: `approved` or `blocked`; nil when nobody decided. Decisions recorded
    /// before Sluice kept the decided status are read from the status they left.
    public var decidedStatus: ItemStatus? {
        guard let decision else { return nil }
        if let decided = decision.decision { return decided }
        return status == .approved || status == .blocked ? status : nil
    }
}
