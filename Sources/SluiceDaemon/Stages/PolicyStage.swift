import SluiceCore

/// 6. The verdict from the configured policy.
struct PolicyStage: Stage {
    let name = "policy"
    let policy: ModerationPolicy

    func run(_ result: SafeSearch) async -> StageOutcome<Void> {
        switch policy.decide(result) {
        case .approve: .proceed(())
        case let .block(reason): .finish(.blocked(reason: reason))
        case let .review(reason): .finish(.review(reason: reason))
        }
    }
}
