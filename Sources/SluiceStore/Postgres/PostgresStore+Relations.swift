import Foundation
import Logging
import PostgresNIO
import SluiceCore

extension PostgresStore {
    /// The change's row write reports whether it changed anything (`RETURNING 1`); only then is the history row
    /// appended, under `FeedLock.relations` so that appends commit in `seq` order.
    public func applyRelationChange(_ change: RelationChange, profile: RelationUser?) async throws(StoreError) -> Bool {
        let query: PostgresQuery
        switch change.kind {
        case .block:
            query = """
                INSERT INTO block (blocker, blocked, at) VALUES (\(change.actor), \(change.subject), \(change.at))
                ON CONFLICT DO NOTHING RETURNING 1
                """
        case .unblock:
            query = "DELETE FROM block WHERE blocker = \(change.actor) AND blocked = \(change.subject) RETURNING 1"
        case .follow:
            query = """
                INSERT INTO follow (follower, followee, at) VALUES (\(change.actor), \(change.subject), \(change.at))
                ON CONFLICT DO NOTHING RETURNING 1
                """
        case .unfollow:
            query = "DELETE FROM follow WHERE follower = \(change.actor) AND followee = \(change.subject) RETURNING 1"
        case .privacy:
            query = """
                INSERT INTO relationUser (userId, messagePrivacy) VALUES (\(change.actor), \(change.subject))
                ON CONFLICT (userId) DO UPDATE SET messagePrivacy = excluded.messagePrivacy
                WHERE relationUser.messagePrivacy <> excluded.messagePrivacy
                RETURNING 1
                """
        case .profile:
            guard let profile else { return false }
            query = """
                INSERT INTO relationUser (userId, messagePrivacy, createdAt, trusted)
                VALUES (\(profile.userId), \(profile.messagePrivacy.rawValue), \(profile.createdAt), \(profile.trusted))
                ON CONFLICT (userId) DO UPDATE SET messagePrivacy = excluded.messagePrivacy, createdAt = excluded.createdAt,
                    trusted = excluded.trusted
                RETURNING 1
                """
        }
        let logger = logger
        return try await transaction("record \(change.kind.rawValue) by \(change.actor)") { connection in
            let changed = try await connection.rows(query, logger: logger).isEmpty == false
            if changed {
                try await connection.lock(.relations, logger: logger)
                try await connection.run("""
                    INSERT INTO relationChange (kind, actor, subject, at)
                    VALUES (\(change.kind.rawValue), \(change.actor), \(change.subject), \(change.at))
                    """, logger: logger)
            }
            return changed
        }
    }

    /// Counter keys are matched by suffix and substring (`right`, `strpos`), as SQLite's `substr` and `instr`: exactly,
    /// case and all.
    public func eraseRelations(of userId: String) async throws(StoreError) {
        let logger = logger
        try await transaction("erase the relations of \(userId)") { connection in
            // Alone, while counts are written under the same lock shared (`recordMessageTally`): a write either
            // commits before (and its rows go below) or reads this erasure once it commits (and leaves them out).
            try await connection.lock(.userErasure, logger: logger)
            try await connection.run("DELETE FROM relationUser WHERE userId = \(userId)", logger: logger)
            try await connection.run("DELETE FROM follow WHERE follower = \(userId) OR followee = \(userId)", logger: logger)
            try await connection.run("DELETE FROM block WHERE blocker = \(userId) OR blocked = \(userId)", logger: logger)
            try await connection.run("DELETE FROM relationChange WHERE actor = \(userId) OR subject = \(userId)", logger: logger)
            try await connection.run("DELETE FROM messageRequest WHERE sender = \(userId) OR recipient = \(userId)", logger: logger)
            try await connection.run("DELETE FROM threadMember WHERE userId = \(userId)", logger: logger)
            try await connection.run("INSERT INTO threadMemberErased (userId) VALUES (\(userId)) ON CONFLICT DO NOTHING", logger: logger)
            // Counter keys end with the sender (`…:{userId}`) or name them in the middle (duplicates).
            try await connection.run("""
                DELETE FROM spamCounter WHERE right(key, char_length(':' || \(userId))) = ':' || \(userId)
                """, logger: logger)
            try await connection.run("""
                DELETE FROM spamDistinct
                WHERE strpos(key, ':' || \(userId) || ':') > 0 OR right(key, char_length(':' || \(userId))) = ':' || \(userId)
                    OR member = \(userId)
                """, logger: logger)
            // Rate-limit windows by their exact keys (`caption:` and `bank-match:` counters name no user).
            try await connection.run("DELETE FROM rateLimit WHERE key = ANY(\(UserRateLimit.keys(of: userId)))", logger: logger)
            // The one history row the user keeps: daemons following the feed, and API processes at their next
            // rate-limit exchange, forget what they hold of them.
            try await connection.lock(.relations, logger: logger)
            try await connection.run("""
                INSERT INTO relationChange (kind, actor, subject, at)
                VALUES (\(RelationChangeFeed.erasureKind), \(userId), \(userId), \(Date()))
                """, logger: logger)
        }
    }

    public func relationUser(_ userId: String) async throws(StoreError) -> RelationUser? {
        let operation = "read relations of \(userId)"
        let found = try await rows(operation, """
            SELECT userId, messagePrivacy, createdAt, trusted FROM relationUser WHERE userId = \(userId)
            """)
        guard let row = found.first else { return nil }
        do {
            let (id, privacy, createdAt, trusted) = try row.decode((String, String, Date?, Bool).self)
            return RelationUser(userId: id, messagePrivacy: MessagePrivacy(rawValue: privacy) ?? .followers, createdAt: createdAt,
                                trusted: trusted)
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    public func isBlocked(blocker: String, blocked: String) async throws(StoreError) -> Bool {
        let found = try await rows("read block", "SELECT EXISTS (SELECT 1 FROM block WHERE blocker = \(blocker) AND blocked = \(blocked))")
        do {
            return try found.first?.decode(Bool.self) ?? false
        } catch {
            throw Self.storeError("read block", error)
        }
    }

    public func relationFacts(sender: String, recipient: String) async throws(StoreError) -> RelationFacts {
        let operation = "read relations of \(sender) and \(recipient)"
        let found = try await rows(operation, Self.relationFactsQuery(sender: sender, recipient: recipient))
        do {
            return try Self.decodeRelationFacts(found.first)
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    /// Several daemons on several hosts write tallies at once. Amounts are added by the upsert itself
    /// (`count = spamCounter.count + excluded.count`), whose `RETURNING` is the total after every write committed
    /// before it. Distinct windows take a transaction-scoped advisory lock per slot first (in one order), so the
    /// count read after inserting the members includes every other writer's members: without it two writers adding
    /// different members could each miss the other's. Rows are written in key order so writers never wait on each
    /// other in a cycle.
    public func recordMessageTally(_ tally: MessageTally, now: Date) async throws(StoreError) -> [CounterSlot: Int] {
        guard !tally.isEmpty else { return [:] }
        let logger = logger
        let sweep = Int.random(in: 0..<64) == 0
        return try await transaction("record the conversation rules' counts (\(tally.requests.count) requests, \(tally.amounts.count + tally.members.count + tally.singletons.count) counters)") { connection in
            guard let seen = tally.erasuresSeenUpTo else {
                return try await Self.write(tally, sweep: sweep, now: now, on: connection, logger: logger)
            }
            // Users erased since the counts were made: nothing of theirs comes back (see `eraseRelations`).
            let erased = try await Self.usersErased(after: seen, on: connection, logger: logger)
            return try await Self.write(tally.without(users: erased), sweep: sweep, now: now, on: connection, logger: logger)
        }
    }

    /// Users erased after `seen` in the relation history, read in the current transaction under `FeedLock.userErasure`
    /// shared (taken in its own statement first: a statement's snapshot is taken before a lock it asks for is
    /// granted). An erasure, which takes the lock alone, either committed before and is read here, or waits for this
    /// transaction and then deletes what it wrote.
    static func usersErased(after seen: Int64, on connection: PostgresConnection, logger: Logger) async throws -> Set<String> {
        try await connection.lock(.userErasure, shared: true, logger: logger)
        var erased = Set<String>()
        for row in try await connection.rows("""
            SELECT actor FROM relationChange WHERE seq > \(seen) AND kind = \(RelationChangeFeed.erasureKind)
            """, logger: logger) {
            erased.insert(try row.decode(String.self))
        }
        return erased
    }

    /// The writes of `recordMessageTally` on its transaction's connection.
    private static func write(_ tally: MessageTally, sweep: Bool, now: Date, on connection: PostgresConnection,
                              logger: Logger) async throws -> [CounterSlot: Int] {
        guard !tally.isEmpty else { return [:] }
        // Column arrays for `unnest`: one statement per table.
        let senders = tally.requests.map(\.sender), recipients = tally.requests.map(\.recipient), items = tally.requests.map(\.itemId)
        let amounts = Array(tally.amounts)
        let countedKeys = amounts.map { $0.key.key }, countedStarts = amounts.map { $0.key.windowStart }
        let added = amounts.map { $0.value }
        let members = tally.members.flatMap { slot, set in set.map { (slot: slot, member: $0) } }
        let memberKeys = members.map { $0.slot.key }, memberStarts = members.map { $0.slot.windowStart }
        let memberNames = members.map { $0.member }
        let singletons = Array(tally.singletons)
        let singleKeys = singletons.map { $0.key.key }, singleStarts = singletons.map { $0.key.windowStart }
        let singleNames = singletons.map { $0.value }
        let distinct = Array(tally.members.keys) + singletons.map(\.key)
        let distinctKeys = distinct.map(\.key), distinctStarts = distinct.map(\.windowStart)
        if !distinct.isEmpty {
            try await connection.run("""
                SELECT pg_advisory_xact_lock(hashtext('sluice-slot:' || current_schema()), k) FROM (
                    SELECT DISTINCT hashtext(key || '@' || windowStart) AS k
                    FROM unnest(\(distinctKeys), \(distinctStarts)) AS s(key, windowStart)
                    ORDER BY k
                ) AS slots
                """, logger: logger)
        }
        if !senders.isEmpty {
            try await connection.run("""
                INSERT INTO messageRequest (sender, recipient, itemId)
                SELECT * FROM unnest(\(senders), \(recipients), \(items)) AS r(sender, recipient, itemId)
                ORDER BY sender, recipient, itemId
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
        var totals: [CounterSlot: Int] = [:]
        if !amounts.isEmpty {
            let rows = try await connection.rows("""
                INSERT INTO spamCounter (key, windowStart, count)
                SELECT * FROM unnest(\(countedKeys), \(countedStarts), \(added)) AS s(key, windowStart, amount)
                ORDER BY key, windowStart
                ON CONFLICT (key, windowStart) DO UPDATE SET count = spamCounter.count + excluded.count
                RETURNING key, windowStart, count
                """, logger: logger)
            for row in rows {
                let (key, windowStart, count) = try row.decode((String, Int, Int).self)
                totals[CounterSlot(key: key, windowStart: windowStart)] = count
            }
        }
        if !members.isEmpty {
            try await connection.run("""
                INSERT INTO spamDistinct (key, windowStart, member)
                SELECT * FROM unnest(\(memberKeys), \(memberStarts), \(memberNames)) AS s(key, windowStart, member)
                ORDER BY key, windowStart, member
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
        if !singletons.isEmpty {
            // A window only this daemon has a member in is left unwritten (the count below reads 0 for it).
            try await connection.run("""
                INSERT INTO spamDistinct (key, windowStart, member)
                SELECT * FROM unnest(\(singleKeys), \(singleStarts), \(singleNames)) AS s(key, windowStart, member)
                WHERE EXISTS (SELECT 1 FROM spamDistinct d WHERE d.key = s.key AND d.windowStart = s.windowStart)
                ORDER BY key, windowStart, member
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
        if !distinct.isEmpty {
            let rows = try await connection.rows("""
                SELECT s.key, s.windowStart,
                    (SELECT COUNT(*) FROM spamDistinct d WHERE d.key = s.key AND d.windowStart = s.windowStart)
                FROM unnest(\(distinctKeys), \(distinctStarts)) AS s(key, windowStart)
                """, logger: logger)
            for row in rows {
                let (key, windowStart, count) = try row.decode((String, Int, Int).self)
                totals[CounterSlot(key: key, windowStart: windowStart)] = count
            }
        }
        if sweep {
            // Windows that ended go now and then (a full sweep of both tables), not on every message; never by a
            // `sentAt` ahead of this host's clock.
            let cutoff = MessageTally.sweepCutoff(sentAt: now)
            try await connection.run("DELETE FROM spamCounter WHERE windowStart < \(cutoff)", logger: logger)
            try await connection.run("DELETE FROM spamDistinct WHERE windowStart < \(cutoff)", logger: logger)
        }
        return totals
    }

    /// One read-only `REPEATABLE READ` transaction: the facts, totals and members come from one snapshot, as
    /// SQLite's single read does.
    public func conversationState(sender: String, recipient: String, facts: Bool, counted: [CounterSlot],
                                  distinct: [CounterSlot], families: [CounterSlot]) async throws(StoreError) -> ConversationState {
        let logger = logger
        let countedKeys = counted.map(\.key), countedStarts = counted.map(\.windowStart)
        let distinctKeys = distinct.map(\.key), distinctStarts = distinct.map(\.windowStart)
        let familyStarts = families.map(\.windowStart)
        let familyFrom = families.map(\.familyKeyRange.from), familyUpTo = families.map(\.familyKeyRange.upTo)
        return try await transaction("read the conversation of \(sender) and \(recipient)") { connection in
            try await connection.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            var state = ConversationState(facts: nil)
            if facts {
                let found = try await connection.rows(Self.relationFactsQuery(sender: sender, recipient: recipient), logger: logger)
                state.facts = try Self.decodeRelationFacts(found.first)
            }
            if !counted.isEmpty {
                let totals = try await connection.rows("""
                    SELECT key, windowStart, count FROM spamCounter
                    WHERE (key, windowStart) IN (SELECT * FROM unnest(\(countedKeys), \(countedStarts)))
                    """, logger: logger)
                for row in totals {
                    let (key, windowStart, count) = try row.decode((String, Int, Int).self)
                    state.totals[CounterSlot(key: key, windowStart: windowStart)] = count
                }
            }
            if !distinct.isEmpty {
                for slot in distinct { state.members[slot] = [] }
                let members = try await connection.rows("""
                    SELECT key, windowStart, member FROM spamDistinct
                    WHERE (key, windowStart) IN (SELECT * FROM unnest(\(distinctKeys), \(distinctStarts)))
                    """, logger: logger)
                for row in members {
                    let (key, windowStart, member) = try row.decode((String, Int, String).self)
                    state.members[CounterSlot(key: key, windowStart: windowStart), default: []].insert(member)
                }
            }
            if !families.isEmpty {
                // Every family in one statement (a window turn reads up to `maxPrefetch` of them), each its own range
                // of the index spamDistinctFamily: keys compared byte by byte (COLLATE "C", as the index is), whatever
                // the database's collation.
                let members = try await connection.rows("""
                    SELECT d.key, f.windowStart, d.member
                    FROM unnest(\(familyStarts), \(familyFrom), \(familyUpTo)) AS f(windowStart, keyFrom, keyUpTo)
                    CROSS JOIN LATERAL (
                        SELECT key, member FROM spamDistinct
                        WHERE windowStart = f.windowStart AND key COLLATE "C" >= f.keyFrom AND key COLLATE "C" < f.keyUpTo
                    ) AS d
                    """, logger: logger)
                for row in members {
                    let (key, windowStart, member) = try row.decode((String, Int, String).self)
                    state.members[CounterSlot(key: key, windowStart: windowStart), default: []].insert(member)
                }
            }
            return state
        }
    }

    /// One statement, so the changes, the newest `seq` (needed when there are too many) and the users erased come
    /// from one snapshot.
    public func relationChanges(after seq: Int64?, limit: Int) async throws(StoreError) -> RelationChangeFeed {
        let operation = "read relation changes"
        do {
            guard let seq else {
                let found = try await rows(operation, "SELECT MAX(seq) FROM relationChange")
                return RelationChangeFeed(users: [], last: try found.first?.decode(Int64?.self) ?? 0, complete: true)
            }
            let found = try await rows(operation, """
                SELECT seq, actor, subject, (SELECT MAX(seq) FROM relationChange),
                    (SELECT array_agg(actor) FROM relationChange WHERE seq > \(seq) AND kind = \(RelationChangeFeed.erasureKind))
                FROM relationChange
                WHERE seq > \(seq) ORDER BY seq LIMIT \(limit + 1)
                """)
            var users = Set<String>(), erased = Set<String>()
            var last = seq
            var newest: Int64?
            for row in found {
                let (rowSeq, actor, subject, maximum, erasures) = try row.decode((Int64, String, String, Int64?, [String]?).self)
                users.insert(actor)
                users.insert(subject)
                last = rowSeq
                newest = maximum
                erased = Set(erasures ?? [])
            }
            guard found.count <= limit else {
                return RelationChangeFeed(users: [], last: newest ?? seq, complete: false, erased: erased)
            }
            return RelationChangeFeed(users: users, last: last, complete: true, erased: erased)
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    public func relationHistory(_ userId: String) async throws(StoreError) -> [RelationChange] {
        let operation = "read relation history"
        let found = try await rows(operation, """
            SELECT kind, actor, subject, at FROM relationChange WHERE actor = \(userId) OR subject = \(userId) ORDER BY seq
            """)
        do {
            return try found.compactMap { row in
                let (name, actor, subject, at) = try row.decode((String, String, String, Date).self)
                guard let kind = RelationChange.Kind(rawValue: name) else { return nil }
                return RelationChange(kind: kind, actor: actor, subject: subject, at: at)
            }
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    /// Ties are ordered by the user id's bytes (`COLLATE "C"`), as SQLite orders text.
    public func usersBlocked(atLeast count: Int, since date: Date) async throws(StoreError) -> [(userId: String, blocks: Int)] {
        let operation = "list blocked users"
        let found = try await rows(operation, """
            SELECT blocked, COUNT(*) AS n FROM block WHERE at >= \(date) GROUP BY blocked HAVING COUNT(*) >= \(count)
            ORDER BY n DESC, blocked COLLATE "C" LIMIT 200
            """)
        do {
            return try found.map { row in
                let (blocked, blocks) = try row.decode((String, Int).self)
                return (userId: blocked, blocks: blocks)
            }
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    private static func relationFactsQuery(sender: String, recipient: String) -> PostgresQuery {
        """
        SELECT
          EXISTS (SELECT 1 FROM block WHERE blocker = \(recipient) AND blocked = \(sender)),
          EXISTS (SELECT 1 FROM block WHERE blocker = \(sender) AND blocked = \(recipient)),
          EXISTS (SELECT 1 FROM follow WHERE follower = \(sender) AND followee = \(recipient)),
          EXISTS (SELECT 1 FROM follow WHERE follower = \(recipient) AND followee = \(sender)),
          (SELECT messagePrivacy FROM relationUser WHERE userId = \(recipient)),
          (SELECT createdAt FROM relationUser WHERE userId = \(sender)),
          (SELECT COALESCE(array_agg(itemId ORDER BY itemId), '{}') FROM messageRequest WHERE sender = \(sender) AND recipient = \(recipient))
        """
    }

    private static func decodeRelationFacts(_ row: PostgresRow?) throws -> RelationFacts {
        var facts = RelationFacts()
        guard let row else { return facts }
        let values = try row.decode((Bool, Bool, Bool, Bool, String?, Date?, [String]).self)
        facts.recipientBlockedSender = values.0
        facts.senderBlockedRecipient = values.1
        facts.senderFollowsRecipient = values.2
        facts.recipientFollowsSender = values.3
        facts.recipientPrivacy = values.4.flatMap(MessagePrivacy.init(rawValue:)) ?? .followers
        facts.senderCreatedAt = values.5
        facts.requestItems = values.6
        return facts
    }
}
