import SluiceCore

/// 5. The verdict: a person's decision when one is being made; otherwise the configured policy on a fresh
/// classification, where a standing human decision on the same content stays final (on intake the person's
/// verdict stands; re-judging that disagrees sends the item to review). Without a fresh classification the
/// stored verdict stays.
struct PolicyStage: Stage {
    let name = "policy"
    let policy: ModerationPolicy

    func run(_ classified: Classified, context: StageContext) async -> StageOutcome<Judged> {
        if case let .decision(decision) = context.mode {
            return decision.decision == .approved
                ? .proceed(Judged(classified: classified, reason: decision.summary))
                : .finish(.verdict(.blocked(reason: decision.summary)))
        }
        guard classified.fresh, let safeSearch = classified.safeSearch else {
            guard let current = context.current else { return .finish(.verdict(.review(reason: "no classification"))) }
            return keep(current, classified)
        }
        let machine: Verdict = switch policy.decide(safeSearch) {
        case .approve: .approved
        case let .block(reason): .blocked(reason: reason)
        case let .review(reason): .review(reason: reason)
        }
        switch StandingDecision.check(machine: machine.status, machineReason: machine.reason, current: context.current,
                                      contentHash: classified.upload.contentHash ?? context.current?.contentHash, mode: context.mode) {
        case .none:
            return machine == .approved ? .proceed(Judged(classified: classified, reason: nil)) : .finish(.verdict(machine))
        case .stands:
            guard let current = context.current else { return .finish(.verdict(machine)) }
            return keep(current, classified)
        case let .disputed(reason):
            return .finish(.verdict(.review(reason: reason)))
        }
    }

    /// The stored verdict, unchanged.
    private func keep(_ current: Item, _ classified: Classified) -> StageOutcome<Judged> {
        switch current.status {
        case .approved: .proceed(Judged(classified: classified, reason: current.reason))
        case .blocked: .finish(.verdict(.blocked(reason: current.reason ?? "blocked")))
        case .rejected: .finish(.verdict(.rejected(reason: current.reason ?? "rejected")))
        case .review, .pending: .finish(.verdict(.review(reason: current.reason ?? "needs review")))
        }
    }
}
