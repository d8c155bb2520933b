import ArgumentParser
import Foundation
import SluiceCore
import SluicePipeline
import SluiceServices

/// Relations for the conversation rules: bulk import for an existing user base, and what Sluice knows of a user.
struct RelationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relations", abstract: "Blocks, follows and message privacy the conversation rules use.",
        subcommands: [Import.self, Show.self])

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import relations from JSON Lines: {\"type\": \"user\", \"userId\", \"messagePrivacy\"?, \"createdAt\"?, \"trusted\"?} or {\"type\": \"follow\"|\"block\", \"from\", \"to\"}.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "The JSONL file.") var file: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let config = try common.loadConfig().config
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
                throw CLIError(message: "cannot read \(file): \((error as NSError).localizedDescription)")
            }
            let relations = Relations(store: try await Services.store(config: config), conversation: config.conversation)
            let summary = try await relations.importLines(data, source: (file as NSString).lastPathComponent)
            if json {
                try printJSON(summary)
            } else {
                for line in summary.rejected { print("rejected \(line)") }
                print("applied \(summary.applied), unchanged \(summary.unchanged), rejected \(summary.rejected.count)")
            }
            if !summary.rejected.isEmpty { throw ExitCode(2) }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A user's profile and relation history.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "The user id.") var user: String

        func run() async throws {
            let config = try common.loadConfig().config
            if let problem = Identifiers.problem(with: user, role: "user") { throw CLIError(message: problem) }
            try common.requireStore(config)
            let store = try await Services.store(config: config)
            let profile = try await store.relationUser(user) ?? RelationUser(userId: user)
            print("\(user): messagePrivacy \(profile.messagePrivacy.rawValue), created \(profile.createdAt.map { $0.formatted(.iso8601) } ?? "unknown")\(profile.trusted ? ", trusted reporter" : "")")
            for change in try await store.relationHistory(user) {
                print("\(change.at.formatted(.iso8601))  \(change.actor) \(change.kind.rawValue) \(change.subject)")
            }
        }
    }
}
