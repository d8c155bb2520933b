import Foundation

/// One fixed window of one counter (a spam counter such as `spam.flood:{userId}`, or a rate limit such as
/// `text_message:{userId}`): the window starts at a multiple of its length in seconds since 1970.
public struct CounterSlot: Hashable, Sendable, CustomStringConvertible {
    public let key: String
    public let windowStart: Int
    /// Hashed once, when made: the rules' memory looks a slot up some ten times a message, and hashing its key (a
    /// sender and a text's fingerprint, ~45 bytes) each time was most of what a message's counters cost.
    private let hashed: Int

    public init(key: String, windowStart: Int) {
        self.key = key
        self.windowStart = windowStart
        var hasher = Hasher()
        hasher.combine(key)
        hasher.combine(windowStart)
        hashed = hasher.finalize()
    }

    /// The window of `key` that `now` falls in.
    public init(key: String, windowSeconds: Int, at now: Date) {
        self.init(key: key, windowStart: Int(now.timeIntervalSince1970.rounded(.down)) / windowSeconds * windowSeconds)
    }

    public static func == (lhs: CounterSlot, rhs: CounterSlot) -> Bool {
        lhs.hashed == rhs.hashed && lhs.windowStart == rhs.windowStart && lhs.key == rhs.key
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(hashed) }

    public init(_ counter: CounterIncrement, at now: Date) {
        self.init(key: counter.key, windowSeconds: counter.windowSeconds, at: now)
    }

    public var description: String { "\(key)@\(windowStart)" }

    /// For a slot whose key is a counter family: the range of keys of its members (`{family}:` up to `{family};`,
    /// compared byte by byte), which a store reads in key order.
    public var familyKeyRange: (from: String, upTo: String) { (key + ":", key + ";") }

    /// Whether `slot` is a window of a key of this family.
    public func holds(_ slot: CounterSlot) -> Bool {
        slot.windowStart == windowStart && slot.key.utf8.starts(with: (key + ":").utf8)
    }

    /// Whether the key names one of `users` as a store's erasure reads keys: ending with `:{userId}` (a sender's
    /// counters) or holding `:{userId}:` (a sender's texts, `spam.duplicates:{userId}:{fingerprint}`).
    /// Compared byte by byte, as the stores compare keys.
    public func names(any users: Set<String>) -> Bool {
        let key = Array(self.key.utf8)
        return users.contains { user in
            let suffix = Array(":\(user)".utf8), infix = suffix + [UInt8(ascii: ":")]
            if key.count >= suffix.count, key[(key.count - suffix.count)...].elementsEqual(suffix) { return true }
            guard key.count >= infix.count else { return false }
            return (0...(key.count - infix.count)).contains { key[$0..<($0 + infix.count)].elementsEqual(infix) }
        }
    }
}

/// What the conversation rules counted since they last wrote to the store: message requests (keyed by item id,
/// so writing one twice counts it once), amounts added to counters, and distinct members added to sets. Written
/// in one transaction by `StatusStore.recordMessageTally`.
public struct MessageTally: Sendable, Equatable {
    public struct Request: Sendable, Hashable {
        public var sender: String
        public var recipient: String
        public var itemId: String

        public init(sender: String, recipient: String, itemId: String) {
            self.sender = sender
            self.recipient = recipient
            self.itemId = itemId
        }
    }

    public var requests: [Request] = []
    /// Amounts to add to counted slots.
    public var amounts: [CounterSlot: Int] = [:]
    /// Members to add to distinct slots (a member already there counts once).
    public var members: [CounterSlot: Set<String>] = [:]
    /// Distinct slots whose only member, as far as the writer knows, is this one: the store adds it only when the
    /// window already has members (another daemon's), and returns the window's total either way, 0 when it has none
    /// (so a text sent once costs a read, not a row).
    public var singletons: [CounterSlot: String] = [:]
    /// The point of the store's relation history (`RelationChangeFeed.last`) whose erasures these counts already
    /// left out: the store writes nothing that names a user erased after it (`without(users:)`), decided in the same
    /// transaction, so a count made before the writer heard of an erasure does not bring the user's rows back. Nil:
    /// no such check.
    public var erasuresSeenUpTo: Int64?

    public init(requests: [Request] = [], amounts: [CounterSlot: Int] = [:], members: [CounterSlot: Set<String>] = [:],
                singletons: [CounterSlot: String] = [:]) {
        self.requests = requests
        self.amounts = amounts
        self.members = members
        self.singletons = singletons
    }

    public var isEmpty: Bool { requests.isEmpty && amounts.isEmpty && members.isEmpty && singletons.isEmpty }

    /// Every slot the tally adds to or asks about.
    public var slots: Set<CounterSlot> { Set(amounts.keys).union(members.keys).union(singletons.keys) }

    /// Counter windows starting before this (seconds since 1970) have ended and may be swept: 31 days (the longest
    /// window, 30 days, and a day's grace) before the earlier of `sentAt` — the message's time, the app's word — and
    /// this host's clock, so a message dated ahead cannot end the windows still being counted.
    public static func sweepCutoff(sentAt: Date) -> Int {
        Int(min(sentAt, Date()).timeIntervalSince1970) - 31 * 86_400
    }

    /// Everything of the tally that names none of `users` (erased): requests they sent or received, their counters,
    /// and their memberships in others' distinct windows.
    public func without(users: Set<String>) -> MessageTally {
        guard !users.isEmpty else { return self }
        var kept = self
        kept.requests.removeAll { users.contains($0.sender) || users.contains($0.recipient) }
        kept.amounts = amounts.filter { !$0.key.names(any: users) }
        kept.members = [:]
        for (slot, set) in members where !slot.names(any: users) {
            let left = set.subtracting(users)
            if !left.isEmpty { kept.members[slot] = left }
        }
        kept.singletons = singletons.filter { !$0.key.names(any: users) && !users.contains($0.value) }
        return kept
    }

    /// Adds `other` after this tally's own additions (a failed write is merged back in front of newer counts); the
    /// older of the two points whose erasures are left out is kept.
    public mutating func merge(_ other: MessageTally) {
        if let seen = other.erasuresSeenUpTo { erasuresSeenUpTo = min(erasuresSeenUpTo ?? seen, seen) }
        requests += other.requests
        amounts.merge(other.amounts, uniquingKeysWith: +)
        members.merge(other.members) { $0.union($1) }
        for (slot, member) in other.singletons {
            if let mine = singletons[slot], mine != member { members[slot, default: []].formUnion([mine, member]) }
            singletons[slot] = member
        }
        // A singleton whose window has other members in the tally now is written as one of them.
        for (slot, set) in members {
            if let single = singletons.removeValue(forKey: slot) { members[slot] = set.union([single]) }
        }
    }
}

/// Users whose relations changed after a point in the store's relation history (`relationChange.seq`).
public struct RelationChangeFeed: Sendable, Equatable {
    /// The `kind` of the history row an erasure leaves (actor and subject: the user; not one of
    /// `RelationChange.Kind`, so no history lists it): what tells readers of the feed whom to forget.
    public static let erasureKind = "erase"

    /// Actors and subjects of the changes read.
    public var users: Set<String>
    /// The newest change's sequence number (the point to read after next time).
    public var last: Int64
    /// False when there were more changes than one read returns: a reader should forget everything it holds.
    public var complete: Bool
    /// Users erased after the point read from (`eraseRelations`), complete or not: a reader should forget
    /// everything of theirs, counts it has not written yet included.
    public var erased: Set<String>

    public init(users: Set<String>, last: Int64, complete: Bool, erased: Set<String> = []) {
        self.users = users
        self.last = last
        self.complete = complete
        self.erased = erased
    }
}

/// What the store holds for a message the conversation rules have not seen the like of yet: the pair's relations
/// (when asked for) and the counters' windows as every daemon counted them so far.
public struct ConversationState: Sendable, Equatable {
    public var facts: RelationFacts?
    /// Totals of counted windows (absent: nothing counted yet).
    public var totals: [CounterSlot: Int]
    /// Members of distinct windows (those asked for by key, empty when none, and every window of the families asked
    /// for that has members).
    public var members: [CounterSlot: Set<String>]

    public init(facts: RelationFacts?, totals: [CounterSlot: Int] = [:], members: [CounterSlot: Set<String>] = [:]) {
        self.facts = facts
        self.totals = totals
        self.members = members
    }
}
