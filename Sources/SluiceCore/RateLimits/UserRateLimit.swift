/// The per-user rate limits (`limits.rate.*`) and how their windows are keyed in the store's `rateLimit` table:
/// `{name}:{userId}`. The one place that knows that key, so an erasure deletes exactly a user's windows and a write
/// can leave out those of a user erased meanwhile; other counters in the table (`caption:{address}`,
/// `bank-match:{bank}:{hash}`) name no user.
public enum UserRateLimit: String, CaseIterable, Sendable {
    case imageUpload = "image_upload"
    case textMessage = "text_message"
    case report
    case detectPriority = "detect_priority"
    /// summarizeThread, extractActionItems, trackDecisions, smartSearch.
    case threads

    /// The key of this limit's windows for `user`.
    public func key(for user: String) -> String { "\(rawValue):\(user)" }

    /// Every key `user`'s windows can have.
    public static func keys(of user: String) -> [String] { allCases.map { $0.key(for: user) } }

    /// The user a `rateLimit` key counts for (bytes after the first colon, as the stores compare them); nil for the
    /// keys of other counters.
    public static func user(ofKey key: String) -> String? {
        let bytes = key.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              Self(rawValue: String(decoding: bytes[..<colon], as: UTF8.self)) != nil else { return nil }
        return String(decoding: bytes[bytes.index(after: colon)...], as: UTF8.self)
    }
}

/// What `StatusStore.exchangeRateLimitCounts` did: each window's total after it (every process's counts), and the
/// users erased after the point it was given, up to the point it read.
public struct RateLimitExchange: Sendable, Equatable {
    public var totals: [CounterSlot: Int]
    /// Users erased after the given point: whoever holds counts of theirs forgets them (none of them was written).
    public var erased: Set<String>
    /// The relation feed's newest point when the counts were written: the one to give next time.
    public var erasuresSeenUpTo: Int64

    public init(totals: [CounterSlot: Int], erased: Set<String> = [], erasuresSeenUpTo: Int64) {
        self.totals = totals
        self.erased = erased
        self.erasuresSeenUpTo = erasuresSeenUpTo
    }
}
