import Foundation
import PostgresNIO
import SluiceCore

extension PostgresStore {
    // MARK: Reviewer accounts

    public func addReviewer(_ reviewer: Reviewer) async throws(StoreError) -> Bool {
        try await rows("add reviewer \(reviewer.name)", """
            INSERT INTO reviewer (name, role, passwordHash, disabled, unblurAll, createdAt)
            VALUES (\(reviewer.name), \(reviewer.role.rawValue), \(reviewer.passwordHash), \(reviewer.disabled), \(reviewer.unblurAll),
                    \(reviewer.createdAt))
            ON CONFLICT DO NOTHING
            RETURNING 1
            """).count == 1
    }

    public func reviewer(named name: String) async throws(StoreError) -> Reviewer? {
        let operation = "read reviewer \(name)"
        let found = try await rows(operation, "SELECT name, role, passwordHash, disabled, unblurAll, createdAt FROM reviewer WHERE name = \(name)")
        return try decoding(operation) { try found.first.flatMap(Self.reviewer) }
    }

    /// By name in byte order (`COLLATE "C"`), as SQLite sorts text.
    public func reviewers() async throws(StoreError) -> [Reviewer] {
        let found = try await rows("list reviewers", """
            SELECT name, role, passwordHash, disabled, unblurAll, createdAt FROM reviewer ORDER BY name COLLATE "C"
            """)
        return try decoding("list reviewers") { try found.compactMap(Self.reviewer) }
    }

    public func updateReviewer(_ reviewer: Reviewer) async throws(StoreError) -> Bool {
        try await rows("update reviewer \(reviewer.name)", """
            UPDATE reviewer SET role = \(reviewer.role.rawValue), passwordHash = \(reviewer.passwordHash), disabled = \(reviewer.disabled),
                unblurAll = \(reviewer.unblurAll)
            WHERE name = \(reviewer.name)
            RETURNING 1
            """).count == 1
    }

    private static func reviewer(_ row: PostgresRow) throws -> Reviewer? {
        let (name, role, passwordHash, disabled, unblurAll, createdAt) = try row.decode((String, String, String, Bool, Bool, Date).self)
        guard let role = Reviewer.Role(rawValue: role) else { return nil }
        return Reviewer(name: name, role: role, passwordHash: passwordHash, disabled: disabled, unblurAll: unblurAll, createdAt: createdAt)
    }

    // MARK: Key-value (sessions)

    /// With `onlyIfAbsent`, one statement decides: an expired value counts as absent and is replaced, a live one stays.
    /// `ON CONFLICT` waits for a concurrent put of the same key to commit, so of two API servers creating one key at
    /// once exactly one gets true.
    public func putValue(_ value: Data, key: String, expiresAt: Date?, onlyIfAbsent: Bool, now: Date) async throws(StoreError) -> Bool {
        let bytes = ByteBuffer(bytes: value)
        if onlyIfAbsent {
            return try await rows("store value", """
                INSERT INTO keyValue (key, value, expiresAt) VALUES (\(key), \(bytes), \(expiresAt))
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, expiresAt = excluded.expiresAt
                WHERE keyValue.expiresAt IS NOT NULL AND keyValue.expiresAt <= \(now)
                RETURNING 1
                """).count == 1
        }
        let upsert: PostgresQuery = """
            INSERT INTO keyValue (key, value, expiresAt) VALUES (\(key), \(bytes), \(expiresAt))
            ON CONFLICT (key) DO UPDATE SET value = excluded.value, expiresAt = excluded.expiresAt
            """
        // Expired values of others go now and then.
        guard Int.random(in: 0..<64) == 0 else {
            try await execute("store value", upsert)
            return true
        }
        let logger = self.logger
        try await transaction("store value") { connection in
            try await connection.run(upsert, logger: logger)
            try await connection.run("DELETE FROM keyValue WHERE expiresAt IS NOT NULL AND expiresAt <= \(now)", logger: logger)
        }
        return true
    }

    public func value(key: String, now: Date) async throws(StoreError) -> (value: Data, expiresAt: Date?)? {
        let found = try await rows("read value", """
            SELECT value, expiresAt FROM keyValue WHERE key = \(key) AND (expiresAt IS NULL OR expiresAt > \(now))
            """)
        return try decoding("read value") { () throws -> (value: Data, expiresAt: Date?)? in
            guard let row = found.first else { return nil }
            let (value, expiresAt) = try row.decode((Data, Date?).self)
            return (value, expiresAt)
        }
    }

    public func removeValue(key: String) async throws(StoreError) {
        try await execute("remove value", "DELETE FROM keyValue WHERE key = \(key)")
    }

    // MARK: Claims, escalations

    /// Race-safe between API servers: `ON CONFLICT DO UPDATE` locks the claim row whether or not its condition lets it
    /// take the claim over, so the holder read next in the same transaction is the one that stands until commit.
    public func claimItem(_ id: ItemID, reviewer: String, until: Date, now: Date) async throws(StoreError) -> (holder: String, until: Date) {
        let logger = self.logger
        return try await transaction("claim \(id)") { (connection) -> (holder: String, until: Date) in
            let taken = try await connection.rows("""
                INSERT INTO reviewClaim (itemId, reviewer, until) VALUES (\(id.rawValue), \(reviewer), \(until))
                ON CONFLICT (itemId) DO UPDATE SET reviewer = excluded.reviewer, until = excluded.until
                WHERE reviewClaim.until <= \(now) OR reviewClaim.reviewer = excluded.reviewer
                RETURNING reviewer, until
                """, logger: logger)
            let row: PostgresRow
            if let first = taken.first {
                row = first
            } else if let held = try await connection.rows("SELECT reviewer, until FROM reviewClaim WHERE itemId = \(id.rawValue)",
                                                            logger: logger).first {
                row = held
            } else {
                return (reviewer, until)
            }
            let (holder, heldUntil) = try row.decode((String, Date).self)
            return (holder, heldUntil)
        }
    }

    public func claims(now: Date) async throws(StoreError) -> [ItemID: String] {
        let found = try await rows("read claims", "SELECT itemId, reviewer FROM reviewClaim WHERE until > \(now)")
        return try decoding("read claims") {
            var claims: [ItemID: String] = [:]
            for row in found {
                let (itemId, reviewer) = try row.decode((String, String).self)
                claims[ItemID(itemId)] = reviewer
            }
            return claims
        }
    }

    /// Appends to the event feed: takes `FeedLock.events` first (before the escalation's row and its item's key
    /// share lock), as every event writer does.
    public func escalate(_ escalation: Escalation) async throws(StoreError) {
        let logger = self.logger
        let detail = "by \(escalation.by)" + (escalation.note.map { ": \($0)" } ?? "")
        try await transaction("escalate \(escalation.itemId)") { connection in
            try await connection.lock(.events, logger: logger)
            try await connection.run("""
                INSERT INTO escalation (itemId, by, note, at) VALUES (\(escalation.itemId.rawValue), \(escalation.by), \(escalation.note), \(escalation.at))
                ON CONFLICT (itemId) DO UPDATE SET by = excluded.by, note = excluded.note, at = excluded.at
                """, logger: logger)
            try await connection.run("""
                INSERT INTO event (itemId, at, type, fromStatus, toStatus, stage, detail)
                VALUES (\(escalation.itemId.rawValue), \(escalation.at), 'escalated', \(ItemStatus.review.rawValue), \(ItemStatus.review.rawValue),
                        'review', \(detail))
                """, logger: logger)
        }
    }

    public func escalations() async throws(StoreError) -> [ItemID: Escalation] {
        let found = try await rows("read escalations", """
            SELECT escalation.itemId, escalation.by, escalation.note, escalation.at
            FROM escalation JOIN item ON item.id = escalation.itemId WHERE item.status = 'review'
            """)
        return try decoding("read escalations") {
            var result: [ItemID: Escalation] = [:]
            for row in found {
                let (itemId, by, note, at) = try row.decode((String, String, String?, Date).self)
                let id = ItemID(itemId)
                result[id] = Escalation(itemId: id, by: by, note: note, at: at)
            }
            return result
        }
    }

    public func resolveReport(_ reportId: String, status: ReportStatus, by: String, note: String?, at date: Date) async throws(StoreError) -> Bool {
        try await rows("resolve report \(reportId)", """
            UPDATE report SET status = \(status.rawValue), resolvedBy = \(by), resolvedAt = \(date), resolutionNote = \(note)
            WHERE reportId = \(reportId) AND status = 'open'
            RETURNING 1
            """).count == 1
    }

    /// A negative `limit` means no limit, as in SQLite.
    public func decisionEvents(limit: Int) async throws(StoreError) -> [ItemEvent] {
        let cap: Int? = limit < 0 ? nil : limit
        let found = try await rows("read decisions", """
            SELECT itemId, at, type, fromStatus, toStatus, stage, detail FROM event WHERE type = 'review'
            ORDER BY seq DESC LIMIT \(cap)
            """)
        return try decoding("read decisions") {
            try found.map { row in
                let (itemId, at, type, from, to, stage, detail) = try row.decode((String, Date, String, String?, String?, String?, String?).self)
                return ItemEvent(itemId: ItemID(itemId), at: at, type: type, fromStatus: try from.map(Self.eventStatus),
                                 toStatus: try to.map(Self.eventStatus), stage: stage, detail: detail)
            }
        }
    }

    private static func eventStatus(_ raw: String) throws(StoreError) -> ItemStatus {
        guard let status = ItemStatus(rawValue: raw) else {
            throw StoreError(operation: "read an event from PostgreSQL", message: "unknown status \"\(raw)\"")
        }
        return status
    }

    // MARK: Audit sampling, appeals

    public func addAuditSample(_ id: ItemID, at date: Date) async throws(StoreError) {
        try await execute("sample \(id) for audit", """
            INSERT INTO auditSample (itemId, sampledAt) VALUES (\(id.rawValue), \(date)) ON CONFLICT DO NOTHING
            """)
    }

    /// Oldest first, ties by id in byte order (`COLLATE "C"`, as SQLite sorts text). A negative `limit` means no limit.
    public func auditQueue(limit: Int) async throws(StoreError) -> [ItemID] {
        let cap: Int? = limit < 0 ? nil : limit
        let found = try await rows("read the audit queue", """
            SELECT auditSample.itemId FROM auditSample JOIN item ON item.id = auditSample.itemId
            WHERE auditSample.auditedAt IS NULL AND item.status = 'approved'
            ORDER BY auditSample.sampledAt, auditSample.itemId COLLATE "C" LIMIT \(cap)
            """)
        return try decoding("read the audit queue") { try found.map { ItemID(try $0.decode(String.self)) } }
    }

    public func recordAudit(_ id: ItemID, by: String, agreed: Bool, at date: Date) async throws(StoreError) -> Bool {
        try await rows("record the audit of \(id)", """
            UPDATE auditSample SET auditedBy = \(by), auditedAt = \(date), agreed = \(agreed) WHERE itemId = \(id.rawValue) AND auditedAt IS NULL
            RETURNING 1
            """).count == 1
    }

    public func auditStats() async throws(StoreError) -> (audited: Int, agreed: Int) {
        let found = try await rows("read audit figures", """
            SELECT COUNT(*)::bigint, (COUNT(*) FILTER (WHERE agreed))::bigint FROM auditSample WHERE auditedAt IS NOT NULL
            """)
        return try decoding("read audit figures") { () throws -> (audited: Int, agreed: Int) in
            guard let row = found.first else { return (0, 0) }
            let (audited, agreed) = try row.decode((Int, Int).self)
            return (audited, agreed)
        }
    }

    public func recordAppeal(_ appeal: Appeal) async throws(StoreError) -> Bool {
        try await rows("record the appeal of \(appeal.itemId)", """
            INSERT INTO appeal (itemId, userId, message, at) VALUES (\(appeal.itemId.rawValue), \(appeal.userId), \(appeal.message), \(appeal.at))
            ON CONFLICT DO NOTHING
            RETURNING 1
            """).count == 1
    }

    public func openAppeals() async throws(StoreError) -> [ItemID: Appeal] {
        let found = try await rows("read appeals", """
            SELECT appeal.itemId, appeal.userId, appeal.message, appeal.at FROM appeal JOIN item ON item.id = appeal.itemId
            WHERE item.status = 'review'
            """)
        return try decoding("read appeals") {
            var result: [ItemID: Appeal] = [:]
            for row in found {
                let (itemId, userId, message, at) = try row.decode((String, String, String, Date).self)
                let id = ItemID(itemId)
                result[id] = Appeal(itemId: id, userId: userId, message: message, at: at)
            }
            return result
        }
    }
}

/// Decoding rows read by `rows(_:_:)`: postgres-nio's errors become a `StoreError` naming the operation.
private func decoding<T>(_ operation: String, _ body: () throws -> T) throws(StoreError) -> T {
    do {
        return try body()
    } catch {
        throw PostgresStore.storeError(operation, error)
    }
}
