import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    public func applyRelationChange(_ change: RelationChange, profile: RelationUser?) async throws(StoreError) -> Bool {
        try await write("record \(change.kind.rawValue) by \(change.actor)") { db in
            switch change.kind {
            case .block:
                try db.execute(sql: "INSERT OR IGNORE INTO block (blocker, blocked, at) VALUES (?, ?, ?)", arguments: [change.actor, change.subject, change.at])
            case .unblock:
                try db.execute(sql: "DELETE FROM block WHERE blocker = ? AND blocked = ?", arguments: [change.actor, change.subject])
            case .follow:
                try db.execute(sql: "INSERT OR IGNORE INTO follow (follower, followee, at) VALUES (?, ?, ?)", arguments: [change.actor, change.subject, change.at])
            case .unfollow:
                try db.execute(sql: "DELETE FROM follow WHERE follower = ? AND followee = ?", arguments: [change.actor, change.subject])
            case .privacy:
                try db.execute(sql: """
                    INSERT INTO relationUser (userId, messagePrivacy) VALUES (?, ?)
                    ON CONFLICT(userId) DO UPDATE SET messagePrivacy = excluded.messagePrivacy WHERE messagePrivacy != excluded.messagePrivacy
                    """, arguments: [change.actor, change.subject])
            case .profile:
                guard let profile else { return false }
                try db.execute(sql: """
                    INSERT INTO relationUser (userId, messagePrivacy, createdAt, trusted) VALUES (?, ?, ?, ?)
                    ON CONFLICT(userId) DO UPDATE SET messagePrivacy = excluded.messagePrivacy, createdAt = excluded.createdAt, trusted = excluded.trusted
                    """, arguments: [profile.userId, profile.messagePrivacy.rawValue, profile.createdAt, profile.trusted])
            }
            let changed = db.changesCount > 0
            if changed {
                try db.execute(sql: "INSERT INTO relationChange (kind, actor, subject, at) VALUES (?, ?, ?, ?)",
                               arguments: [change.kind.rawValue, change.actor, change.subject, change.at])
            }
            return changed
        }
    }

    public func eraseRelations(of userId: String) async throws(StoreError) {
        try await write("erase the relations of \(userId)") { db in
            try db.execute(sql: "DELETE FROM relationUser WHERE userId = ?", arguments: [userId])
            try db.execute(sql: "DELETE FROM follow WHERE follower = ? OR followee = ?", arguments: [userId, userId])
            try db.execute(sql: "DELETE FROM block WHERE blocker = ? OR blocked = ?", arguments: [userId, userId])
            try db.execute(sql: "DELETE FROM relationChange WHERE actor = ? OR subject = ?", arguments: [userId, userId])
            try db.execute(sql: "DELETE FROM messageRequest WHERE sender = ? OR recipient = ?", arguments: [userId, userId])
            try db.execute(sql: "DELETE FROM threadMember WHERE userId = ?", arguments: [userId])
            try db.execute(sql: "INSERT OR IGNORE INTO threadMemberErased (userId) VALUES (?)", arguments: [userId])
            // Counter keys end with the sender (`…:{userId}`) or name them in the middle (duplicates).
            try db.execute(sql: "DELETE FROM spamCounter WHERE key LIKE '%:' || ? ESCAPE '\\'", arguments: [Self.likeEscaped(userId)])
            try db.execute(sql: "DELETE FROM spamDistinct WHERE key LIKE '%:' || ? || ':%' ESCAPE '\\' OR key LIKE '%:' || ? ESCAPE '\\' OR member = ?",
                           arguments: [Self.likeEscaped(userId), Self.likeEscaped(userId), userId])
        }
    }

    static func likeEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
    }

    public func relationUser(_ userId: String) async throws(StoreError) -> RelationUser? {
        try await read("read relations of \(userId)") { db in
            try Row.fetchOne(db, sql: "SELECT * FROM relationUser WHERE userId = ?", arguments: [userId]).map { row in
                RelationUser(userId: row["userId"], messagePrivacy: MessagePrivacy(rawValue: row["messagePrivacy"]) ?? .followers,
                             createdAt: row["createdAt"], trusted: row["trusted"])
            }
        }
    }

    public func isBlocked(blocker: String, blocked: String) async throws(StoreError) -> Bool {
        try await read("read block") { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM block WHERE blocker = ? AND blocked = ?)", arguments: [blocker, blocked]) ?? false
        }
    }

    public func relationFacts(sender: String, recipient: String) async throws(StoreError) -> RelationFacts {
        try await read("read relations of \(sender) and \(recipient)") { db in try Self.facts(db, sender: sender, recipient: recipient) }
    }

    public func recordMessageTally(_ tally: MessageTally, now: Date) async throws(StoreError) -> [CounterSlot: Int] {
        guard !tally.isEmpty else { return [:] }
        return try await write("record the conversation rules' counts (\(tally.requests.count) requests, \(tally.amounts.count + tally.members.count + tally.singletons.count) counters)") { db in
            let request = try db.cachedStatement(sql: "INSERT OR IGNORE INTO messageRequest (sender, recipient, itemId) VALUES (?, ?, ?)")
            for mark in tally.requests {
                try request.execute(arguments: [mark.sender, mark.recipient, mark.itemId])
            }
            var totals: [CounterSlot: Int] = [:]
            let add = try db.cachedStatement(sql: """
                INSERT INTO spamCounter (key, windowStart, count) VALUES (?, ?, ?)
                ON CONFLICT(key, windowStart) DO UPDATE SET count = count + excluded.count
                RETURNING count
                """)
            for (slot, amount) in tally.amounts {
                totals[slot] = try Int.fetchOne(add, arguments: [slot.key, slot.windowStart, amount]) ?? amount
            }
            let insertMember = try db.cachedStatement(sql: "INSERT OR IGNORE INTO spamDistinct (key, windowStart, member) VALUES (?, ?, ?)")
            let countMembers = try db.cachedStatement(sql: "SELECT COUNT(*) FROM spamDistinct WHERE key = ? AND windowStart = ?")
            for (slot, members) in tally.members {
                for member in members {
                    try insertMember.execute(arguments: [slot.key, slot.windowStart, member])
                }
                totals[slot] = try Int.fetchOne(countMembers, arguments: [slot.key, slot.windowStart]) ?? members.count
            }
            // A window only this daemon has a member in is left unwritten: a read, not a row (and its page's WAL frame).
            for (slot, member) in tally.singletons {
                let others = try Int.fetchOne(countMembers, arguments: [slot.key, slot.windowStart]) ?? 0
                if others > 0 {
                    try insertMember.execute(arguments: [slot.key, slot.windowStart, member])
                    totals[slot] = try Int.fetchOne(countMembers, arguments: [slot.key, slot.windowStart]) ?? others + 1
                } else {
                    totals[slot] = 0
                }
            }
            if Int.random(in: 0..<64) == 0 { try Self.sweepCounters(db, now: now) }
            return totals
        }
    }

    public func conversationState(sender: String, recipient: String, facts: Bool, counted: [CounterSlot],
                                  distinct: [CounterSlot], families: [CounterSlot]) async throws(StoreError) -> ConversationState {
        try await read("read the conversation of \(sender) and \(recipient)") { db in
            var state = ConversationState(facts: facts ? try Self.facts(db, sender: sender, recipient: recipient) : nil)
            let total = try db.cachedStatement(sql: "SELECT count FROM spamCounter WHERE key = ? AND windowStart = ?")
            for slot in counted {
                if let count = try Int.fetchOne(total, arguments: [slot.key, slot.windowStart]) { state.totals[slot] = count }
            }
            let members = try db.cachedStatement(sql: "SELECT member FROM spamDistinct WHERE key = ? AND windowStart = ?")
            for slot in distinct {
                state.members[slot] = Set(try String.fetchAll(members, arguments: [slot.key, slot.windowStart]))
            }
            // A family's keys are one range of the primary key (text compares byte by byte here).
            let family = try db.cachedStatement(sql: "SELECT key, member FROM spamDistinct WHERE key >= ? AND key < ? AND windowStart = ?")
            for slot in families {
                let range = slot.familyKeyRange
                let rows = try Row.fetchCursor(family, arguments: [range.from, range.upTo, slot.windowStart])
                while let row = try rows.next() {
                    state.members[CounterSlot(key: row[0], windowStart: slot.windowStart), default: []].insert(row[1])
                }
            }
            return state
        }
    }

    public func relationChanges(after seq: Int64?) async throws(StoreError) -> RelationChangeFeed {
        try await read("read relation changes") { db in
            guard let seq else {
                return RelationChangeFeed(users: [], last: try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM relationChange") ?? 0, complete: true)
            }
            let limit = 5_000
            let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT seq, actor, subject FROM relationChange WHERE seq > ? ORDER BY seq LIMIT ?"),
                                        arguments: [seq, limit + 1])
            guard rows.count <= limit else {
                return RelationChangeFeed(users: [], last: try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM relationChange") ?? seq, complete: false)
            }
            var users = Set<String>()
            for row in rows {
                users.insert(row["actor"])
                users.insert(row["subject"])
            }
            return RelationChangeFeed(users: users, last: rows.last?["seq"] ?? seq, complete: true)
        }
    }

    /// Windows that ended go now and then (a full sweep of both tables), not on every message. `now` is a message's
    /// `sentAt`: one dated ahead of this host's clock must not end windows still being counted (a line dated next
    /// year swept every current counter, and the next flush then counted them from zero): `MessageTally.sweepCutoff`.
    static func sweepCounters(_ db: Database, now: Date) throws {
        let cutoff = MessageTally.sweepCutoff(sentAt: now)
        try db.execute(sql: "DELETE FROM spamCounter WHERE windowStart < ?", arguments: [cutoff])
        try db.execute(sql: "DELETE FROM spamDistinct WHERE windowStart < ?", arguments: [cutoff])
    }

    static func facts(_ db: Database, sender: String, recipient: String) throws -> RelationFacts {
        var facts = RelationFacts()
        let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT
              EXISTS (SELECT 1 FROM block WHERE blocker = :r AND blocked = :s) AS recipientBlockedSender,
              EXISTS (SELECT 1 FROM block WHERE blocker = :s AND blocked = :r) AS senderBlockedRecipient,
              EXISTS (SELECT 1 FROM follow WHERE follower = :s AND followee = :r) AS senderFollowsRecipient,
              EXISTS (SELECT 1 FROM follow WHERE follower = :r AND followee = :s) AS recipientFollowsSender,
              (SELECT messagePrivacy FROM relationUser WHERE userId = :r) AS recipientPrivacy,
              (SELECT createdAt FROM relationUser WHERE userId = :s) AS senderCreatedAt,
              (SELECT json_group_array(itemId) FROM messageRequest WHERE sender = :s AND recipient = :r) AS requestItems
            """), arguments: ["s": sender, "r": recipient])
        guard let row else { return facts }
        facts.recipientBlockedSender = row["recipientBlockedSender"]
        facts.senderBlockedRecipient = row["senderBlockedRecipient"]
        facts.senderFollowsRecipient = row["senderFollowsRecipient"]
        facts.recipientFollowsSender = row["recipientFollowsSender"]
        facts.recipientPrivacy = (row["recipientPrivacy"] as String?).flatMap(MessagePrivacy.init(rawValue:)) ?? .followers
        facts.senderCreatedAt = row["senderCreatedAt"]
        let items: String? = row["requestItems"]
        facts.requestItems = (items.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) } ?? []).sorted()
        return facts
    }

    public func relationHistory(_ userId: String) async throws(StoreError) -> [RelationChange] {
        try await read("read relation history") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM relationChange WHERE actor = ? OR subject = ? ORDER BY seq", arguments: [userId, userId]).compactMap { row in
                guard let kind = RelationChange.Kind(rawValue: row["kind"]) else { return nil }
                return RelationChange(kind: kind, actor: row["actor"], subject: row["subject"], at: row["at"])
            }
        }
    }

    public func usersBlocked(atLeast count: Int, since date: Date) async throws(StoreError) -> [(userId: String, blocks: Int)] {
        try await read("list blocked users") { db in
            try Row.fetchAll(db, sql: """
                SELECT blocked, COUNT(*) AS n FROM block WHERE at >= ? GROUP BY blocked HAVING n >= ? ORDER BY n DESC, blocked LIMIT 200
                """, arguments: [date, count]).map { (userId: $0["blocked"], blocks: $0["n"]) }
        }
    }

}
