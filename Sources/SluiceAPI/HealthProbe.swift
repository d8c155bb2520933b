import Foundation
import NIOCore
import SluiceCore
import SluiceProviders

/// Checks whether each configured provider answers at all (any HTTP response counts; only connection
/// failures and timeouts do not), at most once per `ttl`, so health checks never hammer a provider.
actor HealthProbe {
    struct Target: Sendable {
        var role: String
        var name: String
        var url: String
    }

    struct Reachability: Sendable {
        var reachable: Bool
        var problem: String?
        var checkedAt: Date
    }

    let targets: [Target]
    private let ttl: TimeInterval
    private let timeout: TimeAmount
    private var cache: [String: Reachability] = [:]

    init(config: PipelineConfig, ttl: TimeInterval = 15, timeout: TimeAmount = .seconds(2)) {
        var targets = [Target(role: "vision", name: config.vision.provider, url: config.vision.endpoint)]
        if config.caption.provider != "none" {
            targets.append(Target(role: "caption", name: config.caption.provider, url: config.caption.effectiveBaseURL))
        }
        if config.priority.engine == "llm" {
            targets.append(Target(role: "priority", name: "priority-llm", url: config.priority.baseURL))
        }
        self.targets = targets
        self.ttl = ttl
        self.timeout = timeout
    }

    /// Reachability of every target, probed concurrently when the cached answer is older than `ttl`.
    func check(now: Date = Date()) async -> [String: Reachability] {
        let stale = targets.filter { target in cache[target.url].map { now.timeIntervalSince($0.checkedAt) >= ttl } ?? true }
        let timeout = timeout
        let fresh = await withTaskGroup(of: (String, Reachability).self, returning: [(String, Reachability)].self) { group in
            for target in stale {
                group.addTask { (target.url, await Self.probe(target.url, timeout: timeout, now: now)) }
            }
            var results: [(String, Reachability)] = []
            for await result in group { results.append(result) }
            return results
        }
        for (url, state) in fresh { cache[url] = state }
        return cache
    }

    static func probe(_ url: String, timeout: TimeAmount, now: Date) async -> Reachability {
        let problem = await ProviderHTTP.unreachable(url, timeout: timeout)
        return Reachability(reachable: problem == nil, problem: problem.map { String($0.prefix(200)) }, checkedAt: now)
    }

    /// Scheme, host and port only: paths and queries can carry keys.
    nonisolated static func displayed(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return "(invalid URL)" }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }
}
