import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    // MARK: Reviewer accounts

    public func addReviewer(_ reviewer: Reviewer) async throws(StoreError) -> Bool {
        try await write("add reviewer \(reviewer.name)") { db in
            try db.execute(sql: """
                INSERT OR IGNORE INTO reviewer (name, role, passwordHash, disabled, unblurAll, createdAt) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [reviewer.name, reviewer.role.rawValue, reviewer.passwordHash, reviewer.disabled, reviewer.unblurAll, reviewer.createdAt])
            return db.changesCount == 1
        }
    }

    public func reviewer(named name: String) async throws(StoreError) -> Reviewer? {
        try await read("read reviewer \(name)") { db in
            try Row.fetchOne(db, sql: "SELECT * FROM reviewer WHERE name = ?", arguments: [name]).flatMap(Self.reviewer)
        }
    }

    public func reviewers() async throws(StoreError) -> [Reviewer] {
        try await read("list reviewers") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM reviewer ORDER BY name").compactMap(Self.reviewer)
        }
    }

    public func updateReviewer(_ reviewer: Reviewer) async throws(StoreError) -> Bool {
        try await write("update reviewer \(reviewer.name)") { db in
            try db.execute(sql: "UPDATE reviewer SET role = ?, passwordHash = ?, disabled = ?, unblurAll = ? WHERE name = ?",
                           arguments: [reviewer.role.rawValue, reviewer.passwordHash, reviewer.disabled, reviewer.unblurAll, reviewer.name])
            return db.changesCount == 1
        }
    }

    static func reviewer(_ row: Row) -> Reviewer? {
        guard let role = Reviewer.Role(rawValue: row["role"]) else { return nil }
        return Reviewer(name: row["name"], role: role, passwordHash: row["passwordHash"], disabled: row["disabled"], unblurAll: row["unblurAll"],
                        createdAt: row["createdAt"])
    }

    // MARK: Key-value (sessions)

    public func putValue(_ value: Data, key: String, expiresAt: Date?, onlyIfAbsent: Bool, now: Date) async throws(StoreError) -> Bool {
        try await write("store value") { db in
            try db.execute(sql: "DELETE FROM keyValue WHERE key = ? AND expiresAt IS NOT NULL AND expiresAt <= ?", arguments: [key, now])
            if onlyIfAbsent {
                try db.execute(sql: "INSERT OR IGNORE INTO keyValue (key, value, expiresAt) VALUES (?, ?, ?)", arguments: [key, value, expiresAt])
                return db.changesCount == 1
            }
            try db.execute(sql: """
                INSERT INTO keyValue (key, value, expiresAt) VALUES (?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET value = excluded.value, expiresAt = excluded.expiresAt
                """, arguments: [key, value, expiresAt])
            // Expired values of others go now and then.
            if Int.random(in: 0..<64) == 0 {
                try db.execute(sql: "DELETE FROM keyValue WHERE expiresAt IS NOT NULL AND expiresAt <= ?", arguments: [now])
            }
            return true
        }
    }

    public func value(key: String, now: Date) async throws(StoreError) -> (value: Data, expiresAt: Date?)? {
        try await read("read value") { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT value, expiresAt FROM keyValue WHERE key = ? AND (expiresAt IS NULL OR expiresAt > ?)",
                                             arguments: [key, now]) else { return nil }
            return (row["value"], row["expiresAt"])
        }
    }

    public func removeValue(key: String) async throws(StoreError) {
        try await write("remove value") { db in try db.execute(sql: "DELETE FROM keyValue WHERE key = ?", arguments: [key]) }
    }

    // MARK: Claims, escalations

    public func claimItem(_ id: ItemID, reviewer: String, until: Date, now: Date) async throws(StoreError) -> (holder: String, until: Date) {
        try await write("claim \(id)") { db in
            try db.execute(sql: """
                INSERT INTO reviewClaim (itemId, reviewer, until) VALUES (?, ?, ?)
                ON CONFLICT(itemId) DO UPDATE SET reviewer = excluded.reviewer, until = excluded.until
                WHERE reviewClaim.until <= ? OR reviewClaim.reviewer = excluded.reviewer
                """, arguments: [id.rawValue, reviewer, until, now])
            guard let row = try Row.fetchOne(db, sql: "SELECT reviewer, until FROM reviewClaim WHERE itemId = ?", arguments: [id.rawValue]) else {
                return (reviewer, until)
            }
            return (row["reviewer"], row["until"])
        }
    }

    public func claims(now: Date) async throws(StoreError) -> [ItemID: String] {
        try await read("read claims") { db in
            var claims: [ItemID: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT itemId, reviewer FROM reviewClaim WHERE until > ?", arguments: [now]) {
                claims[ItemID(row["itemId"] as String)] = row["reviewer"]
            }
            return claims
        }
    }

    public func escalate(_ escalation: Escalation) async throws(StoreError) {
        try await write("escalate \(escalation.itemId)") { db in
            try db.execute(sql: """
                INSERT INTO escalation (itemId, by, note, at) VALUES (?, ?, ?, ?)
                ON CONFLICT(itemId) DO UPDATE SET by = excluded.by, note = excluded.note, at = excluded.at
                """, arguments: [escalation.itemId.rawValue, escalation.by, escalation.note, escalation.at])
            let detail = "by \(escalation.by)" + (escalation.note.map { ": \($0)" } ?? "")
            try EventRow(ItemEvent(itemId: escalation.itemId, at: escalation.at, type: "escalated", fromStatus: .review, toStatus: .review,
                                   stage: "review", detail: detail)).insert(db)
        }
    }

    public func escalations() async throws(StoreError) -> [ItemID: Escalation] {
        try await read("read escalations") { db in
            var result: [ItemID: Escalation] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT escalation.* FROM escalation JOIN item ON item.id = escalation.itemId WHERE item.status = 'review'
                """) {
                let id = ItemID(row["itemId"] as String)
                result[id] = Escalation(itemId: id, by: row["by"], note: row["note"], at: row["at"])
            }
            return result
        }
    }

    public func resolveReport(_ reportId: String, status: ReportStatus, by: String, note: String?, at date: Date) async throws(StoreError) -> Bool {
        try await write("resolve report \(reportId)") { db in
            try db.execute(sql: """
                UPDATE report SET status = ?, resolvedBy = ?, resolvedAt = ?, resolutionNote = ? WHERE reportId = ? AND status = 'open'
                """, arguments: [status.rawValue, by, date, note, reportId])
            return db.changesCount == 1
        }
    }

    public func decisionEvents(limit: Int) async throws(StoreError) -> [ItemEvent] {
        try await read("read decisions") { db in
            try EventRow.filter(EventRow.Columns.type == "review").order(EventRow.Columns.seq.desc).limit(limit).fetchAll(db).map(\.event)
        }
    }

    // MARK: Audit sampling, appeals

    public func addAuditSample(_ id: ItemID, at date: Date) async throws(StoreError) {
        try await write("sample \(id) for audit") { db in
            try db.execute(sql: "INSERT OR IGNORE INTO auditSample (itemId, sampledAt) VALUES (?, ?)", arguments: [id.rawValue, date])
        }
    }

    public func auditQueue(limit: Int) async throws(StoreError) -> [ItemID] {
        try await read("read the audit queue") { db in
            try String.fetchAll(db, sql: """
                SELECT auditSample.itemId FROM auditSample JOIN item ON item.id = auditSample.itemId
                WHERE auditSample.auditedAt IS NULL AND item.status = 'approved' ORDER BY auditSample.sampledAt, auditSample.itemId LIMIT ?
                """, arguments: [limit]).map { ItemID($0) }
        }
    }

    public func recordAudit(_ id: ItemID, by: String, agreed: Bool, at date: Date) async throws(StoreError) -> Bool {
        try await write("record the audit of \(id)") { db in
            try db.execute(sql: "UPDATE auditSample SET auditedBy = ?, auditedAt = ?, agreed = ? WHERE itemId = ? AND auditedAt IS NULL",
                           arguments: [by, date, agreed, id.rawValue])
            return db.changesCount == 1
        }
    }

    public func auditStats() async throws(StoreError) -> (audited: Int, agreed: Int) {
        try await read("read audit figures") { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*) AS audited, COALESCE(SUM(agreed), 0) AS agreed FROM auditSample WHERE auditedAt IS NOT NULL")
            return (row?["audited"] ?? 0, row?["agreed"] ?? 0)
        }
    }

    public func recordAppeal(_ appeal: Appeal) async throws(StoreError) -> Bool {
        try await write("record the appeal of \(appeal.itemId)") { db in
            try db.execute(sql: "INSERT OR IGNORE INTO appeal (itemId, userId, message, at) VALUES (?, ?, ?, ?)",
                           arguments: [appeal.itemId.rawValue, appeal.userId, appeal.message, appeal.at])
            return db.changesCount == 1
        }
    }

    public func openAppeals() async throws(StoreError) -> [ItemID: Appeal] {
        try await read("read appeals") { db in
            var result: [ItemID: Appeal] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT appeal.* FROM appeal JOIN item ON item.id = appeal.itemId WHERE item.status = 'review'") {
                let id = ItemID(row["itemId"] as String)
                result[id] = Appeal(itemId: id, userId: row["userId"], message: row["message"], at: row["at"])
            }
            return result
        }
    }
}
