import Foundation
import SluiceCore

/// The relations the app mirrors into Sluice (blocks, follows, message privacy, profiles), with history; the one
/// place the API's callables and REST endpoints and `sluice relations import` change them.
public struct Relations: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        /// A user naming themselves (blocking or following themselves): valid input, not a possible relation.
        public var isSelf = false
        public var description: String { message }
    }

    let store: any StatusStore
    let conversation: ConversationConfig

    public init(store: any StatusStore, conversation: ConversationConfig) {
        self.store = store
        self.conversation = conversation
    }

    static func check(_ user: String, _ role: String) throws {
        if let problem = Identifiers.problem(with: user, role: role) { throw Failure(message: problem) }
    }

    @discardableResult
    public func block(_ blocker: String, _ blocked: String, on: Bool, at date: Date = Date()) async throws -> Bool {
        try Self.check(blocker, "blocker")
        try Self.check(blocked, "blocked user")
        guard blocker != blocked else { throw Failure(message: "users cannot block themselves", isSelf: true) }
        return try await store.applyRelationChange(RelationChange(kind: on ? .block : .unblock, actor: blocker, subject: blocked, at: date), profile: nil)
    }

    @discardableResult
    public func follow(_ follower: String, _ followee: String, on: Bool, at date: Date = Date()) async throws -> Bool {
        try Self.check(follower, "follower")
        try Self.check(followee, "followed user")
        guard follower != followee else { throw Failure(message: "users cannot follow themselves", isSelf: true) }
        return try await store.applyRelationChange(RelationChange(kind: on ? .follow : .unfollow, actor: follower, subject: followee, at: date), profile: nil)
    }

    @discardableResult
    public func setPrivacy(_ user: String, _ privacy: MessagePrivacy, at date: Date = Date()) async throws -> Bool {
        try Self.check(user, "user")
        return try await store.applyRelationChange(RelationChange(kind: .privacy, actor: user, subject: privacy.rawValue, at: date), profile: nil)
    }

    /// A user's profile as the app knows it (privacy, account creation, trusted reporter).
    @discardableResult
    public func setProfile(_ profile: RelationUser, at date: Date = Date()) async throws -> Bool {
        try Self.check(profile.userId, "user")
        let summary = "\(profile.messagePrivacy.rawValue)\(profile.trusted ? ", trusted" : "")"
        return try await store.applyRelationChange(RelationChange(kind: .profile, actor: profile.userId, subject: summary, at: date), profile: profile)
    }

    public func isBlocked(_ blocker: String, _ blocked: String) async throws -> Bool {
        try Self.check(blocker, "blocker")
        try Self.check(blocked, "blocked user")
        return try await store.isBlocked(blocker: blocker, blocked: blocked)
    }

    /// Seed 003's rules for a message from `sender` to `recipient` now.
    public func canMessage(_ sender: String, _ recipient: String) async throws -> MessagingPermission {
        try Self.check(sender, "sender")
        try Self.check(recipient, "recipientId")
        guard sender != recipient else { return MessagingPermission(allowed: true, reason: "a note to self", requestsRemaining: nil, kind: .unlimited) }
        return MessagingPermission.decide(try await store.relationFacts(sender: sender, recipient: recipient), requestLimit: conversation.requestLimit)
    }

    public struct ImportSummary: Sendable, Codable, Equatable {
        public var applied = 0
        public var unchanged = 0
        public var rejected: [String] = []
    }

    /// `sluice relations import`: one JSON object per line — `{"type": "user", "userId", "messagePrivacy"?,
    /// "createdAt"? (RFC 3339 or Unix seconds), "trusted"?}`, `{"type": "follow"|"block", "from", "to"}`. Bad lines
    /// (an unknown field too) are listed with their number and reason; the rest is applied.
    public func importLines(_ data: Data, source: String) async throws -> ImportSummary {
        var summary = ImportSummary()
        var number = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            let bytes = Data(line)
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            do {
                let object: [String: Any]
                switch JSONLine.object(bytes) {
                case let .success(value): object = value
                case let .failure(problem): throw Failure(message: problem.message)
                }
                let changed: Bool
                let allowed: Set<String> = switch object["type"] as? String {
                case "user": ["type", "userId", "messagePrivacy", "createdAt", "trusted"]
                default: ["type", "from", "to"]
                }
                if let extra = object.keys.filter({ !allowed.contains($0) }).sorted().first {
                    throw Failure(message: "unknown field \"\(extra)\"; allowed: \(allowed.sorted().joined(separator: ", "))")
                }
                switch object["type"] as? String {
                case "user":
                    guard let user = object["userId"] as? String else { throw Failure(message: "missing \"userId\"") }
                    try Self.check(user, "user")
                    // Fields the line leaves out keep their stored values, as the REST profile's PUT does.
                    let stored = try await store.relationUser(user)
                    var profile = stored ?? RelationUser(userId: user)
                    if let raw = object["messagePrivacy"] {
                        guard let text = raw as? String, let privacy = MessagePrivacy(rawValue: text) else {
                            throw Failure(message: "\"messagePrivacy\" must be anyone or followers")
                        }
                        profile.messagePrivacy = privacy
                    }
                    if let raw = object["createdAt"] {
                        // An RFC 3339 date-time, or Unix seconds as the REST profile takes it.
                        let range = RelationUser.createdAtSeconds
                        if let text = raw as? String, let date = Self.date(text) {
                            guard range.contains(date.timeIntervalSince1970) else {
                                throw Failure(message: "\"createdAt\" \(text) is outside 1970-01-01 … 2100-01-01")
                            }
                            profile.createdAt = date
                        } else if let seconds = raw as? NSNumber, !JSONLine.isBoolean(seconds), seconds.doubleValue.isFinite {
                            guard range.contains(seconds.doubleValue) else {
                                throw Failure(message: "\"createdAt\" must be Unix seconds in 0...4102444800, not \(seconds)")
                            }
                            profile.createdAt = Date(timeIntervalSince1970: seconds.doubleValue)
                        } else {
                            throw Failure(message: "\"createdAt\" must be an ISO 8601 date-time or Unix seconds")
                        }
                    }
                    if let raw = object["trusted"] {
                        guard let flag = raw as? Bool else { throw Failure(message: "\"trusted\" must be true or false") }
                        profile.trusted = flag
                    }
                    // The same profile again (an import run twice) changes nothing and adds no history.
                    changed = Self.sameProfile(profile, stored) ? false : try await setProfile(profile)
                case let kind? where kind == "follow" || kind == "block":
                    guard let from = object["from"] as? String, let to = object["to"] as? String else {
                        throw Failure(message: "a \(kind) needs \"from\" and \"to\" user ids")
                    }
                    changed = kind == "follow" ? try await follow(from, to, on: true) : try await block(from, to, on: true)
                default:
                    throw Failure(message: "\"type\" must be user, follow or block")
                }
                if changed { summary.applied += 1 } else { summary.unchanged += 1 }
            } catch let failure as Failure {
                summary.rejected.append("\(source):\(number): \(failure.message)")
            }
        }
        return summary
    }

    /// Whether an imported profile is the stored one (dates to the millisecond, which is what a store keeps).
    static func sameProfile(_ profile: RelationUser, _ stored: RelationUser?) -> Bool {
        guard let stored else { return false }
        let milliseconds = { (date: Date?) in date.map { ($0.timeIntervalSince1970 * 1000).rounded() } }
        return profile.userId == stored.userId && profile.messagePrivacy == stored.messagePrivacy && profile.trusted == stored.trusted
            && milliseconds(profile.createdAt) == milliseconds(stored.createdAt)
    }

    /// RFC 3339 date-times: `Z` or an offset, with or without fractional seconds (any case).
    public static func date(_ text: String) -> Date? {
        let upper = text.uppercased()
        guard let date = (try? fractionalSeconds.parse(upper)) ?? (try? wholeSeconds.parse(upper)), isCalendarDate(upper) else { return nil }
        return date
    }

    /// Whether the date and time written (`YYYY-MM-DDTHH:MM:SS`) exist: the parse styles roll an impossible one over
    /// (`2026-02-30` became 2 March).
    static func isCalendarDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8.prefix(19))
        guard bytes.count == 19 else { return false }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard (0x30...0x39).contains(bytes[index]) else { return nil }
                value = value * 10 + Int(bytes[index] - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), hour <= 23, minute <= 59, second <= 59 else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }

    /// Parse styles are immutable values: made once, not per line (an `ISO8601DateFormatter` per call cost a third
    /// of the text queue's time).
    static let fractionalSeconds = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    static let wholeSeconds = Date.ISO8601FormatStyle()
}
