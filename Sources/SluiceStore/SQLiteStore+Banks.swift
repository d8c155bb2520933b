import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    // MARK: PDQ hash banks

    public func createBank(_ bank: HashBank) async throws(StoreError) -> Bool {
        try await write("create bank \(bank.name)") { db in
            try db.execute(sql: """
                INSERT INTO hashBank (name, action, threshold, enabled, createdAt) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(name) DO NOTHING
                """, arguments: [bank.name, bank.action.rawValue, bank.threshold, bank.enabled, bank.createdAt])
            guard db.changesCount > 0 else { return false }
            try Self.bumpBankRevision(db)
            return true
        }
    }

    public func banks() async throws(StoreError) -> [HashBank] {
        try await read("list banks") { db in
            try Row.fetchAll(db, sql: """
                SELECT b.*, (SELECT COUNT(*) FROM bankHash h WHERE h.bank = b.name) AS size FROM hashBank b ORDER BY b.name
                """).map(Self.bank)
        }
    }

    public func updateBank(_ name: String, action: BankAction?, threshold: Int?, enabled: Bool?) async throws(StoreError) -> Bool {
        try await write("update bank \(name)") { db in
            try db.execute(sql: """
                UPDATE hashBank SET action = COALESCE(?, action), threshold = COALESCE(?, threshold), enabled = COALESCE(?, enabled)
                WHERE name = ?
                """, arguments: [action?.rawValue, threshold, enabled, name])
            guard db.changesCount > 0 else { return false }
            try Self.bumpBankRevision(db)
            return true
        }
    }

    public func removeBank(_ name: String) async throws(StoreError) -> Bool {
        try await write("remove bank \(name)") { db in
            try db.execute(sql: "DELETE FROM bankHashStanding WHERE bank = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM bankHash WHERE bank = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM hashBank WHERE name = ?", arguments: [name])
            guard db.changesCount > 0 else { return false }
            try Self.bumpBankRevision(db)
            return true
        }
    }

    public func addBankEntries(_ entries: [BankEntry]) async throws(StoreError) -> Int {
        guard !entries.isEmpty else { return 0 }
        return try await write("add \(entries.count) hashes to banks") { db in
            let insert = try db.cachedStatement(sql: """
                INSERT INTO bankHash (bank, hash, itemId, note, addedAt) VALUES (?, ?, ?, ?, ?) ON CONFLICT(bank, hash) DO NOTHING
                """)
            var added = 0
            for entry in entries {
                try insert.execute(arguments: [entry.bank, entry.hash.hex, entry.itemId, entry.note, entry.addedAt])
                added += db.changesCount
            }
            return added
        }
    }

    public func bankEntries(bank: String?, after seq: Int64, limit: Int) async throws(StoreError) -> [BankEntry] {
        try await read("read bank hashes") { db in
            let rows = if let bank {
                try Row.fetchCursor(db, sql: "SELECT * FROM bankHash WHERE bank = ? AND seq > ? ORDER BY seq LIMIT ?", arguments: [bank, seq, limit])
            } else {
                try Row.fetchCursor(db, sql: "SELECT * FROM bankHash WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [seq, limit])
            }
            var entries: [BankEntry] = []
            while let row = try rows.next() {
                guard let hash = PDQHash(hex: row["hash"] as String) else { continue }
                entries.append(BankEntry(seq: row["seq"], bank: row["bank"], hash: hash, itemId: row["itemId"], note: row["note"],
                                         addedAt: row["addedAt"]))
            }
            return entries
        }
    }

    public func bankState() async throws(StoreError) -> BankState {
        try await read("read bank state") { db in
            let revision = try Int64.fetchOne(db, sql: "SELECT revision FROM bankRevision WHERE id = 1") ?? 0
            let lastSeq = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM bankHash") ?? 0
            let banks = try Row.fetchAll(db, sql: "SELECT b.*, 0 AS size FROM hashBank b ORDER BY b.name").map(Self.bank)
            let standings = try Row.fetchAll(db, sql: "SELECT * FROM bankHashStanding ORDER BY bank, hash").compactMap { row -> BankHashStanding? in
                guard let hash = PDQHash(hex: row["hash"] as String), let state = BankHashState(rawValue: row["state"]) else { return nil }
                return BankHashStanding(bank: row["bank"], hash: hash, state: state, at: row["at"], detail: row["detail"])
            }
            return BankState(revision: revision, lastSeq: lastSeq, banks: banks, standings: standings)
        }
    }

    public func setBankHashStanding(_ standing: BankHashStanding) async throws(StoreError) {
        try await write("set standing of \(standing.hash) in bank \(standing.bank)") { db in
            try db.execute(sql: """
                INSERT INTO bankHashStanding (bank, hash, state, at, detail) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(bank, hash) DO UPDATE SET state = excluded.state, at = excluded.at, detail = excluded.detail
                """, arguments: [standing.bank, standing.hash.hex, standing.state.rawValue, standing.at, standing.detail])
            try Self.bumpBankRevision(db)
        }
    }

    public func approvedFingerprints(since: Date?, limit: Int) async throws(StoreError) -> [ApprovedFingerprint] {
        try await read("read approved image hashes") { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT id, pdqHash, pdqQuality, updatedAt FROM item
                WHERE status = 'approved' AND pdqHash IS NOT NULL AND updatedAt >= ? ORDER BY updatedAt LIMIT ?
                """, arguments: [since ?? Date(timeIntervalSince1970: 0), limit])
            var out: [ApprovedFingerprint] = []
            while let row = try rows.next() {
                guard let hash = PDQHash(hex: row["pdqHash"] as String) else { continue }
                out.append(ApprovedFingerprint(id: ItemID(row["id"] as String), hash: hash, quality: row["pdqQuality"] ?? 0, updatedAt: row["updatedAt"]))
            }
            return out
        }
    }

    private static func bank(_ row: Row) -> HashBank {
        HashBank(name: row["name"], action: BankAction(rawValue: row["action"]) ?? .review, threshold: row["threshold"], enabled: row["enabled"],
                 createdAt: row["createdAt"], size: row["size"])
    }

    private static func bumpBankRevision(_ db: Database) throws {
        try db.execute(sql: "UPDATE bankRevision SET revision = revision + 1 WHERE id = 1")
    }
}
