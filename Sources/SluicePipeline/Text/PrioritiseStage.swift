import SluiceCore

/// 3. How urgent the message is, with the configured engine (rules, or the LLM falling back to the rules).
/// Blocked messages are scored too; not re-run: the stored priority stays. A message with `sentAt` is scored as sent
/// then ("by 5pm" sent at 16:50 is due in 10 minutes); one without it by its words alone, so a re-run judges the same.
struct PrioritiseStage: Stage {
    let name = "priority"
    let engine: any PriorityEngine

    func run(_ filtered: Filtered, context: StageContext) async -> StageOutcome<Prioritised> {
        guard context.runs(name) else { return .proceed(Prioritised(filtered: filtered, priority: nil)) }
        let message = filtered.message.content
        return .proceed(Prioritised(filtered: filtered, priority: await engine.score(message.text, context: message.context, sentAt: message.sentAt)))
    }
}
