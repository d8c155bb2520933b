import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SluiceCore
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
        let services: Services
        do {
            services = try await Services.live(config: config, logger: logger)
        } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        let daemon = services.daemon(mode: once ? .once : .watch)
        // Every member is named: without a name ServiceLifecycle describes the service by reflecting over all
        // it holds (wordlists, the filter's tables), which took half of `sluice run`'s start.
        var members: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: DaemonService(daemon: daemon), successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "daemon"),
            .init(service: MetricsPublisher(registry: registry, store: daemon.store, source: MetricsSnapshot.source(process: "daemon"), logger: logger),
                  serviceName: "metrics"),
        ]
        // Webhooks are sent by the daemon: in watch mode continuously, with --once one pass after the uploads.
        if let webhooks = try services.webhookDispatcher() {
            do { try await webhooks.register() } catch { throw CLIError(message: "cannot start the webhooks: \(error)") }
            members.append(.init(service: webhooks, serviceName: "webhooks"))
        }
        // Vectors for smart search, computed as messages are approved (threads.embeddings).
        if let indexer = services.embeddingIndexer() {
            members.append(.init(service: EmbeddingService(indexer: indexer, interval: .milliseconds(config.threads.embeddings.intervalMilliseconds),
                                                           drain: once, logger: logger), serviceName: "embeddings"))
        }
        let group = ServiceGroup(configuration: .init(
            services: members,
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
