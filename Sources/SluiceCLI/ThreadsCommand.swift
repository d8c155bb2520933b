import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluicePipeline
import SluiceServices

struct ThreadsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "threads",
        abstract: "Seed 004's thread callables from the command line: summaries, action items, decisions, smart search, and search quality.",
        discussion: """
            A thread is a conversation's approved messages (text queue lines with a conversationId). summarize, actions and \
            decisions ask the LLM of threads.llm (else caption) and print seed 004's JSON; search works offline (keyword, \
            plus vectors from threads.embeddings); eval measures search quality on a labelled set.
            """,
        subcommands: [Summarize.self, Actions.self, Decisions.self, Search.self, Eval.self])

    struct Target: ParsableArguments {
        @OptionGroup var common: CommonOptions

        @Argument(help: "The conversation id.")
        var conversation: String

        @Option(help: "Newest messages read (default 100).")
        var messageLimit: Int?

        @Option(help: "Read as this user (only their conversations); default: as the backend.")
        var user: String?

        func intelligence() async throws -> (ThreadIntelligence, ThreadIntelligence.Reader) {
            try common.bootstrapLogging(default: .error)
            let services: Services
            let config = try common.loadConfig().config
            try common.requireStore(config)
            do { services = try await Services.live(config: config, logger: Logger(label: "sluice")) } catch {
                throw CLIError(message: "cannot start: \(error)")
            }
            return (services.threads, user.map(ThreadIntelligence.Reader.user) ?? .backend)
        }
    }

    static func run<T: Encodable>(_ work: () async throws(ThreadError) -> T) async throws {
        let result: T
        do throws(ThreadError) {
            result = try await work()
        } catch {
            throw CLIError(message: error.description)
        }
        try printJSON(result)
    }

    struct Summarize: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "summarizeThread: bullet points, key points, participants, time span.")
        @OptionGroup var target: Target
        func run() async throws {
            let (threads, reader) = try await target.intelligence()
            try await ThreadsCommand.run { () async throws(ThreadError) in
                try await threads.summarize(conversationId: target.conversation, messageLimit: target.messageLimit, reader: reader)
            }
        }
    }

    struct Actions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "extractActionItems: open tasks with assignee, deadline, priority and source message.")
        @OptionGroup var target: Target
        func run() async throws {
            let (threads, reader) = try await target.intelligence()
            try await ThreadsCommand.run { () async throws(ThreadError) in
                try await threads.actionItems(conversationId: target.conversation, messageLimit: target.messageLimit, reader: reader)
            }
        }
    }

    struct Decisions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "trackDecisions: decisions with topic, people, confidence and source messages.")
        @OptionGroup var target: Target
        func run() async throws {
            let (threads, reader) = try await target.intelligence()
            try await ThreadsCommand.run { () async throws(ThreadError) in
                try await threads.decisions(conversationId: target.conversation, messageLimit: target.messageLimit, reader: reader)
            }
        }
    }

    struct Search: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "smartSearch: ranked messages (keyword + vectors, fused by rank).")
        @OptionGroup var common: CommonOptions

        @Argument(help: "What to look for, in plain words.")
        var query: String

        @Option(help: "Only this conversation (required without --user).")
        var conversation: String?

        @Option(help: "Search as this user: every conversation they belong to.")
        var user: String?

        @Option(help: "Results (1-50, default 10).")
        var limit: Int?

        func validate() throws {
            if conversation == nil, user == nil {
                throw ValidationError("name a conversation with --conversation C, or search as a user with --user U")
            }
        }

        func run() async throws {
            try common.bootstrapLogging(default: .error)
            let services: Services
            let config = try common.loadConfig().config
            try common.requireStore(config)
            do { services = try await Services.live(config: config, logger: Logger(label: "sluice")) } catch {
                throw CLIError(message: "cannot start: \(error)")
            }
            let threads = services.threads
            let reader = user.map(ThreadIntelligence.Reader.user) ?? .backend
            try await ThreadsCommand.run { () async throws(ThreadError) in
                try await threads.smartSearch(query: query, conversationId: conversation, limit: limit, messageLimit: nil, reader: reader)
            }
        }
    }
}
