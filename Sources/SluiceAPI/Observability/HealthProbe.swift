import Foundation
import SluiceCore

/// Asks each configured provider whether it answers at all (`probe()`: any HTTP response counts; only
/// connection failures and timeouts do not), at most once per `ttl`, so health checks never hammer a provider.
actor HealthProbe {
    struct Reachability: Sendable {
        var reachable: Bool
        var problem: String?
        var checkedAt: Date
    }

    let targets: [ProviderInRole]
    private let ttl: TimeInterval
    private var cache: [String: Reachability] = [:]

    init(targets: [ProviderInRole], ttl: TimeInterval = 15) {
        self.targets = targets
        self.ttl = ttl
    }

    /// Reachability of every target by role, probed concurrently when the cached answer is older than `ttl`.
    func check(now: Date = Date()) async -> [String: Reachability] {
        let stale = targets.filter { target in cache[target.role].map { now.timeIntervalSince($0.checkedAt) >= ttl } ?? true }
        let fresh = await withTaskGroup(of: (String, Reachability).self, returning: [(String, Reachability)].self) { group in
            for target in stale {
                group.addTask {
                    let problem = await target.provider.probe()
                    return (target.role, Reachability(reachable: problem == nil, problem: problem.map { String($0.prefix(200)) }, checkedAt: now))
                }
            }
            var results: [(String, Reachability)] = []
            for await result in group { results.append(result) }
            return results
        }
        for (role, state) in fresh { cache[role] = state }
        return cache
    }

    /// Scheme, host and port only: paths and queries can carry keys.
    nonisolated static func displayed(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return "(invalid URL)" }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }
}
