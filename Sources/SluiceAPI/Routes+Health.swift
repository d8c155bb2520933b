import Foundation
import Hummingbird
import SluiceStore

/// `GET /healthz` (no credential): the store, and each provider's reachability and circuit state. 503 only
/// when the store is unreachable (nothing can be served); an unreachable provider or an open circuit is
/// `degraded` with 200, since status reads and text checks still work.
extension Routes {
    struct HealthResponse: Encodable {
        struct Provider: Encodable {
            var role: String
            var name: String
            var endpoint: String
            var reachable: Bool
            var problem: String?
            var checkedAt: Date
            /// closed, half-open or open, per process that uses the provider (daemon, serve); absent until the
            /// provider has been called.
            var circuit: [String: String]
        }

        var status: String
        var store: String
        var providers: [Provider]
    }

    func health(_ request: Request, context: APIContext) async throws -> Response {
        let storeOK = (try? services.store.countsByStatus()) != nil
        let reachability = await health.check(now: now())
        let circuits = storeOK ? circuitStates() : [:]
        let providers = health.targets.map { target in
            let state = reachability[target.url]
            return HealthResponse.Provider(role: target.role, name: target.name, endpoint: HealthProbe.displayed(target.url),
                                           reachable: state?.reachable ?? false, problem: state?.problem,
                                           checkedAt: state?.checkedAt ?? now(), circuit: circuits[target.name] ?? [:])
        }
        let degraded = providers.contains { !$0.reachable || $0.circuit.values.contains("open") }
        let status = !storeOK ? "unavailable" : degraded ? "degraded" : "ok"
        return try json(HealthResponse(status: status, store: storeOK ? "reachable" : "unreachable", providers: providers),
                        status: storeOK ? .ok : .serviceUnavailable)
    }

    /// provider → process → state, from `sluice_provider_circuit_state` in this process and the published snapshots.
    func circuitStates() -> [String: [String: String]] {
        var states: [String: [String: String]] = [:]
        for (process, text) in metricSources(includeStore: false) {
            for sample in MetricsExposition.samples(named: "sluice_provider_circuit_state", in: text) {
                guard let provider = sample.labels["provider"] else { continue }
                let name = switch sample.value {
                case 0: "closed"
                case 1: "half-open"
                default: "open"
                }
                states[provider, default: [:]][process] = name
            }
        }
        return states
    }
}
