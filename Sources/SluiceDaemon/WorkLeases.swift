#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import SluiceCore

/// This daemon's claims on shared work. Several daemons (on one machine or several, over one store) see the same
/// drop folders; before judging an upload or ingesting a text queue file a daemon claims it in the store for
/// `daemon.leaseSeconds`, renews its claims every third of that while it works, and releases each when done. A
/// daemon that dies (`kill -9`, host lost) stops renewing: its claims expire and the next rescan of another daemon
/// takes the work over, where the pipeline's crash guarantees finish it without judging anything twice.
public actor WorkLeases: WorkClaims {
    /// Host name and machine (`ProcessIdentity`), process and a random part (a restarted process is a new owner).
    public nonisolated let owner: String
    let store: any StatusStore
    let seconds: Double
    let logger: Logger
    private var held: Set<String> = []
    /// Units a `with` of this process is using, and the `with`s waiting for each (see `with`).
    private var inUse: Set<String> = []
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    public init(store: any StatusStore, leaseSeconds: Double, logger: Logger) {
        owner = "\(ProcessInfo.processInfo.hostName)/\(ProcessIdentity.machine):\(ProcessInfo.processInfo.processIdentifier):"
            + UUID().uuidString.prefix(8).lowercased()
        self.store = store
        seconds = leaseSeconds
        self.logger = logger
    }

    /// True when this daemon may do the unit now. A store that cannot be asked means no: the work stays where it is
    /// for the next scan rather than risk two daemons doing it.
    public func claim(_ unit: String) async -> Bool {
        let now = Date()
        do {
            guard try await store.claimWork(unit, owner: owner, until: now.addingTimeInterval(seconds), now: now) else { return false }
            held.insert(unit)
            return true
        } catch {
            logger.error("cannot claim work, leaving it for the next scan", metadata: ["unit": "\(unit)", "error": "\(error)"])
            return false
        }
    }

    /// Whether this daemon still holds `unit` (and extends it): asked right before committing work, so a daemon
    /// whose claim expired while it was slow does not commit over the daemon that took the work over.
    public func stillHolds(_ unit: String) async -> Bool {
        guard held.contains(unit) else { return false }
        if await claim(unit) { return true }
        held.remove(unit)
        return false
    }

    /// The claim to make in the transaction that commits `unit`'s work (`StatusStore.recordChangedVerdicts(_:claiming:)`),
    /// instead of a transaction of its own before it (`stillHolds`): nil when this daemon no longer holds the unit.
    public func commitClaim(for unit: String) -> WorkClaim? {
        guard held.contains(unit) else { return nil }
        let now = Date()
        return WorkClaim(unit: unit, owner: owner, until: now.addingTimeInterval(seconds), now: now)
    }

    /// A commit found `unit` held by another daemon (its `commitClaim` did not hold).
    public func lost(_ unit: String) {
        held.remove(unit)
    }

    public func release(_ unit: String) async {
        held.remove(unit)
        do {
            try await store.releaseWork(unit, owner: owner)
        } catch {
            logger.warning("cannot release work; it is free again when its lease expires", metadata: ["unit": "\(unit)", "error": "\(error)"])
        }
    }

    /// Does `body` while holding `unit`; nil (and `body` not run) when another daemon holds it. `body` gets the
    /// check to make right before committing (`stillHolds`). Uses of one unit in this process take turns (two files
    /// of one upload, `photo.jpg` and `photo.png`): the claim is one per unit and owner, so at once the first to end
    /// would release it under the other, which would then stop as if another daemon had taken it over.
    public func with<T: Sendable>(_ unit: String, _ body: @Sendable (_ stillHeld: @escaping @Sendable () async -> Bool) async -> T) async -> T? {
        if !inUse.insert(unit).inserted {
            await withCheckedContinuation { waiting[unit, default: []].append($0) }
        }
        guard await claim(unit) else {
            handOver(unit)
            return nil
        }
        let result = await body { await self.stillHolds(unit) }
        if held.contains(unit) { await release(unit) }
        handOver(unit)
        return result
    }

    /// The next waiting `with` of `unit` goes on (the unit stays in use), or the unit is free.
    private func handOver(_ unit: String) {
        guard var queue = waiting[unit], !queue.isEmpty else {
            inUse.remove(unit)
            return
        }
        let next = queue.removeFirst()
        waiting[unit] = queue.isEmpty ? nil : queue
        next.resume()
    }

    /// Frees the claims of daemons on this host that are no longer running (a `kill -9`, a crash): their work is
    /// taken over at once instead of when their leases expire. Claims of other hosts only expire.
    @discardableResult
    public func releaseDeadLocalOwners() async -> Int {
        var freed = 0
        do {
            for (unit, holder) in try await store.workLeases(now: Date()) where holder != owner {
                let parts = holder.split(separator: ":")
                guard parts.count >= 3, let machine = parts.dropLast(2).joined(separator: ":").split(separator: "/").last,
                      let pid = Int32(parts[parts.count - 2]), ProcessIdentity.isDead(machine: String(machine), pid: pid) else { continue }
                try await store.releaseWork(unit, owner: holder)
                freed += 1
                logger.notice("took over work of a daemon that stopped", metadata: ["unit": "\(unit)", "owner": "\(holder)"])
            }
        } catch {
            logger.warning("cannot read work leases", metadata: ["error": "\(error)"])
        }
        return freed
    }

    /// Renews this daemon's claims every third of the lease until cancelled, and frees dead local daemons' claims
    /// (then runs `afterTakeover`: the dead daemon's temp files can go).
    public func heartbeat(afterTakeover: @Sendable () async -> Void = {}) async {
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: UInt64(seconds / 3 * 1_000_000_000))
            guard !Task.isCancelled else { break }
            if await releaseDeadLocalOwners() > 0 { await afterTakeover() }
            guard !held.isEmpty else { continue }
            do {
                try await store.renewWork(held.sorted(), owner: owner, until: Date().addingTimeInterval(seconds))
            } catch {
                logger.error("cannot renew work leases; another daemon may take this work over if it stays so",
                             metadata: ["held": "\(held.count)", "error": "\(error)"])
            }
        }
    }
}
