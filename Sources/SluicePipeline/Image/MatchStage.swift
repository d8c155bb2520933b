import SluiceCore

/// 4. The PDQ hash (from the decode) against the hash banks, before any provider call: a block or review bank
/// within its threshold decides (`matched bank NAME (distance D)`), an allow bank overrides them, low-quality
/// hashes and quarantined bank hashes never act. New uploads may take over a near-identical approved image's
/// classification (`vision.reuseWithinDistance`). A person's decision is not second-guessed: decisions pass
/// through, and on intake a standing decision on the same bytes stands. Re-judging runs it only with `match`
/// in `--stages`; otherwise the stored match is kept.
struct MatchStage: Stage {
    let name = "match"
    let matcher: BankMatcher?

    func run(_ decoded: Decoded, context: StageContext) async -> StageOutcome<Matched> {
        guard let matcher, let pdq = decoded.image.pdq, context.runs(name) else { return .proceed(Matched(decoded: decoded, verdict: nil)) }
        switch context.mode {
        case .decision:
            return .proceed(Matched(decoded: decoded, verdict: nil))
        case .intake:
            if let current = context.current, current.decision != nil, current.contentHash != nil,
               current.contentHash == decoded.upload.contentHash {
                return .proceed(Matched(decoded: decoded, verdict: nil))
            }
        case .reprocess:
            break
        }
        let verdict = await matcher.verdict(for: pdq, mayReuse: context.mode == .intake)
        let matched = Matched(decoded: decoded, verdict: verdict)
        guard case let .act(match) = verdict else { return .proceed(matched) }
        let conclusion: Verdict = match.action == .block ? .blocked(reason: match.reason) : .review(reason: match.reason)
        return .finish(.verdict(conclusion), facts: matched)
    }
}
