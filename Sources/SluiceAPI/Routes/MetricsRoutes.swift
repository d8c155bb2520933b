import Foundation
import Hummingbird
import NIOCore
import Prometheus
import SluiceCore

/// `GET /metrics` in Prometheus text format: items by kind and status (read from the store at scrape time),
/// and the metrics each process published — stage latency histograms and provider calls, retries and circuit
/// state from the daemon (`process="daemon"`), HTTP requests and this server's own provider calls
/// (`process="serve"`).
struct MetricsRoutes {
    let services: APIServices
    let now: @Sendable () -> Date

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.get("/metrics", use: metricsText)
        return routes
    }

    func metricsText(_ request: Request, context: APIContext) async throws -> Response {
        let text = MetricsExposition.merge(await sources(includeStore: true))
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The expositions to serve: the store's counts (no process label), this server's registry, and each
    /// published snapshot with its age.
    func sources(includeStore: Bool) async -> [(process: String, text: String)] {
        var sources: [(process: String, text: String)] = []
        let snapshots = (try? await services.store.metricsSnapshots()) ?? []
        if includeStore {
            let registry = PrometheusCollectorRegistry()
            for row in (try? await services.store.countsByKindAndStatus()) ?? [] {
                registry.makeGauge(descriptor: .init(metricName: "sluice_items", helpText: "Items in the status store by kind and status"),
                                   labels: [("kind", row.kind.rawValue), ("status", row.status.rawValue)]).set(Double(row.count))
            }
            for snapshot in snapshots {
                registry.makeGauge(descriptor: .init(metricName: "sluice_metrics_snapshot_age_seconds",
                                                     helpText: "Seconds since a process last published its metrics"),
                                   labels: [("process", snapshot.source)]).set(max(0, now().timeIntervalSince(snapshot.updatedAt)))
            }
            sources.append(("", registry.emitToString()))
        }
        sources.append(("serve", services.metrics.emitToString()))
        for snapshot in snapshots where snapshot.source != "serve" { sources.append((snapshot.source, snapshot.body)) }
        return sources
    }
}
