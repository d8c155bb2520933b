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
            counters.append(CounterIncrement(key: "spam.duplicates:\(sender):\(MessageSignals.fingerprint(text))", windowSeconds: spam.duplicates.windowSeconds,
                                             member: recipient))
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
                                                  requestLimit: conversation.requestLimit, counters: counters, now: now, replayed: replayed)
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

/// What the spam signals read from a message's text.
public enum MessageSignals {
    /// Lower-cased host names of the links in the text (`http(s)://…`, `www.…`, or a bare `name.tld/…`).
    public static func links(in text: String) -> [String] {
        var hosts: [String] = []
        // A link has a dot in it: most messages have none, and most words of those that do are not links.
        guard text.utf8.contains(UInt8(ascii: ".")) else { return hosts }
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

    /// `@name` mentions.
    public static func mentions(in text: String) -> Int {
        guard text.utf8.contains(UInt8(ascii: "@")) else { return 0 }
        return text.split(whereSeparator: { $0.isWhitespace }).filter { $0.count > 1 && $0.hasPrefix("@") }.count
    }

    /// The longest run of one repeated character (an emoji counts as one).
    public static func longestRun(in text: String) -> Int {
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
    /// letters (`CharacterSet.letters`) kept, hashed.
    public static func fingerprint(_ text: String) -> String {
        // ASCII text (nearly every message): its letters are A-Z and a-z, lowercased byte by byte, which is what the
        // general path keeps, without a character-set lookup per character (that was ~14% of the CPU of a text queue
        // whose lines have recipients).
        var ascii: [UInt8] = []
        ascii.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            guard byte < 0x80 else { return fingerprint(letters: text) }
            if byte >= 0x41 && byte <= 0x5A {
                ascii.append(byte | 0x20)
            } else if byte >= 0x61 && byte <= 0x7A {
                ascii.append(byte)
            }
        }
        return ContentHash.sha256(Data(ascii)).prefix(24).description
    }

    private static func fingerprint(letters text: String) -> String {
        let letters = text.lowercased().unicodeScalars.filter { CharacterSet.letters.contains($0) }
        return ContentHash.sha256(Data(String(String.UnicodeScalarView(letters)).utf8)).prefix(24).description
    }
}
