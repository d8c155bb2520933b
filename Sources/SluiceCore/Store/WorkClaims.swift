/// Claims on units of work shared by several processes over one store (`WorkLeases` in the daemon): what
/// `Reprocessor` uses to split a backlog between `sluice reprocess` runs on several hosts.
public protocol WorkClaims: Sendable {
    /// True when this process may do the unit now (it was free, its holder's lease expired, or it is ours).
    func claim(_ unit: String) async -> Bool
    /// Whether this process still holds the unit (and extends it).
    func stillHolds(_ unit: String) async -> Bool
    func release(_ unit: String) async
}
