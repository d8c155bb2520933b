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
            // Counter keys end with the sender (`…:{userId}`) or name them in the middle (duplicates), compared as
            // PostgreSQL does, case and all (`LIKE` ignored ASCII case: erasing `Ann` also dropped `ann`'s counters).
            try db.execute(sql: "DELETE FROM spamCounter WHERE substr(key, -length(:suffix)) = :suffix", arguments: ["suffix": ":" + userId])
            try db.execute(sql: """
                DELETE FROM spamDistinct WHERE substr(key, -length(:suffix)) = :suffix OR instr(key, :suffix || ':') > 0 OR member = :user
                """, arguments: ["suffix": ":" + userId, "user": userId])
            // Rate-limit windows by their exact keys (`caption:` and `bank-match:` counters name no user).
            let windows = UserRateLimit.keys(of: userId)
            try db.execute(sql: "DELETE FROM rateLimit WHERE key IN (\(Self.placeholders(windows.count)))", arguments: StatementArguments(windows))
            // The one history row the user keeps: daemons following the feed (and API processes at their next
            // rate-limit exchange) forget what they hold of them, and counts made before they heard of it are not
            // written (`recordMessageTally`, `exchangeRateLimitCounts`).
            try db.execute(sql: "INSERT INTO relationChange (kind, actor, subject, at) VALUES (?, ?, ?, ?)",
                           arguments: [RelationChangeFeed.erasureKind, userId, userId, Date()])
        }
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
            // Users erased since the counts were made: nothing of theirs comes back (one writer: an erasure is either
            // before this, and read here, or after it, and deletes what it wrote).
            let kept = try tally.without(users: Self.usersErased(db, after: tally.erasuresSeenUpTo))
            let request = try db.cachedStatement(sql: "INSERT OR IGNORE INTO messageRequest (sender, recipient, itemId) VALUES (?, ?, ?)")
            for mark in kept.requests {
                try request.execute(arguments: [mark.sender, mark.recipient, mark.itemId])
            }
            var totals: [CounterSlot: Int] = [:]
            // Many windows to a statement (below): one statement per window cost more in GRDB's work around each step
            // than in SQLite's, and the store's writer is the text queue's slower half.
            for chunk in CounterStatements.exactChunks(Array(kept.amounts)) {
                let add = try db.cachedStatement(sql: CounterStatements.addAmounts[chunk.count])
                var values: [DatabaseValue] = []
                values.reserveCapacity(chunk.count * 3)
                for (slot, amount) in chunk {
                    values += [slot.key.databaseValue, slot.windowStart.databaseValue, amount.databaseValue]
                    totals[slot] = amount
                }
                let rows = try Row.fetchCursor(add, arguments: StatementArguments(values))
                while let row = try rows.next() { totals[CounterSlot(key: row[0], windowStart: row[1])] = row[2] }
            }
            let insertMember = try db.cachedStatement(sql: "INSERT OR IGNORE INTO spamDistinct (key, windowStart, member) VALUES (?, ?, ?)")
            let countMembers = try db.cachedStatement(sql: "SELECT COUNT(*) FROM spamDistinct WHERE key = ? AND windowStart = ?")
            for (slot, members) in kept.members {
                for member in members {
                    try insertMember.execute(arguments: [slot.key, slot.windowStart, member])
                }
                totals[slot] = try Int.fetchOne(countMembers, arguments: [slot.key, slot.windowStart]) ?? members.count
            }
            // A window only this daemon has a member in is left unwritten: a read, not a row (and its page's WAL frame).
            var others: [CounterSlot: Int] = [:]
            try CounterStatements.eachRow(db, CounterStatements.countMembers, keysOf: kept.singletons.keys) { row, windowStart in
                others[CounterSlot(key: row[0], windowStart: windowStart)] = row[1]
            }
            for (slot, member) in kept.singletons {
                if let count = others[slot], count > 0 {
                    try insertMember.execute(arguments: [slot.key, slot.windowStart, member])
                    totals[slot] = try Int.fetchOne(countMembers, arguments: [slot.key, slot.windowStart]) ?? count + 1
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
        try readNow("read the conversation of \(sender) and \(recipient)") { db in
            var state = ConversationState(facts: facts ? try Self.facts(db, sender: sender, recipient: recipient) : nil)
            // Many windows to a statement (a window turning reads the next window of every busy counter, hundreds of
            // them, while the judging waits).
            try CounterStatements.eachRow(db, CounterStatements.totals, keysOf: counted) { row, windowStart in
                state.totals[CounterSlot(key: row[0], windowStart: windowStart)] = row[1]
            }
            for slot in distinct { state.members[slot] = [] }
            try CounterStatements.eachRow(db, CounterStatements.members, keysOf: distinct) { row, windowStart in
                state.members[CounterSlot(key: row[0], windowStart: windowStart), default: []].insert(row[1])
            }
            // A family's keys are one range of the primary key (text compares byte by byte here); several ranges are
            // read by one statement (SQLite reads each range on the key and joins them).
            try CounterStatements.eachRow(db, CounterStatements.families, keysOf: families, binding: {
                let range = $0.familyKeyRange
                return [range.from.databaseValue, range.upTo.databaseValue]
            }) { row, windowStart in
                state.members[CounterSlot(key: row[0], windowStart: windowStart), default: []].insert(row[1])
            }
            return state
        }
    }

    public func relationChanges(after seq: Int64?, limit: Int) async throws(StoreError) -> RelationChangeFeed {
        try readNow("read relation changes") { db in
            guard let seq else {
                return RelationChangeFeed(users: [], last: try Self.lastRelationChange(db), complete: true)
            }
            let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT seq, actor, subject, kind FROM relationChange WHERE seq > ? ORDER BY seq LIMIT ?"),
                                        arguments: [seq, limit + 1])
            guard rows.count <= limit else {
                let last = try Self.lastRelationChange(db)
                return RelationChangeFeed(users: [], last: last, complete: false, erased: try Self.usersErased(db, after: seq, upTo: last))
            }
            var users = Set<String>(), erased = Set<String>()
            for row in rows {
                users.insert(row[1])
                users.insert(row[2])
                if row[3] == RelationChangeFeed.erasureKind { erased.insert(row[1]) }
            }
            return RelationChangeFeed(users: users, last: rows.last?[0] ?? seq, complete: true, erased: erased)
        }
    }

    /// The relation history's newest sequence number (0 when it is empty).
    static func lastRelationChange(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(seq) FROM relationChange")) ?? 0
    }

    /// Users erased after `seq` in the relation history (up to `last`, when given); none when `seq` is nil.
    static func usersErased(_ db: Database, after seq: Int64?, upTo last: Int64 = .max) throws -> Set<String> {
        guard let seq else { return [] }
        return try Set(String.fetchCursor(db.cachedStatement(sql: "SELECT actor FROM relationChange WHERE seq > ? AND seq <= ? AND kind = ?"),
                                          arguments: [seq, last, RelationChangeFeed.erasureKind]))
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

/// Statements over many counter windows at once. A read's keys go in chunks of at most `maxKeys`, each padded to a
/// power of two with its last key again (a key asked for twice is read once), so only a few statement texts are ever
/// prepared and cached; a write's rows, which must not repeat, go in chunks whose sizes are powers of two.
enum CounterStatements {
    static let maxKeys = 64

    static func paddedChunks<Value>(_ values: [Value]) -> [[Value]] {
        values.chunked(maxKeys).map { slice in
            var chunk = Array(slice)
            var size = 1
            while size < chunk.count { size *= 2 }
            if let last = chunk.last { chunk += repeatElement(last, count: size - chunk.count) }
            return chunk
        }
    }

    static func exactChunks<Value>(_ values: [Value]) -> [ArraySlice<Value>] {
        var chunks: [ArraySlice<Value>] = []
        var start = 0
        var size = maxKeys
        while start < values.count {
            while size > values.count - start { size /= 2 }
            chunks.append(values[start..<start + size])
            start += size
        }
        return chunks
    }

    /// A statement's text for each chunk size (1, 2, 4, … `maxKeys`), made once: making it for every chunk cost as much
    /// as binding its values.
    struct SizedSQL: Sendable {
        private let texts: [String]

        init(_ make: (Int) -> String) {
            texts = (0...maxKeys.trailingZeroBitCount).map { make(1 << $0) }
        }

        /// The text for `count` values (a power of two up to `maxKeys`, as the chunks are; any other count is a
        /// programming error, which would otherwise bind the wrong number of values).
        subscript(count: Int) -> String {
            precondition(count > 0 && count <= maxKeys && count.nonzeroBitCount == 1, "a chunk of \(count) counter windows")
            return texts[count.trailingZeroBitCount]
        }
    }

    /// Runs `sql` (a window start, then each slot's `binding`: its key, or a family's key range) over the windows of
    /// `slots`, grouped by window start and in padded chunks; `body` takes each row with the window start it was read
    /// for.
    static func eachRow(_ db: Database, _ sql: SizedSQL, keysOf slots: some Sequence<CounterSlot>,
                        binding: (CounterSlot) -> [DatabaseValue] = { [$0.key.databaseValue] },
                        _ body: (Row, Int) throws -> Void) throws {
        for (windowStart, slots) in Dictionary(grouping: slots, by: \.windowStart) {
            for chunk in paddedChunks(slots) {
                let rows = try Row.fetchCursor(db.cachedStatement(sql: sql[chunk.count]),
                                               arguments: StatementArguments([windowStart.databaseValue] + chunk.flatMap(binding)))
                while let row = try rows.next() { try body(row, windowStart) }
            }
        }
    }

    /// `count` copies of `each`, joined by `separator` (`SQLiteStore.placeholders` for a list of single values).
    static func repeated(_ each: String, _ count: Int, separator: String) -> String {
        repeatElement(each, count: count).joined(separator: separator)
    }

    static let addAmounts = SizedSQL { count in
        """
        INSERT INTO spamCounter (key, windowStart, count) VALUES \(repeated("(?, ?, ?)", count, separator: ", "))
        ON CONFLICT(key, windowStart) DO UPDATE SET count = count + excluded.count
        RETURNING key, windowStart, count
        """
    }
    static let countMembers = SizedSQL { "SELECT key, COUNT(*) FROM spamDistinct WHERE windowStart = ? AND key IN (\(SQLiteStore.placeholders($0))) GROUP BY key" }
    static let totals = SizedSQL { "SELECT key, count FROM spamCounter WHERE windowStart = ? AND key IN (\(SQLiteStore.placeholders($0)))" }
    static let members = SizedSQL { "SELECT key, member FROM spamDistinct WHERE windowStart = ? AND key IN (\(SQLiteStore.placeholders($0)))" }
    static let families = SizedSQL {
        "SELECT key, member FROM spamDistinct WHERE windowStart = ? AND (\(repeated("(key >= ? AND key < ?)", $0, separator: " OR ")))"
    }
}
