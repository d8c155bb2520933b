import Foundation

/// Who may message a user without following (seed 003): `anyone`, or `followers` (the default).
public enum MessagePrivacy: String, Sendable, Codable, CaseIterable, ConfigChoice {
    case anyone, followers
    public static let role = "a message privacy"
}

/// What Sluice knows of a user from the app: privacy, when the account was made (account-age rules), whether their
/// reports are trusted.
public struct RelationUser: Sendable, Equatable, Codable {
    public var userId: String
    public var messagePrivacy: MessagePrivacy
    public var createdAt: Date?
    /// The `createdAt` a profile may be given, in Unix seconds (1970 to 2100): by the REST profile and the import alike.
    public static let createdAtSeconds = 0.0...4_102_444_800.0
    public var trusted: Bool

    public init(userId: String, messagePrivacy: MessagePrivacy = .followers, createdAt: Date? = nil, trusted: Bool = false) {
        self.userId = userId
        self.messagePrivacy = messagePrivacy
        self.createdAt = createdAt
        self.trusted = trusted
    }
}

/// A change to the relations, kept as history.
public struct RelationChange: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case block, unblock, follow, unfollow, privacy, profile
    }

    public var kind: Kind
    public var actor: String
    /// The other user (block, follow) or the new value (privacy, profile).
    public var subject: String
    public var at: Date

    public init(kind: Kind, actor: String, subject: String, at: Date) {
        self.kind = kind
        self.actor = actor
        self.subject = subject
        self.at = at
    }
}

/// Everything the messaging rules need about one sender and one recipient, read at once.
public struct RelationFacts: Sendable, Equatable {
    public var recipientBlockedSender = false
    public var senderBlockedRecipient = false
    public var senderFollowsRecipient = false
    public var recipientFollowsSender = false
    public var recipientPrivacy: MessagePrivacy = .followers
    public var senderCreatedAt: Date?
    /// The item ids of the message requests (messages sent without a follow that allows it) already counted for this
    /// pair: a message read again finds its own request here and is not counted (or refused) as a second one.
    public var requestItems: [String] = []
    public var requestsSent: Int { requestItems.count }

    public init() {}
}

/// `canMessage`: whether the sender may message the recipient now, why, and how many request messages are left
/// (nil when messaging is not limited).
public struct MessagingPermission: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable {
        case unlimited, request, blocked
    }

    public var allowed: Bool
    public var reason: String
    public var requestsRemaining: Int?
    public var kind: Kind

    public init(allowed: Bool, reason: String, requestsRemaining: Int?, kind: Kind) {
        self.allowed = allowed
        self.reason = reason
        self.requestsRemaining = requestsRemaining
        self.kind = kind
    }

    enum CodingKeys: String, CodingKey { case allowed, reason, requestsRemaining }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allowed, forKey: .allowed)
        try c.encode(reason, forKey: .reason)
        try c.encode(requestsRemaining, forKey: .requestsRemaining)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        allowed = try c.decode(Bool.self, forKey: .allowed)
        reason = try c.decode(String.self, forKey: .reason)
        requestsRemaining = try c.decodeIfPresent(Int.self, forKey: .requestsRemaining)
        kind = allowed ? (requestsRemaining == nil ? .unlimited : .request) : .blocked
    }

    public static let recipientBlockedSender = "recipient has blocked the sender"
    public static let senderBlockedRecipient = "sender has blocked the recipient"
    public static let requestAlreadySent = "Message request already sent. Wait for them to follow you back."

    /// Seed 003's rules, in order: a block in either direction → not allowed; the recipient allows anyone, mutual
    /// follows, or the recipient follows the sender → unlimited; otherwise a message request: `requestLimit`
    /// messages (one in the seed), then not allowed until the recipient follows back.
    public static func decide(_ facts: RelationFacts, requestLimit: Int = 1) -> MessagingPermission {
        if facts.recipientBlockedSender { return .init(allowed: false, reason: recipientBlockedSender, requestsRemaining: 0, kind: .blocked) }
        if facts.senderBlockedRecipient { return .init(allowed: false, reason: senderBlockedRecipient, requestsRemaining: 0, kind: .blocked) }
        if facts.recipientPrivacy == .anyone {
            return .init(allowed: true, reason: "recipient allows messages from anyone", requestsRemaining: nil, kind: .unlimited)
        }
        if facts.senderFollowsRecipient, facts.recipientFollowsSender {
            return .init(allowed: true, reason: "mutual followers", requestsRemaining: nil, kind: .unlimited)
        }
        if facts.recipientFollowsSender {
            return .init(allowed: true, reason: "recipient follows the sender", requestsRemaining: nil, kind: .unlimited)
        }
        let remaining = max(0, requestLimit - facts.requestsSent)
        guard remaining > 0 else { return .init(allowed: false, reason: requestAlreadySent, requestsRemaining: 0, kind: .blocked) }
        return .init(allowed: true, reason: "message request: \(remaining) message\(remaining == 1 ? "" : "s") until the recipient follows back",
                     requestsRemaining: remaining, kind: .request)
    }
}

/// What the rules stage decided about a message, kept on the item: the outcome, every signal that fired (named in
/// the reason), and the reply the sender is told when a block stopped it.
public struct ConversationVerdict: Sendable, Equatable, Codable {
    public enum Outcome: String, Sendable, Codable, ConfigChoice, CaseIterable, Comparable {
        case none, mark, review, block
        public static let role = "a rule outcome"

        var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
        public static func < (a: Self, b: Self) -> Bool { a.rank < b.rank }
    }

    public var outcome: Outcome
    /// `rule: detail` for every signal that fired.
    public var signals: [String]
    public var autoReply: String?

    public init(outcome: Outcome = .none, signals: [String] = [], autoReply: String? = nil) {
        self.outcome = outcome
        self.signals = signals
        self.autoReply = autoReply
    }

    public var reason: String? { signals.isEmpty ? nil : signals.joined(separator: "; ") }
}

/// One windowed counter the rules stage adds to: a count (`member` nil) or a set of distinct members. With
/// `maxSenderAge`, only while the sender's account is younger than that (seconds; unknown age: not counted).
public struct CounterIncrement: Sendable, Equatable {
    public var key: String
    public var amount: Int
    public var windowSeconds: Int
    public var member: String?
    public var maxSenderAge: Double?
    /// For a counter of distinct members whose keys are many (one per text): the family its key belongs to, the
    /// part of the key before its last `:` (`spam.duplicates:{sender}` of `spam.duplicates:{sender}:{fingerprint}`).
    /// A family's window is read from the store at once, so a key new to a reader that has read its family starts
    /// from nothing without a read of its own.
    public var family: String?

    public init(key: String, amount: Int = 1, windowSeconds: Int, member: String? = nil, maxSenderAge: Double? = nil,
                family: String? = nil) {
        self.key = key
        self.amount = amount
        self.windowSeconds = windowSeconds
        self.member = member
        self.maxSenderAge = maxSenderAge
        self.family = family
    }
}

/// What one message's pass through the store found: the relations, the permission (a request is counted when it
/// is delivered as one), and each counter's value after this message (nil when it did not apply).
public struct MessageCounts: Sendable, Equatable {
    public var facts: RelationFacts
    public var permission: MessagingPermission
    public var counters: [Int?]

    public init(facts: RelationFacts, permission: MessagingPermission, counters: [Int?]) {
        self.facts = facts
        self.permission = permission
        self.counters = counters
    }
}
