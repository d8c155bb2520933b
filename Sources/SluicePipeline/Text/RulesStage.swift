import Foundation
import SluiceCore

/// 2. Whether a message may be delivered, before the filter: blocks and message requests (seed 003/004), then the
/// spam signals (`spam.*`). It applies to messages between users — lines with a `recipientId`; posts, comments and
/// backlogs without one go straight to the filter (a backlog read in one go is not a flood). A block stops the message with the rule in the reason (and the auto-reply for a
/// blocked sender); `review` and `mark` go on to the filter and are combined with its verdict. If the store
/// cannot be read the message is held for review (fail closed). Not re-run by `sluice reprocess`: its verdict
/// stands.
struct RulesStage: Stage {
    let name = "rules"
    let rules: ConversationRules

    func run(_ message: ParsedMessage, context: StageContext) async -> StageOutcome<ParsedMessage> {
        guard context.runs(name), message.content.recipientId != nil else { return .proceed(message) }
        var judged = message
        do {
            let verdict = try await rules.judge(message, now: message.sentAt ?? Date())
            judged.rules = verdict.outcome == .none ? nil : verdict
            if verdict.outcome == .block { return .finish(.verdict(.blocked(reason: verdict.reason ?? "blocked by a rule")), facts: judged) }
            return .proceed(judged)
        } catch {
            let reason = "conversation rules could not be checked: \(error)"
            return .finish(context.cannotContinue(.review(reason: reason), keep: reason), facts: message)
        }
    }
}

/// The conversation rules over the store's relations and windowed counters (so several daemons agree), held in
/// memory between batches by one `ConversationLedger` per daemon.
public struct ConversationRules: Sendable {
    public let ledger: ConversationLedger
    let conversation: ConversationConfig
    let spam: SpamConfig

    public init(store: any StatusStore, conversation: ConversationConfig, spam: SpamConfig,
                timing: ConversationLedger.Timing = ConversationLedger.Timing()) {
        ledger = ConversationLedger(store: store, timing: timing)
        self.conversation = conversation
        self.spam = spam
    }

    public func judge(_ message: ParsedMessage, now: Date) async throws -> ConversationVerdict {
        var verdict = ConversationVerdict()
        func fire(_ outcome: ConversationVerdict.Outcome, _ signal: String) {
            verdict.signals.append(signal)
            verdict.outcome = max(verdict.outcome, outcome)
        }
        let sender = message.userId
        guard let recipient = message.content.recipientId, recipient != sender else { return verdict }
        let text = message.content.text
        let links = spam.enabled ? MessageSignals.links(in: text) : []
        let mentions = spam.enabled ? MessageSignals.mentions(in: text) : 0

        // Every counter this message adds to, counted with the relations by the ledger.
        var counters: [CounterIncrement] = []
        var flood: Int?, duplicates: Int?, newMessages: Int?, newLinks: Int?
        var operatorRules: [(SpamConfig.CounterRule, Int?)] = []
        if spam.enabled {
            flood = counters.count
            counters.append(CounterIncrement(key: "spam.flood:\(sender)", windowSeconds: 60))
            duplicates = counters.count
            // One key per text: the sender's keys are read as one family.
            counters.append(CounterIncrement(key: "spam.duplicates:\(sender):\(MessageSignals.fingerprint(text))", windowSeconds: spam.duplicates.windowSeconds,
                                             member: recipient, family: "spam.duplicates:\(sender)"))
            let firstHours = spam.newAccount.firstHours * 3600
            newMessages = counters.count
            counters.append(CounterIncrement(key: "spam.newAccount.messages:\(sender)", windowSeconds: 30 * 86_400, maxSenderAge: firstHours))
            newLinks = counters.count
            counters.append(CounterIncrement(key: "spam.newAccount.links:\(sender)", amount: links.count, windowSeconds: 30 * 86_400, maxSenderAge: firstHours))
            for rule in spam.counters {
                let key = "spam.counters.\(rule.name):\(sender)"
                let maxAge = rule.maxAccountAgeHours.map { $0 * 3600 }
                switch rule.counter {
                case .links where rule.windowSeconds == 0, .mentions where rule.windowSeconds == 0:
                    operatorRules.append((rule, nil))
                case .messages:
                    operatorRules.append((rule, counters.count))
                    counters.append(CounterIncrement(key: key, windowSeconds: rule.windowSeconds, maxSenderAge: maxAge))
                case .links:
                    operatorRules.append((rule, counters.count))
                    counters.append(CounterIncrement(key: key, amount: links.count, windowSeconds: rule.windowSeconds, maxSenderAge: maxAge))
                case .mentions:
                    operatorRules.append((rule, counters.count))
                    counters.append(CounterIncrement(key: key, amount: mentions, windowSeconds: rule.windowSeconds, maxSenderAge: maxAge))
                case .recipients:
                    operatorRules.append((rule, counters.count))
                    counters.append(CounterIncrement(key: key, windowSeconds: rule.windowSeconds, member: recipient, maxSenderAge: maxAge))
                }
            }
        }
        // A line read again after a crash (or a file dropped again) that is already recorded with this text was counted
        // then: its counters are read, not added to (the write will find it unchanged).
        var replayed = false
        if message.mayBeReplay, let stored = try await ledger.store.contentHashes([message.id])[message.id] {
            replayed = stored.hash == message.contentHash
        }
        let counts = try await ledger.countMessage(sender: sender, recipient: recipient, itemId: message.id,
                                                  requestLimit: conversation.requestLimit, counters: counters, now: now, replayed: replayed,
                                                  readAt: message.erasuresSeenUpTo)
        guard counts.permission.allowed else {
            let reason = counts.permission.reason
            fire(.block, reason == MessagingPermission.recipientBlockedSender || reason == MessagingPermission.senderBlockedRecipient
                 ? reason : "message request limit: \(reason)")
            if counts.facts.recipientBlockedSender { verdict.autoReply = conversation.autoReply }
            return verdict
        }
        guard spam.enabled else { return verdict }
        func value(_ index: Int?) -> Int? { index.flatMap { counts.counters[$0] } }
        let age = counts.facts.senderCreatedAt.map { now.timeIntervalSince($0) }

        if let perMinute = value(flood), perMinute > spam.flood.perMinute {
            fire(spam.flood.outcome, "spam.flood: \(perMinute) messages from the sender within a minute (over \(spam.flood.perMinute))")
        }
        if let recipients = value(duplicates), recipients > spam.duplicates.recipients {
            fire(spam.duplicates.outcome, "spam.duplicates: the same text to \(recipients) recipients within \(spam.duplicates.windowSeconds) s (over \(spam.duplicates.recipients))")
        }
        if let blocked = links.first(where: { domain in spam.links.blockedDomains.contains { domain == $0 || domain.hasSuffix("." + $0) } }) {
            fire(spam.links.blockedDomainOutcome, "spam.links: link to blocked domain \(blocked)")
        }
        if !links.isEmpty, spam.links.minAccountAgeHours > 0, let age, age < spam.links.minAccountAgeHours * 3600 {
            fire(spam.links.outcome, "spam.links: a link from an account \(Self.hours(age)) old (under \(Self.hours(spam.links.minAccountAgeHours * 3600)))")
        }
        let run = MessageSignals.longestRun(in: text)
        if run > spam.repeats.maxRun {
            fire(spam.repeats.outcome, "spam.repeats: \(run) repeated characters in a row (over \(spam.repeats.maxRun))")
        }
        if let messages = value(newMessages), let linkCount = value(newLinks), messages > spam.newAccount.messages || linkCount > spam.newAccount.links {
            fire(spam.newAccount.outcome, "spam.newAccount: \(messages) messages and \(linkCount) links in the account's first \(Self.hours(spam.newAccount.firstHours * 3600)) (over \(spam.newAccount.messages) or \(spam.newAccount.links))")
        }
        for (rule, index) in operatorRules {
            let current: Int
            if let index {
                guard let counted = counts.counters[index] else { continue }
                current = counted
            } else {
                if let maxAge = rule.maxAccountAgeHours { guard let age, age < maxAge * 3600 else { continue } }
                current = rule.counter == .links ? links.count : mentions
            }
            if current > rule.threshold {
                fire(rule.outcome, "spam.counters.\(rule.name): \(rule.counter.rawValue) \(current) (over \(rule.threshold)\(rule.windowSeconds > 0 ? " in \(rule.windowSeconds) s" : " in one message"))")
            }
        }
        return verdict
    }

    static func hours(_ seconds: TimeInterval) -> String {
        seconds < 3600 ? "\(Int(seconds / 60)) min" : String(format: "%.1f h", seconds / 3600)
    }
}

/// What the spam signals read from a message's text. Each signal is defined over the text's characters; ASCII text
/// (nearly every message) is read byte by byte instead, which gives the same answer: in ASCII a character is one byte
/// (or CR LF, which is whitespace), a letter is A-Z or a-z, a number is 0-9 and whitespace is U+0009-U+000D or a
/// space. `MessageSignalsTests` holds each signal to its definition.
public enum MessageSignals {
    /// Lower-cased host names of the links in the text (`http(s)://…`, `www.…`, or a bare `name.tld/…`).
    public static func links(in text: String) -> [String] {
        // A link has a dot in it: most messages have none, and most words of those that do are not links.
        guard text.utf8.contains(UInt8(ascii: ".")) else { return [] }
        if let hosts = text.utf8.withContiguousStorageIfAvailable({ ASCIISignals.links($0) }), let hosts { return hosts }
        var hosts: [String] = []
        for token in text.split(whereSeparator: { $0.isWhitespace || "<>()[]{}\"'".contains($0) }) where token.utf8.contains(UInt8(ascii: ".")) {
            var candidate = Substring(token.lowercased())
            if let scheme = candidate.range(of: "://") {
                guard candidate[..<scheme.lowerBound].allSatisfy({ $0.isLetter }) else { continue }
                candidate = candidate[scheme.upperBound...]
            } else if !(candidate.hasPrefix("www.") || candidate.contains("/")) {
                continue
            }
            let host = candidate.prefix { $0 != "/" && $0 != "?" && $0 != "#" && $0 != ":" }.trimmingCharacters(in: CharacterSet(charactersIn: ".,;!"))
            let labels = host.split(separator: ".")
            guard labels.count >= 2, let tld = labels.last, tld.count >= 2, tld.allSatisfy({ $0.isLetter }),
                  host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) else { continue }
            hosts.append(host)
        }
        return hosts
    }

    /// `@name` mentions: words (split at whitespace) of two or more characters that start with `@`.
    public static func mentions(in text: String) -> Int {
        guard text.utf8.contains(UInt8(ascii: "@")) else { return 0 }
        if let count = text.utf8.withContiguousStorageIfAvailable({ ASCIISignals.mentions($0) }), let count { return count }
        return text.split(whereSeparator: { $0.isWhitespace }).filter { $0.count > 1 && $0.hasPrefix("@") }.count
    }

    /// The longest run of one repeated character (an emoji counts as one); whitespace is skipped, not counted.
    public static func longestRun(in text: String) -> Int {
        if let longest = text.utf8.withContiguousStorageIfAvailable({ ASCIISignals.longestRun($0) }), let longest { return longest }
        var longest = 0
        var current = 0
        var previous: Character?
        for character in text where !character.isWhitespace {
            current = character == previous ? current + 1 : 1
            previous = character
            longest = max(longest, current)
        }
        return longest
    }

    /// The same text up to case, spacing, digits and punctuation: near-duplicates share it. The text lowercased, its
    /// letters (`CharacterSet.letters`) kept, hashed (the first 12 bytes of its SHA-256, as hex).
    public static func fingerprint(_ text: String) -> String {
        // ASCII text (nearly every message): its letters are A-Z and a-z, lowercased byte by byte, which is what the
        // general path keeps, without a character-set lookup per character (that was ~14% of the CPU of a text queue
        // whose lines have recipients).
        var letters: [UInt8] = []
        letters.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            guard byte < 0x80 else { return fingerprint(unicode: text) }
            if ASCIISignals.isLetter(byte) { letters.append(byte | 0x20) }
        }
        return ContentHash.sha256Prefix(letters, bytes: 12)
    }

    private static func fingerprint(unicode text: String) -> String {
        // `lowercased()` maps each scalar on its own (its full lowercase mapping), so the letters are picked scalar by
        // scalar from those mappings, without lowercasing the whole text into a new string first (that was most of the
        // cost of a message with an emoji). Lowercasing can make ASCII of what was not ("K", the Kelvin sign, is "k";
        // "İ" is "i" and a combining dot): an ASCII scalar is a letter when it is a-z (nothing lowercased is A-Z);
        // others are looked up.
        var letters: [UInt8] = []
        letters.reserveCapacity(text.utf8.count)
        func keep(_ scalar: Unicode.Scalar) {
            if scalar.isASCII ? (scalar.value >= 0x61 && scalar.value <= 0x7A) : CharacterSet.letters.contains(scalar) {
                UTF8.encode(scalar) { letters.append($0) }
            }
        }
        for scalar in text.unicodeScalars {
            if scalar.isASCII {
                let byte = UInt8(scalar.value)
                if ASCIISignals.isLetter(byte) { letters.append(byte | 0x20) }
            } else if scalar.properties.changesWhenLowercased {
                for lowered in scalar.properties.lowercaseMapping.unicodeScalars { keep(lowered) }
            } else {
                keep(scalar)
            }
        }
        return ContentHash.sha256Prefix(letters, bytes: 12)
    }
}

/// The spam signals over ASCII bytes (nil when the text is not ASCII): what `MessageSignals` defines over characters.
private enum ASCIISignals {
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) }
    static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool { !bytes.contains { $0 >= 0x80 } }

    static func longestRun(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var longest = 0
        var current = 0
        var previous: UInt8 = 0x80 // never an ASCII byte
        for byte in bytes {
            guard byte < 0x80 else { return nil }
            if isWhitespace(byte) { continue }
            current = byte == previous ? current + 1 : 1
            previous = byte
            if current > longest { longest = current }
        }
        return longest
    }

    static func mentions(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard isASCII(bytes) else { return nil }
        var count = 0
        var start = 0
        for end in 0...bytes.count where end == bytes.count || isWhitespace(bytes[end]) {
            if end - start > 1, bytes[start] == UInt8(ascii: "@") { count += 1 }
            start = end + 1
        }
        return count
    }

    static func isLinkSeparator(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "["), UInt8(ascii: "]"),
             UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "\""), UInt8(ascii: "'"): true
        default: isWhitespace(byte)
        }
    }

    static func links(_ bytes: UnsafeBufferPointer<UInt8>) -> [String]? {
        guard isASCII(bytes) else { return nil }
        var hosts: [String] = []
        var start = 0
        for end in 0...bytes.count where end == bytes.count || isLinkSeparator(bytes[end]) {
            if end > start, let host = host(UnsafeBufferPointer(rebasing: bytes[start..<end])) { hosts.append(host) }
            start = end + 1
        }
        return hosts
    }

    /// The lower-cased host a word links to, if it is a link.
    private static func host(_ word: UnsafeBufferPointer<UInt8>) -> String? {
        guard word.contains(UInt8(ascii: ".")) else { return nil }
        let lower = word.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        var from = 0
        if let scheme = firstScheme(lower) {
            guard lower[..<scheme].allSatisfy(isLetter) else { return nil }
            from = scheme + 3
        } else if !(lower.starts(with: Array("www.".utf8)) || lower.contains(UInt8(ascii: "/"))) {
            return nil
        }
        var to = from
        while to < lower.count, !"/?#:".utf8.contains(lower[to]) { to += 1 }
        let trimmed: Set<UInt8> = [UInt8(ascii: "."), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "!")]
        while from < to, trimmed.contains(lower[from]) { from += 1 }
        while to > from, trimmed.contains(lower[to - 1]) { to -= 1 }
        let host = lower[from..<to]
        let labels = host.split(separator: UInt8(ascii: "."))
        guard labels.count >= 2, let tld = labels.last, tld.count >= 2, tld.allSatisfy(isLetter),
              host.allSatisfy({ isLetter($0) || isDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }) else { return nil }
        return String(decoding: host, as: UTF8.self)
    }

    /// Where the first "://" starts.
    private static func firstScheme(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 3 else { return nil }
        for index in 0...(bytes.count - 3) where bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: "/")
            && bytes[index + 2] == UInt8(ascii: "/") { return index }
        return nil
    }
}
