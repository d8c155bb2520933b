import Foundation
import SluiceCore

// The values handed from one text stage to the next: Line → Parsed → Filtered → Prioritised.

/// One line of a text queue file, as read.
public struct QueueLine: ItemFacts {
    public var bytes: Data
    /// `queues/text/{file}:{line}`.
    public var source: String
    /// The id a line gets when it has none of its own: `{file}:{line}:{fingerprint}` (the file's, so a reused file name
    /// gives new ids).
    public var fallbackID: ItemID

    /// The line's file was read before (a replay after a crash, or a file dropped again): the rules stage asks the
    /// store whether this message is already recorded before it counts it.
    public var mayBeReplay: Bool
    /// The relation history's point read before the line's file was (`PreparedVerdicts.erasuresSeenUpTo`): the rules'
    /// counts of it leave out users erased after it, as its item does. Nil: no such bound.
    public var erasuresSeenUpTo: Int64?

    public init(bytes: Data, source: String, fallbackID: ItemID, mayBeReplay: Bool = false, erasuresSeenUpTo: Int64? = nil) {
        self.bytes = bytes
        self.source = source
        self.fallbackID = fallbackID
        self.mayBeReplay = mayBeReplay
        self.erasuresSeenUpTo = erasuresSeenUpTo
    }

    public func record(into item: inout Item, scope: RecordScope) {
        guard scope == .upload else { return }
        item.id = fallbackID
        item.contentHash = ContentHash.sha256(bytes)
    }
}

/// A message with a valid id and user: `{id, userId, text, context?, kind?}`.
public struct ParsedMessage: ItemFacts {
    public var id: ItemID
    public var userId: String
    public var content: TextContent
    /// The rules stage's verdict (nil when the stage did not run or found nothing).
    public var rules: ConversationVerdict?
    /// When the app says the message was sent (`sentAt`); windows of the spam counters use it.
    public var sentAt: Date?
    /// A stored message's text classification, kept when the classifier is not re-run.
    public var storedClassification: TextClassification?
    /// From its queue line (`QueueLine.mayBeReplay`).
    public var mayBeReplay = false
    /// From its queue line (`QueueLine.erasuresSeenUpTo`).
    public var erasuresSeenUpTo: Int64?

    public init(id: ItemID, userId: String, content: TextContent, rules: ConversationVerdict? = nil, sentAt: Date? = nil,
                storedClassification: TextClassification? = nil) {
        self.id = id
        self.userId = userId
        self.content = content
        self.rules = rules
        self.sentAt = sentAt
        self.storedClassification = storedClassification
    }

    /// SHA-256 of the text: the same id with the same text is a no-op. Computed when recorded, not on the way.
    public var contentHash: String { ContentHash.sha256(utf8: content.text) }

    public func record(into item: inout Item, scope: RecordScope) {
        guard scope == .upload else { return }
        item.id = id
        item.userId = userId
        item.content = content
        item.contentHash = contentHash
        item.conversation = rules
    }
}

/// What is known about a line that cannot be judged: as much of its id, user and text as could be read.
struct RejectedLine: ItemFacts {
    var id: ItemID
    var userId: String
    var content: TextContent?
    var contentHash: String

    func record(into item: inout Item, scope: RecordScope) {
        guard scope == .upload else { return }
        item.id = id
        item.userId = userId
        item.content = content
        item.contentHash = contentHash
    }
}

/// The filter's verdict (nil: the text filter was not re-run and the stored verdict stays).
public struct Filtered: ItemFacts {
    public var message: ParsedMessage
    public var verdict: TextVerdict?

    public func record(into item: inout Item, scope: RecordScope) {
        message.record(into: &item, scope: scope)
        guard let verdict else { return }
        item.textVerdict = verdict
        let (status, reason) = verdict.outcome
        (item.status, item.reason) = TextOutcome.combine(filterStatus: status, filterReason: reason, rules: message.rules)
    }
}

extension TextVerdict {
    /// The filter's verdict with the classifier's action on an allowed message, and the reason to record: `block` blocks, `review` holds,
    /// `mark` only annotates.
    var outcome: (status: ItemStatus, reason: String?) {
        guard allowed else { return (.blocked, reason) }
        switch classifier?.action {
        case .block?: return (.blocked, classifier?.reason)
        case .review?: return (.review, classifier?.reason)
        case .mark?, nil: return (.approved, nil)
        }
    }
}

/// How urgent the message is (nil: priority was not re-run).
public struct Prioritised: ItemFacts {
    public var filtered: Filtered
    public var priority: PriorityVerdict?

    public func record(into item: inout Item, scope: RecordScope) {
        filtered.record(into: &item, scope: scope)
        if let priority { item.priority = priority }
    }
}

/// How the filter's verdict and the rules stage's verdict make one status: a rules block wins, then the filter's
/// block, then a rules hold (review); `mark` only annotates.
public enum TextOutcome {
    public static func combine(filterStatus: ItemStatus, filterReason: String?, rules: ConversationVerdict?) -> (ItemStatus, String?) {
        guard let rules else { return (filterStatus, filterReason) }
        switch rules.outcome {
        case .block: return (.blocked, rules.reason)
        case .review where filterStatus == .approved: return (.review, rules.reason)
        case .review where filterStatus == .review: return (.review, [rules.reason, filterReason].compactMap { $0 }.joined(separator: "; "))
        default: return (filterStatus, filterReason)
        }
    }
}
