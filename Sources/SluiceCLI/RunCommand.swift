import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SluiceDaemon

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
        let daemon: ImageDaemon
        do {
            daemon = try ImageDaemon.build(config: config, mode: once ? .once : .watch, logger: logger)
        } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: DaemonService(daemon: daemon), successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}

/// Adapts the assembled daemon to ServiceLifecycle.
struct DaemonService: Service {
    let daemon: ImageDaemon
    func run() async throws { try await daemon.run() }
}
