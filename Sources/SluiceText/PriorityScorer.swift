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
        /// What the message is about when this phrase is in it (seed 004's `category`), if the TSV says.
        public var category: String?
    }

    /// Laughing and joyful emoji: a joke or good news, whatever the words say ("URGENT: who ate my yoghurt 😂").
    static let joyful: Set<Unicode.Scalar> = ["\u{1F602}", "\u{1F923}", "\u{1F606}", "\u{1F605}",
                                                // 🎉 🥳 😍 🥰 🍾 🎂 👏 🙌: joy, whatever the words say ("straight fire 🔥🎉").
                                                "\u{1F389}", "\u{1F973}", "\u{1F60D}", "\u{1F970}", "\u{1F37E}", "\u{1F382}",
                                                "\u{1F44F}", "\u{1F64C}"]
    /// Urgency points at which a message is high.
    static let highAt = 50
    static let kinds = ["urgent", "emergency", "deadline", "escalation", "negative", "hedge", "immediate", "blocking", "request", "today",
                        "soon", "celebration", "benign", "followup", "smalltalk"]
    static let categories = ["emergency", "safety", "health", "work", "family", "logistics", "finance", "social", "info"]

    private let lexicon: [String: Entry]
    static let negators: Set<String> = ["not", "no", "isn", "isnt", "don", "dont", "never", "without", "nothing", "aren", "arent",
                                        "wasn", "wasnt", "nobody", "hardly"]
    static let timeWords: Set<String> = weekdays.union(["noon", "midnight", "tonight", "tomorrow", "today", "morning", "lunch", "lunchtime"])
    static let units: Set<String> = ["min", "mins", "minute", "minutes", "sec", "secs", "second", "seconds", "hour", "hours", "hr", "hrs",
                                     "h", "m", "day", "days", "week", "weeks"]
    static let weekdays: Set<String> = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue", "tues",
                                        "wed", "thu", "thur", "thurs", "fri", "sat", "sun"]
    static let deadlineWords: Set<String> = ["by", "before", "until", "till", "between"]
    static let durationWords: Set<String> = ["in", "within", "next", "wait"]
    /// Numbers written as words in "in ten minutes", "within half an hour", "in an hour".
    static let numberWords: [String: Int] = ["a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                                             "eight": 8, "nine": 9, "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
                                             "fifty": 50, "sixty": 60, "half": 30, "quarter": 15, "couple": 2, "few": 3]
    /// Words before a clock time that make it the time now ("it's 2:40", "its 5:50") rather than a deadline.
    static let nowWords: Set<String> = ["it", "its", "now"]
    /// Words before a clock time that make it a deadline or a start ("at 3", "by 4").
    static let clockDeadlineWords: Set<String> = ["by", "before", "until", "till", "at", "is"]
    /// The same without "is", for times counted from when the message was sent (the message does not say the time,
    /// so "the score is 3" must not read as a deadline).
    static let sentTimeDeadlineWords: Set<String> = ["by", "before", "until", "till", "at"]
    /// How the indicator of a deadline counted from the send time ends ("deadline: by 5pm, 10 min after it was sent").
    public static let afterSendingSuffix = " min after it was sent"

    /// An indicator's kind (the third TSV column), as an index into `kinds`, so a message's sums are an array.
    enum Kind: Int, CaseIterable, Sendable {
        case urgent, emergency, deadline, escalation, negative, hedge, immediate, blocking, request, today, soon, celebration, benign,
             followup, smalltalk
        /// A kind `kinds` does not list (an indicator built in code): shown, summed apart, never read.
        case other

        init?(name: String) {
            guard let index = PriorityScorer.kinds.firstIndex(of: name) else { return nil }
            self.init(rawValue: index)
        }

        /// Kinds that calm or merely describe a message: a negation before them does not undo them.
        var isCalming: Bool {
            switch self {
            case .negative, .hedge, .benign, .celebration, .request, .today, .soon, .followup, .smalltalk: true
            case .urgent, .emergency, .deadline, .escalation, .immediate, .blocking, .other: false
            }
        }
    }

    /// An indicator with its kind resolved.
    struct Phrase: Sendable {
        var indicator: Indicator
        var kind: Kind
    }

    /// What the scorer knows about one word: the indicators starting with it and its roles, so each word of
    /// a message costs one hash lookup.
    struct Entry: Sendable {
        var indicators: [Phrase] = []
        var roles: Roles = []
    }

    struct Roles: OptionSet, Sendable {
        let rawValue: UInt16
        static let deadline = Roles(rawValue: 1)
        static let duration = Roles(rawValue: 2)
        static let timeWord = Roles(rawValue: 4)
        static let unit = Roles(rawValue: 8)
        static let weekday = Roles(rawValue: 16)
        static let negator = Roles(rawValue: 32)
        static let otherDay = Roles(rawValue: 64)
        static let sentTimeDeadline = Roles(rawValue: 128)
        static let now = Roles(rawValue: 256)
    }

    public init(indicators: [Indicator]) {
        var lexicon: [String: Entry] = [:]
        // Longest phrase first: "passed out" wins over "passed" where both start.
        for indicator in indicators.sorted(by: { $0.phrase.count > $1.phrase.count }) {
            if let first = indicator.phrase.first {
                lexicon[first, default: Entry()].indicators.append(Phrase(indicator: indicator, kind: Kind(name: indicator.kind) ?? .other))
            }
        }
        let roles: [(Set<String>, Roles)] = [(Self.deadlineWords, .deadline), (Self.durationWords, .duration), (Self.timeWords, .timeWord),
                                             (Self.units, .unit), (Self.weekdays, .weekday), (Self.negators, .negator),
                                             (Self.otherDayWords, .otherDay), (Self.sentTimeDeadlineWords, .sentTimeDeadline),
                                             (Self.nowWords, .now)]
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
            guard (3...4).contains(columns.count), let weight = Int(columns[1]), kinds.contains(columns[2]),
                  columns.count == 3 || categories.contains(columns[3]) else {
                throw WordlistError(source: file.path, line: index + 1,
                                    message: "expected phrase<TAB>weight (integer)<TAB>kind (\(kinds.joined(separator: ", ")))[<TAB>category (\(categories.joined(separator: ", ")))]")
            }
            let phrase = TextNormalizer.normalizeTerm(columns[0]).split(separator: " ").map(String.init)
            guard !phrase.isEmpty else { throw WordlistError(source: file.path, line: index + 1, message: "empty phrase") }
            indicators.append(Indicator(phrase: phrase, weight: weight, kind: columns[2], label: columns[0],
                                        category: columns.count == 4 ? columns[3] : nil))
        }
        return PriorityScorer(indicators: indicators)
    }

    public func score(_ text: String) -> PriorityVerdict { score(text, context: nil) }

    /// What one text says: indicator weights by kind, the labels that explain them, and the shape of the message.
    struct Signals {
        /// Sum of weights per kind (`Kind.rawValue`), and which kinds were found at all (a sum can be 0).
        var weights = InlineArray<16, Int>(repeating: 0)
        var present: UInt16 = 0
        var found: [(weight: Int, label: String)] = []
        var negated: [String] = []
        var categories: [String: Int] = [:]
        /// The nearest relative deadline in minutes ("in 10 minutes", "in 5"), if any.
        var minutes: Int?
        var clockDeadline = false
        var question = false
        var shouting = false
        var exclamations = 0
        var wordCount = 0
        /// A weekday is named ("thursday", "fri").
        var namesDay = false

        func has(_ kind: Kind) -> Bool { present & (1 << kind.rawValue) != 0 }
        func sum(_ kind: Kind) -> Int { weights[kind.rawValue] }
    }

    /// `sentAt`: when the message was sent, as minutes since midnight in the configured time zone, if known — a
    /// deadline said as a time of day ("by 5pm") then counts from it when the message does not say the time itself.
    func signals(_ text: String, sentAt: Int? = nil) -> Signals {
        let words = Self.words(text)
        let entries = words.map { lexicon[$0] }
        func has(_ position: Int, _ role: Roles) -> Bool { entries[position]?.roles.contains(role) == true }
        var signals = Signals()
        signals.wordCount = words.count
        signals.namesDay = entries.contains { $0?.roles.contains(.weekday) == true }
        func add(_ weight: Int, _ kind: Kind, _ label: String, category: String? = nil) {
            signals.weights[kind.rawValue] += weight
            signals.present |= 1 << kind.rawValue
            signals.found.append((weight, label))
            if let category { signals.categories[category, default: 0] += max(1, abs(weight)) }
        }
        var index = 0
        while index < words.count {
            var matched = 0
            let candidates = entries[index]?.indicators ?? []
            // By position: a phrase is copied only when it matches.
            for candidate in candidates.indices {
                let length = candidates[candidate].indicator.phrase.count
                guard index + length <= words.count, Self.phrase(candidates[candidate].indicator.phrase, isAt: index, in: words) else { continue }
                let phrase = candidates[candidate]
                let indicator = phrase.indicator
                let negated = !phrase.kind.isCalming && (max(0, index - 2)..<index).contains { has($0, .negator) }
                if negated {
                    signals.negated.append("negated: \(indicator.label)")
                } else {
                    add(indicator.weight, phrase.kind, "\(indicator.kind): \(indicator.label)", category: indicator.category)
                }
                matched = indicator.phrase.count
                break
            }
            index += max(1, matched)
        }
        // Deadlines and times, over every word (a phrase such as "leaves in" may end where one starts): "by 5pm",
        // "before noon", "in 10 minutes", "within 2 hours", "in 5" (minutes when no unit follows and it is ≤ 60).
        for index in words.indices {
            if has(index, .deadline), index + 2 < words.count, words[index + 1] == "the", Self.isOrdinal(words[index + 2]) {
                // "by the 30th": a date, days away.
                add(15, .deadline, "deadline: \(words[index]) the \(words[index + 2])")
            } else if has(index, .deadline), index + 2 < words.count, ["next", "this"].contains(words[index + 1]), has(index + 2, .timeWord) {
                // "by next friday", "before this weekend": days away.
                add(15, .deadline, "deadline: \(words[index]) \(words[index + 1]) \(words[index + 2])")
            } else if has(index, .deadline), index + 1 < words.count, Self.isClockTime(words[index + 1]) || has(index + 1, .timeWord) {
                let label = words[index...min(index + 2, words.count - 1)].prefix { $0 != "and" }.joined(separator: " ")
                add(25, .deadline, "deadline: \(label)")
                if Self.isClockTime(words[index + 1]) { signals.clockDeadline = true }
            } else if has(index, .duration), index + 1 < words.count, let amount = Self.number(words, at: index + 1) {
                // "half an hour": the unit comes after "an".
                // "half an hour", "quarter of an hour": the unit comes after "an".
                let article = words[(index + 2)..<min(index + 4, words.count)].firstIndex(of: "an")
                let unitIndex = ["half", "quarter"].contains(words[index + 1]) ? (article ?? index + 1) + 1 : index + 2
                let unit: String? = unitIndex < words.count && has(unitIndex, .unit) ? words[unitIndex] : nil
                guard unit != nil || (amount <= 60 && Self.isNumber(words[index + 1])) else { continue }
                let word = unit ?? "min"
                let minutes = ["half", "quarter"].contains(words[index + 1]) ? amount : word.hasPrefix("h") ? amount * 60 : word.hasPrefix("d") ? amount * 1440 : word.hasPrefix("w") ? amount * 10_080
                    : word.hasPrefix("s") ? 0 : amount
                signals.minutes = min(signals.minutes ?? .max, minutes)
                add(minutes <= 60 ? 25 : 15, .deadline, "deadline: \(words[index...min(index + (unit == nil ? 1 : 2), words.count - 1)].joined(separator: " "))")
            }
        }
        // "by 4 … its 3:15", "the meeting at 3, it's 2:40 now": a deadline clock time within the hour of the time now.
        // Only a word starting with a number (a clock time) or "quarter" / "half" (one said in words) can say the time.
        let mayTellTime = words.contains { word in Self.startsWithNumber(word) || word == "quarter" || word == "half" }
        let statedNow = mayTellTime ? Self.clockNow(words, nowWordAt: { has($0, .now) }) : nil
        // Only a word after "by", "at", … can be such a deadline: a message without one is not looked at further.
        // A message about another day ("tomorrow at 5"): a word of `otherDayWords` or `weekdays` (the lexicon's roles),
        // or an ordinal ("the 3rd").
        let mayHaveSentTimeDeadline = words.indices.dropFirst().contains { has($0 - 1, .sentTimeDeadline) }
        if let sentAt, statedNow == nil, mayHaveSentTimeDeadline,
           !(signals.namesDay || words.indices.contains { has($0, .otherDay) } || words.contains(where: Self.isOrdinal)) {
            // "by 5pm" sent at 16:50: due 10 minutes after it was sent. Only what reads as a time of day ("5pm",
            // "17:00", "noon", "half past five", a bare "5" ending the message or before "today", "pls", …), not
            // negated ("we don't need it by 5pm"), and not in a message about another day ("tomorrow at 5").
            for index in words.indices.dropFirst() where has(index - 1, .sentTimeDeadline) {
                guard !(max(0, index - 4)..<(index - 1)).contains(where: { has($0, .negator) }) else { continue }
                let spoken = Self.spokenClock(words, at: index, now: sentAt % 720)
                let ahead: Int
                if let spoken {
                    ahead = ((spoken.minutes - sentAt % 720) % 720 + 720) % 720
                } else if let due = Self.minutesAfter(sentAt, untilTimeAt: index, of: words, in: text) {
                    ahead = due
                } else {
                    continue
                }
                if ahead > 0 && ahead <= 60 {
                    signals.minutes = min(signals.minutes ?? .max, ahead)
                    let said = words[index..<(index + (spoken?.wordCount ?? 1))].joined(separator: " ")
                    add(25, .deadline, "deadline: \(words[index - 1]) \(said), \(ahead)\(Self.afterSendingSuffix)")
                }
            }
        }
        if let now = statedNow {
            for index in words.indices.dropFirst() where Self.clockDeadlineWords.contains(words[index - 1]) {
                let spoken = Self.spokenClock(words, at: index, now: now)
                guard spoken != nil || Self.isClockTime(words[index]) || words[index] == "noon" || words[index] == "midnight",
                      let due = spoken?.minutes ?? Self.clockMinutes(words[index]) else { continue }
                let ahead = ((due - now) % 720 + 720) % 720
                if ahead > 0 && ahead <= 60 {
                    signals.minutes = min(signals.minutes ?? .max, ahead)
                    let said = words[index..<(index + (spoken?.wordCount ?? 1))].joined(separator: " ")
                    add(25, .deadline, "deadline: \(words[index - 1]) \(said), \(ahead) min from now")
                }
            }
        }
        signals.exclamations = Self.longestRun(of: UInt8(ascii: "!"), in: text)
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
        signals.shouting = letters >= 8 && Double(capitals) / Double(letters) >= 0.7
        signals.question = text.utf8.contains(UInt8(ascii: "?"))
        // "can you go now": "now" in a request means act within minutes (on its own, "in a taxi now", it does not).
        if signals.has(.request), words.contains("now"), !signals.has(.immediate) { add(15, .immediate, "immediate: asked for now") }
        return signals
    }

    /// The band first, from what kind of message it is — an emergency or something blocking people now (high), a
    /// request, a question or a deadline within days (medium), small talk, news, celebrations and "no rush" (low) —
    /// then a score inside the band from how strong the signals are. An earlier message in `context` that was an
    /// emergency or an outage makes a short follow-up ("any update??") as urgent as it.
    public func score(_ text: String, context: String?) -> PriorityVerdict { score(text, context: context, sentAt: nil) }

    /// The same for a message sent at `sentAt` minutes since midnight (`TimeZone.minutesOfDay(at:)`): a deadline said as a time of
    /// day within the hour after it ("by 5pm" sent at 16:50) makes it urgent, as "in 10 minutes" does. The context is
    /// read without it (it was sent earlier).
    public func score(_ text: String, context: String?, sentAt: Int?) -> PriorityVerdict {
        let t = signals(text, sentAt: sentAt)
        let c = context.map { signals($0) }
        var found = t.found
        let emergency = t.sum(.emergency)
        let calming = t.sum(.negative) < 0
        // "not an emergency, but …", "heads up": the message is not urgent, yet a request in it still wants an answer.
        let hedged = t.has(.hedge)
        // "how was the trip?", "what are you reading?": a question that only makes conversation.
        let chatting = t.has(.smalltalk)
        // Whether the earlier message wants something done (a request, a deadline, a problem).
        let contextAsks = c.map { $0.has(.request) || $0.has(.deadline) || $0.has(.today) || $0.has(.soon) || $0.clockDeadline
            || $0.has(.blocking) || $0.sum(.emergency) > 0 } ?? false
        let benign = t.has(.benign)
        // Every joyful emoji is outside the Basic Multilingual Plane (four UTF-8 bytes, the first 0xF0 or more), so a
        // text without one is not read scalar by scalar.
        let celebrating = t.has(.celebration)
            || (text.utf8.contains { $0 >= 0xF0 } && text.unicodeScalars.contains { $0.value >= 0x1_0000 && Self.joyful.contains($0) })
        let request = t.has(.request) || t.question
        let withinHour = t.minutes.map { $0 <= 60 } ?? false
        let explicit = t.sum(.urgent) >= 30
        let immediate = t.has(.immediate) || withinHour || explicit
        let blocking = t.has(.blocking)
        let day = t.has(.today) || t.clockDeadline
        // A request that names a day ("could you look at my slides, presenting thursday morning") has a deadline.
        let later = t.has(.soon) || (t.has(.deadline) && !withinHour && !day) || (t.has(.request) && t.namesDay)
        let contextHot = c.map { $0.sum(.emergency) >= 30 || $0.has(.blocking) || $0.has(.immediate) || ($0.minutes ?? .max) <= 60 } ?? false
        let followUp = t.wordCount <= 12 && (t.question || t.has(.followup) || t.has(.request))

        var urgency = t.sum(.urgent) + (benign ? 0 : emergency) + t.sum(.escalation) + t.sum(.immediate) + t.sum(.blocking)
        if withinHour { urgency += 50 }
        if explicit { urgency += 15 }
        if request && (emergency >= 25 || blocking || immediate) {
            urgency += 15
            found.append((15, "asked to act on it"))
        }
        if t.shouting && (emergency > 0 || immediate || t.has(.urgent) || blocking || t.has(.request)) && !celebrating {
            let points = t.has(.request) ? 35 : 20
            urgency += points
            found.append((points, "shouting in capitals"))
        }
        if t.exclamations >= 2 && (emergency > 0 || immediate || blocking) {
            urgency += 10
            found.append((10, "exclamations: \(String(repeating: "!", count: min(t.exclamations, 5)))"))
        }
        if contextHot && followUp {
            urgency += 60
            found.append((60, "follow-up on an urgent earlier message"))
        }
        if calming { urgency += t.sum(.negative) }
        urgency += t.sum(.hedge)
        if benign || celebrating { urgency -= 40 }

        let band: String
        if urgency >= Self.highAt {
            band = "high"
        } else if (benign && !t.has(.request)) || (celebrating && !((request || t.has(.deadline)) && (day || later))) || (calming && !day && !later)
                    || (hedged && !(request || day || later))
                    || (chatting && !contextAsks && !(day || immediate || blocking || emergency >= 25 || t.has(.deadline))) {
            band = "low"
        } else if c != nil, followUp, !contextHot,
                  !(day || later || immediate || blocking || emergency >= 15 || t.has(.urgent) || t.has(.deadline)) {
            // "any update??", "news?": as pressing as what it follows up — low after small talk, good news or a
            // plain remark, medium after a request, a deadline or a problem.
            let contextChats = c.map { $0.has(.smalltalk) || $0.has(.celebration) } ?? false
            let contextCalm = c.map { $0.sum(.negative) < 0 && !($0.has(.deadline) || $0.has(.today) || $0.has(.soon)) } ?? false
            band = contextCalm ? "low" : contextAsks ? "medium" : (contextChats || t.has(.followup)) ? "low" : "medium"
        } else if request || day || later || immediate || t.has(.deadline) || blocking || emergency >= 15 || t.has(.urgent)
                    || t.sum(.escalation) >= 15 {
            band = "medium"
        } else {
            band = "low"
        }
        if request && band != "low" { found.append((10, t.has(.request) ? "request" : "direct question awaiting an answer")) }
        let score: Int
        switch band {
        case "high": score = 70 + min(30, max(0, urgency - Self.highAt) / 2)
        case "medium": score = 20 + min(49, max(0, urgency) / 2 + (request ? 10 : 0) + (day ? 10 : 0))
        default: score = max(0, min(19, urgency / 3 + (request ? 5 : 0)))
        }
        let category = Self.category(t, context: c, celebrating: celebrating, band: band)
        let timeframe = band == "high" ? "immediate" : band == "medium" ? (day || t.has(.today) ? "today" : "soon") : "none"
        let margin = band == "high" ? score - 70 : band == "medium" ? min(score - 20, 69 - score) : 19 - score
        let confidence = margin >= 15 ? "high" : margin >= 6 ? "medium" : "low"
        var indicators: [String] = []
        indicators.reserveCapacity(found.count + t.negated.count)
        for entry in found { indicators.append(entry.label) }
        indicators += t.negated
        return PriorityVerdict(urgencyScore: score, reason: Self.reason(band: band, found: found, negated: t.negated),
                               urgencyIndicators: indicators, engine: "rules",
                               confidence: confidence, timeframe: timeframe, category: category,
                               recommendedAction: Self.action(band: band, category: category, timeframe: timeframe))
    }

    /// Why, in words: the band's lead and its first labels of one sign (up to four that raise the urgency for high and
    /// medium; for low, up to three that lower it, else up to three that raise it), then what was negated in brackets.
    /// Written into one string as it goes, instead of filtering, mapping and joining arrays of labels.
    static func reason(band: String, found: [(weight: Int, label: String)], negated: [String]) -> String {
        var text = ""
        text.reserveCapacity(96)
        func list(_ lead: String, positive: Bool, upTo limit: Int) {
            text += lead
            var count = 0
            for entry in found where count < limit && (positive ? entry.weight > 0 : entry.weight < 0) {
                if count > 0 { text += ", " }
                text += entry.label
                count += 1
            }
        }
        let raising = found.contains { $0.weight > 0 }
        switch band {
        case "high": list("Urgent: ", positive: true, upTo: 4)
        case "medium": if raising { list("Some urgency: ", positive: true, upTo: 4) } else { text += "Needs an answer" }
        default:
            if found.contains(where: { $0.weight < 0 }) {
                list("Not urgent: ", positive: false, upTo: 3)
            } else if raising {
                list("Low urgency: ", positive: true, upTo: 3)
            } else {
                text += "No urgency indicators"
            }
        }
        if !negated.isEmpty {
            text += " ("
            for (index, label) in negated.enumerated() {
                if index > 0 { text += ", " }
                text += label
            }
            text += ")"
        }
        return text
    }

    static func category(_ t: Signals, context: Signals?, celebrating: Bool, band: String) -> String {
        if let best = t.categories.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }) { return best.key }
        if let best = context?.categories.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }), band == "high" { return best.key }
        if celebrating { return "social" }
        return band == "low" ? "social" : "info"
    }

    static func action(band: String, category: String, timeframe: String) -> String {
        switch (band, category) {
        case ("high", "emergency"), ("high", "safety"), ("high", "health"):
            return "Respond now; if someone is in danger, call the emergency services."
        case ("high", _): return "Respond now: someone is waiting on you."
        case ("medium", _): return timeframe == "today" ? "Reply today." : "Reply within a day or two."
        default: return "No action needed soon; read when convenient."
        }
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
            // About one word per six bytes of chat: growing the array from empty reallocated it four or five times.
            words.reserveCapacity(bytes.count / 6 + 4)
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
        // "5 pm" → "5pm". Most messages have neither word, and keep their array as it is.
        guard result.contains(where: { $0 == "pm" || $0 == "am" }) else { return result }
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

    /// A count written in digits or words ("10", "ten", "an").
    static func number(_ words: [String], at index: Int) -> Int? {
        let word = words[index]
        return isNumber(word) ? Int(word) ?? 99_999 : numberWords[word]
    }

    /// The time now when the message says it ("it's 2:40", "its 5:50", "2:40 now", "it's quarter to four"), as
    /// minutes past 12.
    /// `nowWordAt`: whether the word at an index is one of `nowWords`.
    static func clockNow(_ words: [String], nowWordAt: (Int) -> Bool) -> Int? {
        for index in words.indices where isClockTime(words[index]) && words[index].count >= 3 {
            let before = index > 0 && nowWordAt(index - 1)
            let after = index + 1 < words.count && words[index + 1] == "now"
            if before || after { return clockMinutes(words[index]) }
        }
        for index in words.indices.dropFirst() where nowWordAt(index - 1) {
            if let spoken = spokenClock(words, at: index, now: nil) { return spoken.minutes }
        }
        return nil
    }

    /// Hours written as words, for "quarter to four".
    static let hourWords: [String: Int] = ["one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                                           "nine": 9, "ten": 10, "eleven": 11, "twelve": 12]

    /// A time said in words, as minutes past 12: "quarter to four", "half past 3", "quarter past twelve"; without the
    /// hour ("the cut-off is half past") it is the half or quarter of the hour it is `now`.
    static func spokenClock(_ words: [String], at index: Int, now: Int?) -> (minutes: Int, wordCount: Int)? {
        guard index + 1 < words.count, let offset = ["quarter": 15, "half": 30][words[index]] else { return nil }
        let before = words[index + 1] == "to"
        guard before || words[index + 1] == "past", !(before && offset == 30) else { return nil }
        let named = index + 2 < words.count ? hourWords[words[index + 2]] ?? Int(words[index + 2]).flatMap { (1...12).contains($0) ? $0 : nil } : nil
        let hourStart: Int
        if let named {
            hourStart = (named % 12) * 60
        } else if let now {
            hourStart = now / 60 * 60 + (before ? 60 : 0)
        } else {
            return nil
        }
        return (((before ? hourStart - offset : hourStart + offset) % 720 + 720) % 720, named == nil ? 2 : 3)
    }

    /// Whether `words` hold `phrase` from `start` on (the caller checks that it fits). Compared word by word in
    /// place: `elementsEqual` over a slice hands over a copy of each word, retaining it.
    static func phrase(_ phrase: [String], isAt start: Int, in words: [String]) -> Bool {
        for offset in phrase.indices where words[start + offset] != phrase[offset] { return false }
        return true
    }

    /// Whether `leadingNumbers(word)` is not empty, without making the substring: the first character is a number
    /// (an ASCII word's first byte is a digit).
    static func startsWithNumber(_ word: String) -> Bool {
        guard let first = word.utf8.first else { return false }
        if first < 0x80 { return first >= 0x30 && first <= 0x39 }
        return word.first?.isNumber == true
    }

    /// The leading run of characters that are numbers (`Character.isNumber`); an ASCII word is read byte by byte.
    static func leadingNumbers(_ word: String) -> Substring {
        let ascii: Int?? = word.utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            guard let first = bytes.first, first < 0x80 else { return bytes.isEmpty ? 0 : nil }
            var count = 0
            while count < bytes.count, bytes[count] >= 0x30, bytes[count] <= 0x39 { count += 1 }
            // A non-ASCII character right after the digits may still be a number ("3½"): the slow path decides.
            if count < bytes.count, bytes[count] >= 0x80 { return nil }
            return count
        }
        if case let count?? = ascii { return word.prefix(count) }
        return word.prefix { $0.isNumber }
    }

    /// Minutes past 12 (o'clock on a 12-hour dial) of "3", "315", "2:40" (folded to "240"), "5pm".
    static func clockMinutes(_ word: String) -> Int? {
        if word == "noon" || word == "midnight" { return 0 }
        let digits = leadingNumbers(word)
        guard let value = Int(digits) else { return nil }
        let (hour, minute) = digits.count <= 2 ? (value, 0) : (value / 100, value % 100)
        guard hour <= 24, minute < 60 else { return nil }
        return (hour % 12) * 60 + minute
    }

    /// Words after a bare hour ("by 5 today") that leave it a time of day; anything else ("at 5 people", "by 2 goals")
    /// makes it a count.
    static let afterBareHour: Set<String> = ["today", "tonight", "latest", "sharp", "pls", "please", "then", "ok", "okay", "and",
                                             "or", "so", "if", "thanks", "thx", "oclock", "o'clock", "x", "cheers", "ish"]
    /// Words that put a message on another day than the one it was sent ("tomorrow at 5", "on the 3rd of nov at 2pm").
    static let otherDayWords: Set<String> = ["tomorrow", "tmrw", "tmr", "tomoz", "yesterday", "next", "week", "weekend", "month",
                                             "jan", "january", "feb", "february", "mar", "march", "apr", "april", "jun", "june",
                                             "jul", "july", "aug", "august", "sep", "sept", "september", "oct", "october", "nov",
                                             "november", "dec", "december"]

    /// Minutes from `sentAt` (minutes since midnight) until the time of day `words[index]` next comes, or nil when it
    /// is not one. A time of day is "5pm", "noon", "17h", a time written with a colon in `text` ("17:00", "4:30"; the
    /// words fold it to "1700"), or a bare hour that ends the message or comes before a word of `afterBareHour` —
    /// "bake at 350", "net zero by 2030", "at 5 people" are counts. "5pm", "17:00", "17h", "noon" and "midnight" are
    /// read on the 24-hour clock, "5" or "4:30" on a 12-hour dial (whichever of the two it could be comes first).
    static func minutesAfter(_ sentAt: Int, untilTimeAt index: Int, of words: [String], in text: String) -> Int? {
        let word = words[index]
        let day = 1440
        func ahead(_ due: Int) -> Int { ((due - sentAt) % day + day) % day }
        if word == "noon" { return ahead(720) }
        if word == "midnight" { return ahead(0) }
        guard isClockTime(word) else { return nil }
        let digits = leadingNumbers(word)
        guard let value = Int(digits) else { return nil }
        let (hour, minute) = digits.count <= 2 ? (value, 0) : (value / 100, value % 100)
        guard hour <= 24, minute < 60 else { return nil }
        let suffix = word.dropFirst(digits.count)
        if suffix == "am" || suffix == "pm" {
            guard (1...12).contains(hour) else { return nil }
            return ahead((hour % 12 + (suffix == "pm" ? 12 : 0)) * 60 + minute)
        }
        if suffix == "h" { return ahead((hour % 24) * 60 + minute) }
        if digits.count >= 3 {
            guard text.contains("\(hour):\(minute < 10 ? "0" : "")\(minute)") else { return nil }
            if hour == 0 || hour > 12 { return ahead((hour % 24) * 60 + minute) }
        } else {
            guard (1...12).contains(hour), index + 1 == words.count || afterBareHour.contains(words[index + 1]) else { return nil }
        }
        return ((hour % 12) * 60 + minute - sentAt % 720 + 720) % 720
    }

    /// "1st", "22nd", "30th".
    static func isOrdinal(_ word: String) -> Bool {
        let digits = leadingNumbers(word)
        return (1...2).contains(digits.count) && ["st", "nd", "rd", "th"].contains(String(word.dropFirst(digits.count)))
    }

    static func isNumber(_ word: String) -> Bool { !word.isEmpty && word.allSatisfy(\.isASCII) && word.allSatisfy(\.isNumber) }

    /// Words are already folded to lowercase.
    static func isClockTime(_ word: String) -> Bool {
        let digits = leadingNumbers(word)
        guard !digits.isEmpty, digits.count <= 4 else { return false }
        let rest = word.dropFirst(digits.count)
        return rest.isEmpty || rest == "am" || rest == "pm" || rest == "h"
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
