import Foundation
import SluiceCore

/// Offline, deterministic urgency scoring explained by its indicators: phrases from
/// `Wordlists/priority-{language}.tsv` (urgent words, emergencies, deadlines, escalation, calming phrases),
/// plus times and deadlines ("by 5pm", "in 10 minutes"), repeated exclamation marks, shouting in capitals and
/// direct questions. Indicators right after a negation ("not an emergency") do not count.
public struct PriorityScorer: Sendable {
    public struct Indicator: Sendable, Equatable {
        public var phrase: [String]
        public var weight: Int
        public var kind: String
        /// The phrase as written in the TSV, for explanations ("can't wait", not its folded "can wait").
        public var label: String
    }

    private let lexicon: [String: Entry]
    static let negators: Set<String> = ["not", "no", "isn", "isnt", "don", "dont", "never", "without", "nothing", "aren", "arent",
                                        "wasn", "wasnt", "nobody", "hardly"]
    static let timeWords: Set<String> = ["noon", "midnight", "tonight", "tomorrow", "today", "eod", "cob", "monday", "tuesday",
                                         "wednesday", "thursday", "friday", "saturday", "sunday", "morning", "lunch", "lunchtime"]
    static let units: Set<String> = ["min", "mins", "minute", "minutes", "sec", "secs", "second", "seconds", "hour", "hours", "hr", "hrs",
                                     "h", "m"]
    static let deadlineWords: Set<String> = ["by", "before", "until", "till"]
    static let durationWords: Set<String> = ["in", "within"]
    static let questionWords: Set<String> = ["can", "could", "will", "would", "are", "is", "do", "does", "did", "when", "where", "what",
                                             "why", "how", "who", "have", "has", "should", "any"]

    /// What the scorer knows about one word: the indicators starting with it and its roles, so each word of
    /// a message costs one hash lookup.
    struct Entry: Sendable {
        var indicators: [Indicator] = []
        var roles: Roles = []
    }

    struct Roles: OptionSet, Sendable {
        let rawValue: UInt8
        static let deadline = Roles(rawValue: 1)
        static let duration = Roles(rawValue: 2)
        static let timeWord = Roles(rawValue: 4)
        static let unit = Roles(rawValue: 8)
        static let question = Roles(rawValue: 16)
        static let negator = Roles(rawValue: 32)
    }

    public init(indicators: [Indicator]) {
        var lexicon: [String: Entry] = [:]
        for indicator in indicators { if let first = indicator.phrase.first { lexicon[first, default: Entry()].indicators.append(indicator) } }
        let roles: [(Set<String>, Roles)] = [(Self.deadlineWords, .deadline), (Self.durationWords, .duration), (Self.timeWords, .timeWord),
                                             (Self.units, .unit), (Self.questionWords, .question), (Self.negators, .negator)]
        for (words, role) in roles {
            for word in words { lexicon[word, default: Entry()].roles.insert(role) }
        }
        self.lexicon = lexicon
    }

    /// Loads `priority-{language}.tsv` from the wordlists folder.
    public static func load(directory: URL, language: String) throws(WordlistError) -> PriorityScorer {
        let file = directory.appendingPathComponent("priority-\(language).tsv")
        let text: String
        do { text = try String(contentsOf: file, encoding: .utf8) } catch {
            throw WordlistError(source: file.path, line: nil, message: "cannot read: \((error as NSError).localizedDescription)")
        }
        var indicators: [Indicator] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
            if line.isEmpty || line.hasPrefix("#") { continue }
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard columns.count == 3, let weight = Int(columns[1]),
                  ["urgent", "emergency", "deadline", "escalation", "negative"].contains(columns[2]) else {
                throw WordlistError(source: file.path, line: index + 1,
                                    message: "expected phrase<TAB>weight (integer)<TAB>kind (urgent, emergency, deadline, escalation, negative)")
            }
            let phrase = TextNormalizer.normalizeTerm(columns[0]).split(separator: " ").map(String.init)
            guard !phrase.isEmpty else { throw WordlistError(source: file.path, line: index + 1, message: "empty phrase") }
            indicators.append(Indicator(phrase: phrase, weight: weight, kind: columns[2], label: columns[0]))
        }
        return PriorityScorer(indicators: indicators)
    }

    public func score(_ text: String) -> PriorityVerdict {
        let words = Self.words(text)
        let entries = words.map { lexicon[$0] }
        func has(_ position: Int, _ role: Roles) -> Bool { entries[position]?.roles.contains(role) == true }
        var score = 0
        var found: [(weight: Int, label: String)] = []
        var negatedNotes: [String] = []
        var index = 0
        while index < words.count {
            var matched = 0
            for indicator in entries[index]?.indicators ?? [] where indicator.phrase.count > matched {
                guard index + indicator.phrase.count <= words.count,
                      words[index..<(index + indicator.phrase.count)].elementsEqual(indicator.phrase) else { continue }
                let phraseText = indicator.label
                let negated = indicator.kind != "negative" && (max(0, index - 3)..<index).contains { has($0, .negator) }
                if negated {
                    negatedNotes.append("negated: \(phraseText)")
                } else {
                    found.append((indicator.weight, "\(indicator.kind): \(phraseText)"))
                }
                matched = indicator.phrase.count
            }
            // Deadlines and times: "by 5pm", "before noon", "in 10 minutes", "within 2 hours".
            if has(index, .deadline), index + 1 < words.count, Self.isClockTime(words[index + 1]) || has(index + 1, .timeWord) {
                let label = words[index...min(index + 2, words.count - 1)].prefix { $0 != "and" }.joined(separator: " ")
                found.append((25, "deadline: \(label)"))
                matched = max(matched, 2)
            } else if has(index, .duration), index + 2 < words.count, Self.isNumber(words[index + 1]), has(index + 2, .unit) {
                let amount = Int(words[index + 1]) ?? 99
                let minutes = words[index + 2].hasPrefix("h") ? amount * 60 : words[index + 2].hasPrefix("s") ? 0 : amount
                found.append((minutes <= 60 ? 25 : 15, "deadline: \(words[index...(index + 2)].joined(separator: " "))"))
                matched = max(matched, 3)
            }
            index += max(1, matched)
        }
        for (weight, _) in found { score += weight }

        let exclamations = Self.longestRun(of: UInt8(ascii: "!"), in: text)
        if exclamations >= 2 {
            let weight = exclamations >= 3 ? 15 : 10
            score += weight
            found.append((weight, "exclamations: \(String(repeating: "!", count: min(exclamations, 5)))"))
        }
        var letters = 0
        var capitals = 0
        for byte in text.utf8 {
            if byte >= 0x41 && byte <= 0x5A {
                letters += 1
                capitals += 1
            } else if byte >= 0x61 && byte <= 0x7A {
                letters += 1
            }
        }
        if letters >= 8, Double(capitals) / Double(letters) >= 0.7 {
            score += 20
            found.append((20, "shouting in capitals"))
        }
        if Self.endsWithQuestionMark(text) || (text.utf8.contains(UInt8(ascii: "?")) && !words.isEmpty && has(0, .question)) {
            score += 10
            found.append((10, "direct question awaiting an answer"))
        }
        let verdictScore = min(100, max(0, score))
        let reason: String
        let positives = found.filter { $0.weight > 0 }.map(\.label)
        let negatives = found.filter { $0.weight < 0 }.map(\.label)
        switch PriorityVerdict.band(verdictScore) {
        case "high": reason = "Urgent: " + positives.prefix(4).joined(separator: ", ")
        case "medium": reason = "Some urgency: " + positives.prefix(4).joined(separator: ", ")
        default:
            if !negatives.isEmpty {
                reason = "Not urgent: " + negatives.prefix(3).joined(separator: ", ")
            } else if !positives.isEmpty {
                reason = "Low urgency: " + positives.prefix(3).joined(separator: ", ")
            } else {
                reason = "No urgency indicators"
            }
        }
        return PriorityVerdict(urgencyScore: verdictScore, reason: reason + (negatedNotes.isEmpty ? "" : " (\(negatedNotes.joined(separator: ", ")))"),
                               urgencyIndicators: found.map(\.label) + negatedNotes, engine: "rules")
    }

    /// Lowercased words with clock times kept whole ("5pm", "10:30").
    static func words(_ text: String) -> [String] {
        if let ascii = asciiWords(text) { return mergeClockTimes(ascii) }
        var result: [String] = []
        var current = ""
        // "10:30" stays one clock time.
        let source = text.utf8.contains(UInt8(ascii: ":")) ? String(text.unicodeScalars.filter { $0 != ":" }) : text
        for scalar in TextNormalizer.normalizeTerm(source).unicodeScalars {
            if scalar == " " {
                if !current.isEmpty { result.append(current) }
                current = ""
            } else {
                current.unicodeScalars.append(scalar)
            }
        }
        if !current.isEmpty { result.append(current) }
        return mergeClockTimes(result)
    }

    /// ASCII fast path with the folding path's rules: letters and digits lowercased, ':' inside a word ignored,
    /// an apostrophe before a clitic ("'s", "'ll", "'re", "'ve", "'d", "'m", "'t") at a word's end dropped
    /// with it, any other apostrophe skipped. Nil for non-ASCII text.
    static func asciiWords(_ text: String) -> [String]? {
        let result: [String]?? = text.utf8.withContiguousStorageIfAvailable { bytes -> [String]? in
            var words: [String] = []
            var current: [UInt8] = []
            current.reserveCapacity(16)
            var index = 0
            func flush() {
                if !current.isEmpty { words.append(String(decoding: current, as: UTF8.self)) }
                current.removeAll(keepingCapacity: true)
            }
            func isAlnum(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) }
            func isLetter(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) }
            while index < bytes.count {
                let byte = bytes[index]
                if byte >= 0x80 { return nil }
                if isAlnum(byte) {
                    current.append(byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte)
                } else if byte == UInt8(ascii: ":") {
                    // "10:30" stays one word.
                } else if (byte == 0x27 || byte == 0x60), let last = current.last, last >= 0x61 && last <= 0x7A {
                    var end = index + 1
                    while end < bytes.count, isLetter(bytes[end]) { end += 1 }
                    let suffix = String(decoding: bytes[(index + 1)..<end], as: UTF8.self).lowercased()
                    let endsWord = end == bytes.count || !isAlnum(bytes[end])
                    if endsWord, ["s", "ll", "re", "ve", "d", "m", "t"].contains(suffix) {
                        flush()
                        index = end
                        continue
                    }
                } else {
                    flush()
                }
                index += 1
            }
            flush()
            return words
        }
        return result ?? nil
    }

    static func mergeClockTimes(_ result: [String]) -> [String] {
        // "5 pm" → "5pm"
        var merged: [String] = []
        for word in result {
            if (word == "pm" || word == "am"), let last = merged.last, isNumber(last) {
                merged[merged.count - 1] = last + word
            } else {
                merged.append(word)
            }
        }
        return merged
    }

    static func isNumber(_ word: String) -> Bool { !word.isEmpty && word.allSatisfy(\.isASCII) && word.allSatisfy(\.isNumber) }

    /// Words are already folded to lowercase.
    static func isClockTime(_ word: String) -> Bool {
        let digits = word.prefix { $0.isNumber }
        guard !digits.isEmpty, digits.count <= 4 else { return false }
        let rest = word.dropFirst(digits.count)
        return rest.isEmpty || rest == "am" || rest == "pm" || rest == "h"
    }

    /// Whether the last character that is not white space is "?".
    static func endsWithQuestionMark(_ text: String) -> Bool {
        for scalar in text.unicodeScalars.reversed() {
            if scalar.properties.isWhitespace { continue }
            return scalar == "?"
        }
        return false
    }

    static func longestRun(of byte: UInt8, in text: String) -> Int {
        var longest = 0
        var current = 0
        for char in text.utf8 {
            current = char == byte ? current + 1 : 0
            longest = max(longest, current)
        }
        return longest
    }
}
