import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import SluiceCore

/// Publishes this process's metrics registry into the store every `interval` and once more on shutdown, so
/// `sluice serve` (another process) can serve them at `/metrics`.
public struct MetricsPublisher: Service {
    let registry: PrometheusCollectorRegistry
    let store: any StatusStore
    let source: String
    let interval: Duration
    let logger: Logger

    public init(registry: PrometheusCollectorRegistry, store: any StatusStore, source: String, interval: Duration = .seconds(10), logger: Logger) {
        self.registry = registry
        self.store = store
        self.source = source
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await publish()
            let interval = interval
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
        await publish()
    }

    public func publish() async {
        do throws(StoreError) {
            try await store.publishMetrics(source: source, body: registry.emitToString())
        } catch {
            logger.warning("cannot publish metrics", metadata: ["error": "\(error)"])
        }
    }
}
