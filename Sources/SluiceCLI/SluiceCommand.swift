import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluiceServices

/// `sluice`: the operator's command line.
@available(macOS 14, *)
public struct SluiceCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "sluice",
        abstract: "Self-hosted content moderation: drop folders in, verdicts and privacy-safe images out.",
        subcommands: [RunCommand.self, StatusCommand.self, ListCommand.self, CheckTextCommand.self, BenchTextCommand.self, PriorityCommand.self, CaptionCommand.self, ReprocessCommand.self, IngestCommand.self, ReviewCommand.self, ReportsCommand.self, ServeCommand.self, WebhooksCommand.self, EraseUserCommand.self, UsersCommand.self, RelationsCommand.self, PDQCommand.self, BanksCommand.self, ThreadsCommand.self, StoreCommand.self])

    public init() {}

    /// Entry point: parses the arguments and runs the chosen subcommand, exiting with its status.
    public static func start() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// Options every subcommand takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "Path to pipeline.json.")
    var config: String = "./pipeline.json"

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String?

    func loadConfig() throws -> PipelineConfigLoad {
        try PipelineConfigLoad(path: config)
    }

    /// The store for a command that only reads it: a SQLite file that is not there is named instead of created empty
    /// (a mistyped dataRoot showed "no items").
    func existingStore(_ config: PipelineConfig) async throws -> any StatusStore {
        // The check written out here, not a call of `requireStore`: with the call inlined into commands' `run`,
        // Swift 6.3.1's release optimizer crashed splitting their coroutines.
        if let missing = missingStore(config) { throw CLIError(message: missing) }
        return try await Services.store(config: config)
    }

    /// Commands that read, erase or decide on what is stored refuse a SQLite store that is not there instead of
    /// creating an empty one and reporting nothing found (a mistyped dataRoot made `erase-user` say "erased 0 items").
    func requireStore(_ config: PipelineConfig) throws {
        if let missing = missingStore(config) { throw CLIError(message: missing) }
    }

    func missingStore(_ config: PipelineConfig) -> String? {
        guard config.store.postgres == nil, !FileManager.default.fileExists(atPath: config.store.path.path) else { return nil }
        return "no status store at \(config.store.path.path): check dataRoot (or store.url) in \(self.config), or run `sluice run` first"
    }

    /// Every command checks the level, whether or not it logs (`list --log-level loud` was taken silently).
    func validate() throws {
        _ = try requestedLevel()
    }

    /// `--log-level`, else `SLUICE_LOG_LEVEL`, else nil; a word that is not a level is refused, named.
    func requestedLevel() throws -> Logger.Level? {
        let given = logLevel.map { (raw: $0, from: "--log-level") }
            ?? ProcessInfo.processInfo.environment["SLUICE_LOG_LEVEL"].map { (raw: $0, from: "SLUICE_LOG_LEVEL") }
        guard let given else { return nil }
        guard let level = Logger.Level(rawValue: given.raw.lowercased()) else {
            throw ValidationError("\(given.from) \"\(given.raw)\" is not a level; allowed: \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return level
    }

    func bootstrapLogging(default fallback: Logger.Level) throws {
        let level = try requestedLevel() ?? fallback
        LoggingSystem.bootstrap { label in
            var handler = TerminalSafeLogHandler(StreamLogHandler.standardError(label: label))
            handler.logLevel = level
            return handler
        }
    }
}
