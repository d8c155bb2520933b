import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    public func claimWork(_ unit: String, owner: String, until: Date, now: Date) async throws(StoreError) -> Bool {
        let claim = WorkClaim(unit: unit, owner: owner, until: until, now: now)
        return try await write("claim \(unit)") { db in try Self.claim(claim, in: db) }
    }

    /// Makes `claim` in the current write transaction: whether it holds.
    static func claim(_ claim: WorkClaim, in db: Database) throws -> Bool {
        // The write transaction is exclusive, so read-then-write is atomic across processes sharing the file.
        // Prepared once per connection: the daemon claims and releases a lease around every upload.
        try db.cachedStatement(sql: """
            INSERT INTO workLease (unit, owner, until) VALUES (?, ?, ?)
            ON CONFLICT(unit) DO UPDATE SET owner = excluded.owner, until = excluded.until
            WHERE workLease.until <= ? OR workLease.owner = excluded.owner
            """).execute(arguments: [claim.unit, claim.owner, claim.until, claim.now])
        return db.changesCount > 0
    }

    public func renewWork(_ units: [String], owner: String, until: Date) async throws(StoreError) -> Int {
        guard !units.isEmpty else { return 0 }
        return try await write("renew the leases of \(owner)") { db in
            let renew = try db.cachedStatement(sql: "UPDATE workLease SET until = ? WHERE unit = ? AND owner = ?")
            var renewed = 0
            for unit in units {
                try renew.execute(arguments: [until, unit, owner])
                renewed += db.changesCount
            }
            return renewed
        }
    }

    public func releaseWork(_ unit: String, owner: String) async throws(StoreError) {
        try await write("release \(unit)") { db in
            try db.cachedStatement(sql: "DELETE FROM workLease WHERE unit = ? AND owner = ?").execute(arguments: [unit, owner])
        }
    }

    public func workLeases(now: Date) async throws(StoreError) -> [String: String] {
        try await read("read work leases") { db in
            var leases: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT unit, owner FROM workLease WHERE until > ?", arguments: [now]) {
                leases[row["unit"]] = row["owner"]
            }
            return leases
        }
    }
}
