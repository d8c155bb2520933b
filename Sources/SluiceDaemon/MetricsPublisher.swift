import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import SluiceStore

/// Publishes this process's metrics registry into the store every `interval` and once more on shutdown, so
/// `sluice serve` (another process) can serve them at `/metrics`.
public struct MetricsPublisher: Service {
    let registry: PrometheusCollectorRegistry
    let store: StatusStore
    let source: String
    let interval: Duration
    let logger: Logger

    public init(registry: PrometheusCollectorRegistry, store: StatusStore, source: String, interval: Duration = .seconds(10), logger: Logger) {
        self.registry = registry
        self.store = store
        self.source = source
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            publish()
            let interval = interval
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
        publish()
    }

    public func publish() {
        do throws(StoreError) {
            try store.publishMetrics(source: source, body: registry.emitToString())
        } catch {
            logger.warning("cannot publish metrics", metadata: ["error": "\(error)"])
        }
    }
}
