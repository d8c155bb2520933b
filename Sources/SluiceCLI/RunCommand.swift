import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SluiceDaemon
import SluiceServices

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Moderate uploads in pending/: watch until SIGINT/SIGTERM, or process what is there with --once.")

    @OptionGroup var common: CommonOptions

    @Flag(help: "Process every upload present, then exit 0.")
    var once = false

    func run() async throws {
        try common.bootstrapLogging(default: .info)
        let config = try common.loadConfig().config
        let logger = Logger(label: "sluice")
        // Stage latencies and provider calls go through swift-metrics into this registry, which is published
        // into the store for `sluice serve`'s /metrics.
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let daemon: Daemon
        do {
            daemon = try Services.live(config: config, logger: logger).daemon(mode: once ? .once : .watch)
        } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: DaemonService(daemon: daemon), successTerminationBehavior: .gracefullyShutdownGroup),
                       .init(service: MetricsPublisher(registry: registry, store: daemon.store, source: "daemon", logger: logger))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}

/// Adapts the assembled daemon to ServiceLifecycle.
struct DaemonService: Service {
    let daemon: Daemon
    func run() async throws { try await daemon.run() }
}
