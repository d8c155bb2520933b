import Foundation
import Hummingbird
import SluiceCore

/// `GET /healthz` (no credential): the store, and each provider's reachability and circuit state. 503 only
/// when the store is unreachable (nothing can be served); an unreachable provider or an open circuit is
/// `degraded` with 200, since status reads and text checks still work.
struct HealthRoutes {
    let services: APIServices
    let probe: HealthProbe
    let metrics: MetricsRoutes
    let now: @Sendable () -> Date

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.get("/healthz", use: health)
        return routes
    }

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
        let report = await report()
        return try context.json(report, status: report.store == "reachable" ? .ok : .serviceUnavailable)
    }

    /// The store's and every provider's state, as `/healthz` and the `healthCheck` callable report it.
    func report() async -> HealthResponse {
        let storeOK = (try? await services.store.countsByStatus()) != nil
        let reachability = await probe.check(now: now())
        let circuits = storeOK ? await circuitStates() : [:]
        let providers = probe.targets.map { target in
            let state = reachability[target.role]
            return HealthResponse.Provider(role: target.role, name: target.provider.name, endpoint: HealthProbe.displayed(target.provider.endpoint),
                                           reachable: state?.reachable ?? false, problem: state?.problem,
                                           checkedAt: state?.checkedAt ?? now(), circuit: circuits[target.provider.name] ?? [:])
        }
        let degraded = providers.contains { !$0.reachable || $0.circuit.values.contains("open") }
        let status = !storeOK ? "unavailable" : degraded ? "degraded" : "ok"
        return HealthResponse(status: status, store: storeOK ? "reachable" : "unreachable", providers: providers)
    }

    /// provider → process → state, from `sluice_provider_circuit_state` in this process and the published snapshots.
    func circuitStates() async -> [String: [String: String]] {
        // With several daemon instances, a process's state is the worst of its instances'.
        var worst: [String: [String: Double]] = [:]
        for source in await metrics.sources(includeStore: false) {
            for sample in MetricsExposition.samples(named: "sluice_provider_circuit_state", in: source.text) {
                guard let provider = sample.labels["provider"] else { continue }
                worst[provider, default: [:]][source.process] = max(worst[provider]?[source.process] ?? 0, sample.value)
            }
        }
        return worst.mapValues { processes in
            processes.mapValues { value in value == 0 ? "closed" : value == 1 ? "half-open" : "open" }
        }
    }
}
