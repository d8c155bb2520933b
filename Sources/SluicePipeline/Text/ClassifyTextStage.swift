import Foundation
import SluiceCore

/// 3. The text classifier's second opinion (`text.classifier`) on a message the wordlists allow: its scores go
/// through `text.classifierPolicy` to mark, review or block. A message the filter blocked is not sent, unless every
/// blocking word is of a severity in `text.classifierMayAllow`: then the classifier decides whether it is aimed at
/// someone, and a message that reaches no threshold of any category (not even `mark`) is allowed, marked ("fuck yeah we won"). Fails closed like
/// the image classifier: on intake a provider failure holds an allowed message for review, and leaves the
/// wordlists' block standing; re-judging keeps the item as it was. When it does not run (`reprocess --stages text`)
/// the stored classification is kept (so a classifier's block cannot be lost by re-running the filter alone).
struct ClassifyTextStage: Stage {
    let name = "classify-text"
    let classifier: any TextClassifier
    let policy: [TextCategory: TextCategoryRule]
    /// Severities the classifier may let through, and the severities the wordlists block.
    let mayAllow: Set<Severity>
    let blocking: Set<Severity>

    func run(_ filtered: Filtered, context: StageContext) async -> StageOutcome<Filtered> {
        guard var verdict = filtered.verdict else { return .proceed(filtered) }
        guard context.runs(name) else {
            verdict.classifier = filtered.message.storedClassification ?? context.current?.textVerdict?.classifier
            return .proceed(Filtered(message: filtered.message, verdict: verdict))
        }
        let secondOpinion = !verdict.allowed && !mayAllow.isEmpty
            && verdict.matches.allSatisfy { !blocking.contains($0.severity) || mayAllow.contains($0.severity) }
        guard verdict.allowed || secondOpinion else { return .proceed(filtered) }
        do throws(ProviderError) {
            let scores = try await classifier.classify(filtered.message.content.text)
            let classification = TextClassification(provider: classifier.name, scores: scores, policy: policy)
            verdict.classifier = classification
            if secondOpinion, classification.action == nil {
                let terms = verdict.matches.map(\.term).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
                verdict.allowed = true
                verdict.reason = "Content contains strong language, not aimed at anyone (\(classifier.name)): " + terms.joined(separator: ", ")
            }
            return .proceed(Filtered(message: filtered.message, verdict: verdict))
        } catch {
            // The wordlists' block stands without a second opinion.
            if secondOpinion { return .proceed(filtered) }
            return .finish(context.notClassified("text", by: classifier.name, because: error), facts: filtered)
        }
    }
}

/// 3, with `text.classifier: none` when a stored message is judged again: nothing is asked, but a stored
/// classification (and its block) is kept when classify-text is not among the stages re-run (`reprocess --stages
/// text`), as `ClassifyTextStage` keeps it — re-running the filter alone never drops a classifier's verdict, even
/// after the classifier was turned off. A run of every stage (no `--stages`) judges without one, as configured.
struct KeepClassificationStage: Stage {
    let name = "classify-text"

    func run(_ filtered: Filtered, context: StageContext) async -> StageOutcome<Filtered> {
        guard !context.runs(name), var verdict = filtered.verdict else { return .proceed(filtered) }
        verdict.classifier = filtered.message.storedClassification ?? context.current?.textVerdict?.classifier
        return .proceed(Filtered(message: filtered.message, verdict: verdict))
    }
}
