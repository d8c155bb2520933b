import Foundation

/// A claim on a unit of work made in the transaction that commits the unit's work (`recordChangedVerdicts(_:claiming:)`),
/// by the rule of `StatusStore.claimWork`: it holds when the unit is free, its lease ended before `now`, or `owner` holds
/// it already, and it extends the lease to `until`. Checked in the commit's own transaction, no other daemon can take
/// the unit over between the check and the commit; and the commit needs no transaction of its own for the check.
public struct WorkClaim: Sendable, Equatable {
    public var unit: String
    public var owner: String
    public var until: Date
    public var now: Date

    public init(unit: String, owner: String, until: Date, now: Date) {
        self.unit = unit
        self.owner = owner
        self.until = until
        self.now = now
    }
}
