import Foundation
import SluiceCore

/// 3. The text classifier's second opinion (`text.classifier`) on a message the wordlists allow: its scores go
/// through `text.classifierPolicy` to mark, review or block. A message the filter blocked is not sent. Fails
/// closed like the image classifier: on intake a provider failure holds the message for review; re-judging keeps
/// the item as it was. When it does not run (`reprocess --stages text`) the stored classification is kept (so a
/// classifier's block cannot be lost by re-running the filter alone).
struct ClassifyTextStage: Stage {
    let name = "classify-text"
    let classifier: any TextClassifier
    let policy: [TextCategory: TextCategoryRule]

    func run(_ filtered: Filtered, context: StageContext) async -> StageOutcome<Filtered> {
        guard var verdict = filtered.verdict else { return .proceed(filtered) }
        guard context.runs(name) else {
            verdict.classifier = filtered.message.storedClassification ?? context.current?.textVerdict?.classifier
            return .proceed(Filtered(message: filtered.message, verdict: verdict))
        }
        guard verdict.allowed else { return .proceed(filtered) }
        do throws(ProviderError) {
            let scores = try await classifier.classify(filtered.message.content.text)
            verdict.classifier = TextClassification(provider: classifier.name, scores: scores, policy: policy)
            return .proceed(Filtered(message: filtered.message, verdict: verdict))
        } catch {
            let kept = context.current.map { "re-classification failed, kept as \($0.status.rawValue): \(error.description)" } ?? error.description
            return .finish(context.cannotContinue(.review(reason: "text not classified, held for review: \(error.description)"), keep: kept),
                           facts: filtered)
        }
    }
}
