import Foundation
import Logging
import PostgresNIO
import SluiceCore

extension PostgresStore {
    // MARK: PDQ hash banks

    public func createBank(_ bank: HashBank) async throws(StoreError) -> Bool {
        let logger = logger
        return try await transaction("create bank \(bank.name)") { connection in
            let created = try await connection.rows("""
                INSERT INTO hashBank (name, action, threshold, enabled, createdAt)
                VALUES (\(bank.name), \(bank.action.rawValue), \(bank.threshold), \(bank.enabled), \(bank.createdAt))
                ON CONFLICT (name) DO NOTHING
                RETURNING 1
                """, logger: logger)
            guard !created.isEmpty else { return false }
            try await Self.bumpBankRevision(connection, logger: logger)
            return true
        }
    }

    /// By name's bytes (`COLLATE "C"`), as SQLite orders text.
    public func banks() async throws(StoreError) -> [HashBank] {
        let found = try await rows("list banks", """
            SELECT b.name, b.action, b.threshold, b.enabled, b.createdAt, (SELECT COUNT(*) FROM bankHash h WHERE h.bank = b.name)
            FROM hashBank b ORDER BY b.name COLLATE "C"
            """)
        do {
            return try found.map(Self.hashBank)
        } catch {
            throw Self.storeError("list banks", error)
        }
    }

    public func updateBank(_ name: String, action: BankAction?, threshold: Int?, enabled: Bool?) async throws(StoreError) -> Bool {
        let logger = logger
        return try await transaction("update bank \(name)") { connection in
            let updated = try await connection.rows("""
                UPDATE hashBank SET action = COALESCE(\(action?.rawValue), action), threshold = COALESCE(\(threshold), threshold),
                    enabled = COALESCE(\(enabled), enabled)
                WHERE name = \(name)
                RETURNING 1
                """, logger: logger)
            guard !updated.isEmpty else { return false }
            try await Self.bumpBankRevision(connection, logger: logger)
            return true
        }
    }

    public func removeBank(_ name: String) async throws(StoreError) -> Bool {
        let logger = logger
        return try await transaction("remove bank \(name)") { connection in
            try await connection.run("DELETE FROM bankHashStanding WHERE bank = \(name)", logger: logger)
            try await connection.run("DELETE FROM bankHash WHERE bank = \(name)", logger: logger)
            let removed = try await connection.rows("DELETE FROM hashBank WHERE name = \(name) RETURNING 1", logger: logger)
            guard !removed.isEmpty else { return false }
            try await Self.bumpBankRevision(connection, logger: logger)
            return true
        }
    }

    /// One statement for the whole list, rows inserted in the list's order (`WITH ORDINALITY`), so `seq` follows it
    /// as SQLite's one insert per entry does; a hash repeated in the list is added once. Takes `FeedLock.banks` first
    /// so that appends commit in `seq` order. Identity values of skipped rows are used up: `seq` may have gaps.
    public func addBankEntries(_ entries: [BankEntry]) async throws(StoreError) -> Int {
        guard !entries.isEmpty else { return 0 }
        let logger = logger
        // Arrays of optionals cannot be bound: a nil item id or note travels as "" with a flag.
        let banks = entries.map(\.bank), hashes = entries.map(\.hash.hex), addedAt = entries.map(\.addedAt)
        let itemIds = entries.map { $0.itemId ?? "" }, hasItemId = entries.map { $0.itemId != nil }
        let notes = entries.map { $0.note ?? "" }, hasNote = entries.map { $0.note != nil }
        return try await transaction("add \(entries.count) hashes to banks") { connection in
            try await connection.lock(.banks, logger: logger)
            let rows = try await connection.rows("""
                WITH added AS (
                    INSERT INTO bankHash (bank, hash, itemId, note, addedAt)
                    SELECT bank, hash, CASE WHEN hasItemId THEN itemId END, CASE WHEN hasNote THEN note END, addedAt
                    FROM unnest(\(banks), \(hashes), \(itemIds), \(hasItemId), \(notes), \(hasNote), \(addedAt))
                        WITH ORDINALITY AS e(bank, hash, itemId, hasItemId, note, hasNote, addedAt, n)
                    ORDER BY n
                    ON CONFLICT (bank, hash) DO NOTHING
                    RETURNING 1
                )
                SELECT COUNT(*) FROM added
                """, logger: logger)
            return try rows.first?.decode(Int.self) ?? 0
        }
    }

    public func bankEntries(bank: String?, after seq: Int64, limit: Int) async throws(StoreError) -> [BankEntry] {
        let operation = "read bank hashes"
        // SQLite reads a negative LIMIT as none; PostgreSQL refuses one and reads NULL as none.
        let limit: Int? = limit < 0 ? nil : limit
        let query: PostgresQuery = if let bank {
            "SELECT seq, bank, hash, itemId, note, addedAt FROM bankHash WHERE bank = \(bank) AND seq > \(seq) ORDER BY seq LIMIT \(limit)"
        } else {
            "SELECT seq, bank, hash, itemId, note, addedAt FROM bankHash WHERE seq > \(seq) ORDER BY seq LIMIT \(limit)"
        }
        let found = try await rows(operation, query)
        do {
            return try found.compactMap { row in
                let (seq, bank, hex, itemId, note, addedAt) = try row.decode((Int64, String, String, String?, String?, Date).self)
                guard let hash = PDQHash(hex: hex) else { return nil }
                return BankEntry(seq: seq, bank: bank, hash: hash, itemId: itemId, note: note, addedAt: addedAt)
            }
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    /// One read-only `REPEATABLE READ` transaction: the revision, newest hash, banks and standings come from one
    /// snapshot, as SQLite's single read does. Text is ordered by its bytes (`COLLATE "C"`), as SQLite orders it.
    public func bankState() async throws(StoreError) -> BankState {
        let logger = logger
        return try await transaction("read bank state") { connection in
            try await connection.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            let heads = try await connection.rows("""
                SELECT (SELECT revision FROM bankRevision WHERE id = 1), (SELECT MAX(seq) FROM bankHash)
                """, logger: logger)
            var revision: Int64 = 0, lastSeq: Int64 = 0
            if let row = heads.first {
                let (current, newest) = try row.decode((Int64?, Int64?).self)
                revision = current ?? 0
                lastSeq = newest ?? 0
            }
            let banks = try await connection.rows("""
                SELECT name, action, threshold, enabled, createdAt, 0::bigint FROM hashBank ORDER BY name COLLATE "C"
                """, logger: logger).map(Self.hashBank)
            let standings = try await connection.rows("""
                SELECT bank, hash, state, at, detail FROM bankHashStanding ORDER BY bank COLLATE "C", hash COLLATE "C"
                """, logger: logger).compactMap { row -> BankHashStanding? in
                let (bank, hex, name, at, detail) = try row.decode((String, String, String, Date, String?).self)
                guard let hash = PDQHash(hex: hex), let state = BankHashState(rawValue: name) else { return nil }
                return BankHashStanding(bank: bank, hash: hash, state: state, at: at, detail: detail)
            }
            return BankState(revision: revision, lastSeq: lastSeq, banks: banks, standings: standings)
        }
    }

    public func setBankHashStanding(_ standing: BankHashStanding) async throws(StoreError) {
        let logger = logger
        try await transaction("set standing of \(standing.hash) in bank \(standing.bank)") { connection in
            try await connection.run("""
                INSERT INTO bankHashStanding (bank, hash, state, at, detail)
                VALUES (\(standing.bank), \(standing.hash.hex), \(standing.state.rawValue), \(standing.at), \(standing.detail))
                ON CONFLICT (bank, hash) DO UPDATE SET state = excluded.state, at = excluded.at, detail = excluded.detail
                """, logger: logger)
            try await Self.bumpBankRevision(connection, logger: logger)
        }
    }

    /// The item table keeps dates as whole milliseconds (`PostgresItemCodec`).
    public func approvedFingerprints(since: Date?, limit: Int) async throws(StoreError) -> [ApprovedFingerprint] {
        let operation = "read approved image hashes"
        let since = PostgresItemCodec.milliseconds(since ?? Date(timeIntervalSince1970: 0))
        // SQLite reads a negative LIMIT as none; PostgreSQL refuses one and reads NULL as none.
        let limit: Int? = limit < 0 ? nil : limit
        let found = try await rows(operation, """
            SELECT id, pdqHash, pdqQuality, updatedAt FROM item
            WHERE status = 'approved' AND pdqHash IS NOT NULL AND updatedAt >= \(since) ORDER BY updatedAt LIMIT \(limit)
            """)
        do {
            return try found.compactMap { row in
                let (id, hex, quality, updatedAt) = try row.decode((String, String, Int?, Int64).self)
                guard let hash = PDQHash(hex: hex) else { return nil }
                return ApprovedFingerprint(id: ItemID(id), hash: hash, quality: quality ?? 0,
                                           updatedAt: Date(timeIntervalSince1970: Double(updatedAt) / 1000))
            }
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    /// A `hashBank` row: name, action, threshold, enabled, createdAt, size.
    private static func hashBank(_ row: PostgresRow) throws -> HashBank {
        let (name, action, threshold, enabled, createdAt, size) = try row.decode((String, String, Int, Bool, Date, Int).self)
        return HashBank(name: name, action: BankAction(rawValue: action) ?? .review, threshold: threshold, enabled: enabled,
                        createdAt: createdAt, size: size)
    }

    private static func bumpBankRevision(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.run("UPDATE bankRevision SET revision = revision + 1 WHERE id = 1", logger: logger)
    }
}
