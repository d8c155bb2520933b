import Foundation
import SluiceCore
import SluiceText

/// 2. The profanity filter's verdict: blocked or allowed (allowed may be marked); text that cannot be judged
/// (empty, too long, invalid UTF-8) is rejected. Not re-run: the stored verdict stays.
struct FilterStage: Stage {
    let name = "text"
    let filter: ProfanityFilter

    func run(_ message: ParsedMessage, context: StageContext) async -> StageOutcome<Filtered> {
        guard context.runs(name) else { return .proceed(Filtered(message: message, verdict: nil)) }
        do throws(TextInputError) {
            return .proceed(Filtered(message: message, verdict: try filter.check(message.content.text)))
        } catch {
            var content = message.content
            if error.kind == .tooLong { content.text = String(content.text.prefix(200)) + "…" }
            let source = message.content.source.map { "\($0): " } ?? ""
            return .finish(context.cannotContinue(.rejected(reason: source + error.message), keep: error.message),
                           facts: RejectedLine(id: message.id, userId: message.userId, content: content, contentHash: message.contentHash))
        }
    }
}
