import Foundation
import PostgresNIO
import SluiceCore

/// Work leases: one row per claimed unit. Claiming is one upsert whose update only happens when the lease expired
/// or is the claimer's own, so of several daemons claiming at once exactly one gets a row back.
extension PostgresStore {
    public func claimWork(_ unit: String, owner: String, until: Date, now: Date) async throws(StoreError) -> Bool {
        !(try await rows("claim \(unit)", Self.claimQuery(WorkClaim(unit: unit, owner: owner, until: until, now: now)))).isEmpty
    }

    /// The upsert that makes `claim`: one row back when it holds.
    static func claimQuery(_ claim: WorkClaim) -> PostgresQuery {
        """
        INSERT INTO workLease (unit, owner, until) VALUES (\(claim.unit), \(claim.owner), \(claim.until))
        ON CONFLICT (unit) DO UPDATE SET owner = excluded.owner, until = excluded.until
        WHERE workLease.until <= \(claim.now) OR workLease.owner = excluded.owner
        RETURNING 1
        """
    }

    public func renewWork(_ units: [String], owner: String, until: Date) async throws(StoreError) -> Int {
        guard !units.isEmpty else { return 0 }
        return try await rows("renew the leases of \(owner)",
                              "UPDATE workLease SET until = \(until) WHERE owner = \(owner) AND unit = ANY(\(units)) RETURNING 1").count
    }

    public func releaseWork(_ unit: String, owner: String) async throws(StoreError) {
        try await execute("release \(unit)", "DELETE FROM workLease WHERE unit = \(unit) AND owner = \(owner)")
    }

    public func workLeases(now: Date) async throws(StoreError) -> [String: String] {
        let rows = try await rows("read work leases", "SELECT unit, owner FROM workLease WHERE until > \(now)")
        do {
            var leases: [String: String] = [:]
            for row in rows {
                let (unit, owner) = try row.decode((String, String).self)
                leases[unit] = owner
            }
            return leases
        } catch {
            throw Self.storeError("read work leases", error)
        }
    }
}
