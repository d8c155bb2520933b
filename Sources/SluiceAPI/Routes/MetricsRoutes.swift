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

    /// For backends (app tokens, as a Prometheus scraper's bearer token): the counts of every user's items and the
    /// daemons' host names and process ids are not an end user's to read.
    func metricsText(_ request: Request, context: APIContext) async throws -> Response {
        _ = try ItemRoutes.backendItself(context, for: "read the metrics")
        let text = MetricsExposition.merge(await sources(includeStore: true))
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// Snapshots not refreshed for this long are a process that stopped long ago: left out.
    static let staleAfter: TimeInterval = 86_400

    /// The expositions to serve: the store's counts (no process label), this server's registry, and each
    /// published snapshot (one per daemon instance) with its age.
    func sources(includeStore: Bool) async -> [MetricsExposition.Source] {
        var sources: [MetricsExposition.Source] = []
        let current = now()
        let snapshots = ((try? await services.store.metricsSnapshots()) ?? [])
            .filter { $0.process != "serve" && current.timeIntervalSince($0.updatedAt) <= Self.staleAfter }
        if includeStore {
            let registry = PrometheusCollectorRegistry()
            for row in (try? await services.store.countsByKindAndStatus()) ?? [] {
                registry.makeGauge(descriptor: .init(metricName: "sluice_items", helpText: "Items in the status store by kind and status"),
                                   labels: [("kind", row.kind.rawValue), ("status", row.status.rawValue)]).set(Double(row.count))
            }
            for snapshot in snapshots {
                registry.makeGauge(descriptor: .init(metricName: "sluice_metrics_snapshot_age_seconds",
                                                     helpText: "Seconds since a process last published its metrics"),
                                   labels: [("process", snapshot.process), ("instance", snapshot.instance ?? "")])
                    .set(max(0, current.timeIntervalSince(snapshot.updatedAt)))
            }
            sources.append(.init(process: "", instance: nil, text: registry.emitToString()))
        }
        sources.append(.init(process: "serve", instance: nil, text: services.metrics.emitToString()))
        for snapshot in snapshots { sources.append(.init(process: snapshot.process, instance: snapshot.instance, text: snapshot.body)) }
        return sources
    }
}
