import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import SluiceAPI
import SluiceServices

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the HTTP API over the status store (separate process from the daemon, same data root).")

    @OptionGroup var common: CommonOptions

    @Option(help: "Port (default: api.port).")
    var port: Int?

    func run() async throws {
        try common.bootstrapLogging(default: .info)
        let config = try common.loadConfig().config
        if let port, !(1...65535).contains(port) { throw ValidationError("--port must be 1...65535") }
        let logger = Logger(label: "sluice.api")
        let environment = ProcessInfo.processInfo.environment
        if let problem = APISecrets.problem(config: config, environment: environment) { throw CLIError(message: "cannot start: \(problem)") }
        if config.api.auth.allowEmulatorTokens {
            logger.warning("api.auth.allowEmulatorTokens is on: unsigned Firebase Auth emulator tokens are accepted. Never use this in production.")
        }
        // Provider calls made by this process (captions, LLM priority) report through swift-metrics into the
        // registry that /metrics serves.
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let services: APIServices
        do {
            services = try await Services.live(config: config, logger: logger).api(metrics: registry)
        } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        let app = buildApplication(services: services, environment: ProcessInfo.processInfo.environment, port: port, logger: logger)
        try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
    }
}
