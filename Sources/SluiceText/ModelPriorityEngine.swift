import Foundation
import SluiceCore

/// `priority.engine: "model"`: the band from `PriorityModel` (trained on the labelled messages), made medium when
/// it is an extreme the model itself doubts — the other extreme has more than `opposedLimit` of its probability —
/// or one the rules contradict (they say the other extreme) while the model gives its band less than
/// `confidentAbove`, or a high given to a message that says its problem is over (`announcesResolution`); the rest of the answer (indicators, category, timeframe) comes from the rules' reading of the
/// message. The two limits were chosen by leave-one-writer-out cross-validation on the tune files (README, "Captions
/// and priority"). Offline and deterministic, like the rules.
public struct ModelPriorityEngine: PriorityEngine {
    public let model: PriorityModel
    public let scorer: PriorityScorer

    /// An extreme band is not given when the model gives the other extreme more than this (0.25 until the
    /// nineteen-writer round, 0.15 with C 12 until the twenty-one-writer round, whose cross-validation found 0.13 with
    /// C 10 the most accurate setting without a high↔low swap in any fold written as a held-out file; 0.16 since the
    /// twenty-seven-writer round, see `confidentAbove`).
    public static let opposedLimit = 0.16
    /// The rules' opposite extreme is overruled only when the model gives its band at least this (0.8 until the
    /// seventeen-writer round: cross-validation showed the rules' veto worth more than the accuracy it costs; 0.95
    /// until the twenty-three-writer round, whose model reads a follow-up's own words apart: with it no setting kept
    /// every fold written as a held-out file free of swaps, and 0.13 / 0.9 was the most accurate with the fewest, 2
    /// over 13 folds; 0.9 until the twenty-seven-writer round, whose cross-validation over 17 such folds gave
    /// 0.16 / 0.85 91.5% with 3 swaps, the most accurate of the settings with the fewest: 0.13 / 0.9 89.9% with 3).
    public static let confidentAbove = 0.85

    /// Openings that say an earlier problem is over ("nvm Crispin had a key, they're in", "sorted, car 7 picked her
    /// up"): a follow-up that starts with one is never made high by the word model, whose context words (the alarm
    /// before it) can outweigh the message's own. Made medium, not low: "nvm the report, the server's down" is still
    /// urgent. Added in the twenty-five-writer round, whose cross-validation found these the model's most confident
    /// swaps (3 of 14).
    static let resolvedOpenings: Set<String> = ["nvm", "nevermind", "never mind", "sorted", "all sorted", "all good", "panic over", "false alarm"]
    /// The same anywhere in a message.
    /// The twenty-seven-writer round added the all-clear words its tune files use only for low or medium lines ("all
    /// clear", "back to normal", "fine now", "up and laughing", …): cross-validation's swaps 4 → 3, no line lost.
    static let resolvedPhrases = ["false alarm", "panic over", "crisis averted", "all sorted now", "all clear", "back to normal",
                                  "no harm done", "fine now", "all fine", "up and laughing", "laughing about it"]
        + ["he's", "she's", "they're", "theyre", "hes", "shes", "he is", "she is", "they are"].flatMap { ["\($0) out now", "\($0) in now"] }

    /// Words that undo a phrase of `resolvedPhrases` just before it ("he's NOT fine now") or after it ("the all clear,
    /// but it's sparking again").
    static let resolutionNegators: Set<String> = ["not", "no", "never", "isnt", "isn't", "aint", "ain't", "arent", "aren't", "wasnt",
                                                  "wasn't", "nowhere"]
    static let resolutionUndoers: Set<String> = ["again", "but", "still", "though", "until"]

    /// Whether the message says its problem is over (`resolvedOpenings`, `resolvedPhrases`; words compared in lower
    /// case, curly apostrophes as straight ones, punctuation as spaces). A phrase inside the message does not count in
    /// a question ("is he fine now??"), after a negation in the two words before it, or with "again", "but", "still"
    /// after it.
    public static func announcesResolution(_ text: String) -> Bool {
        let words = text.lowercased().replacingOccurrences(of: "\u{2019}", with: "'")
            .split { !($0.isLetter || $0.isNumber || $0 == "'") }.map(String.init)
        guard let first = words.first else { return false }
        if resolvedOpenings.contains(first) { return true }
        if words.count > 1, resolvedOpenings.contains("\(first) \(words[1])") { return true }
        guard !text.contains("?") else { return false }
        for phrase in resolvedPhrases {
            let parts = phrase.split(separator: " ").map(String.init)
            guard parts.count <= words.count else { continue }
            for start in 0...(words.count - parts.count) where Array(words[start..<(start + parts.count)]) == parts {
                let before = words[max(0, start - 2)..<start]
                let after = words[(start + parts.count)...]
                if !before.contains(where: resolutionNegators.contains) && !after.contains(where: resolutionUndoers.contains) { return true }
            }
        }
        return false
    }

    /// Where a message's send time is read as a time of day (`priority.timeZone`).
    public let timeZone: TimeZone

    public init(model: PriorityModel, scorer: PriorityScorer, timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) {
        self.model = model
        self.scorer = scorer
        self.timeZone = timeZone
    }

    public func score(_ text: String, context: String?) async -> PriorityVerdict { verdict(text, context: context) }

    public func score(_ text: String, context: String?, sentAt: Date) async -> PriorityVerdict {
        verdict(text, context: context, sentAt: timeZone.minutesOfDay(at: sentAt))
    }

    /// The verdict (synchronous: nothing here waits). With `sentAt` (minutes since midnight), a deadline said as a
    /// time of day within the hour after it ("by 5pm" sent at 16:50) — which the word model cannot see — makes a
    /// medium high and a low medium.
    public func verdict(_ text: String, context: String?, sentAt: Int? = nil) -> PriorityVerdict {
        let rules = scorer.score(text, context: context, sentAt: sentAt)
        let (predicted, probabilities) = model.band(text, context: context)
        let probability = { (name: String) -> Double in model.bands.firstIndex(of: name).map { probabilities[$0] } ?? 0 }
        let opposite = predicted == "high" ? "low" : predicted == "low" ? "high" : nil
        let rulesOppose = opposite != nil && rules.priority == opposite && probability(predicted) < Self.confidentAbove
        let selfOpposed = opposite.map { probability($0) > Self.opposedLimit } ?? false
        let resolved = predicted == "high" && Self.announcesResolution(text)
        let disagree = rulesOppose || selfOpposed || resolved
        // Only a deadline counted from the send time: one the message states is in the text the model read.
        // It counts when the rules, having weighed hedges and calm words, call the message high with it, and the message
        // does not say its problem is over.
        let dueSoon = sentAt != nil && rules.priority == "high" && !resolved
            && rules.urgencyIndicators.contains { $0.hasSuffix(PriorityScorer.afterSendingSuffix) }
        // It outweighs the model's doubts: a high stays high, a medium becomes high, a low medium.
        let raised = dueSoon && (predicted != "high" || disagree)
        let band = dueSoon ? (predicted == "low" ? "medium" : "high") : disagree ? "medium" : predicted
        let sorted = probabilities.sorted(by: >)
        let margin = sorted.count > 1 ? sorted[0] - sorted[1] : 1
        let confidence = raised ? "medium" : disagree ? "low" : margin >= 0.5 ? "high" : margin >= 0.2 ? "medium" : "low"
        let shown = model.bands.map { "\($0) \(Int((probability($0) * 100).rounded()))%" }.joined(separator: ", ")
        var indicators = rules.urgencyIndicators
        indicators.append("model: \(shown)")
        let score: Int
        let timeframe: String
        let reason: String
        if band == rules.priority {
            score = rules.urgencyScore
            timeframe = rules.timeframe ?? (band == "high" ? "immediate" : band == "medium" ? "soon" : "none")
            reason = rules.reason
        } else {
            switch band {
            case "high":
                score = 70 + Int((30 * probability("high")).rounded(.down))
                timeframe = "immediate"
                reason = raised ? "Urgent: due within the hour after it was sent (the word model said \(predicted), \(shown))"
                    : "Urgent (word model, \(shown))"
            case "medium":
                // Within medium by how far the model leans to high (a doubted high sits above a doubted low).
                score = 20 + Int((49 * min(1, probability("high") + probability("medium") / 2)).rounded(.down))
                timeframe = rules.priority == "high" ? "today" : "soon"
                reason = raised ? "Needs an answer: due within the hour after it was sent (the word model said low, \(shown))"
                    : resolved ? "Needs an answer: the word model said high, but the message says the problem is over (\(shown))"
                    : rulesOppose ? "Needs an answer: the word model said \(predicted), the rules \(rules.priority)"
                    : selfOpposed ? "Needs an answer: the word model leans \(predicted) but does not rule out \(opposite ?? "") (\(shown))"
                    : "Needs an answer (word model, \(shown))"
            default:
                score = Int((19 * (1 - probability("low"))).rounded(.down))
                timeframe = "none"
                reason = "Not urgent (word model, \(shown))"
            }
        }
        let category = rules.category ?? (band == "low" ? "social" : "info")
        return PriorityVerdict(urgencyScore: score, reason: reason, urgencyIndicators: indicators, engine: "model",
                               confidence: confidence, timeframe: timeframe, category: category,
                               recommendedAction: PriorityScorer.action(band: band, category: category, timeframe: timeframe))
    }
}
