import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluicePipeline
import SluiceServices

extension ThreadsCommand {
    /// Search quality on a labelled set: the messages go through the real pipeline (text queue → daemon → store →
    /// vectors), then every query is ranked keyword-only, semantic-only and hybrid, as a user who belongs to every
    /// thread; recall@5 and MRR per mode, overall and per query kind.
    struct Eval: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure smart search (recall@5, MRR) for keyword, semantic and hybrid ranking on a labelled set.",
            discussion: """
                --messages is text queue lines (with conversationId and members); --queries a JSON array of \
                {"query", "conversationId" (or null: every thread of --as), "relevant": [message ids], "kind"}. The \
                run uses a temporary data root and the config's wordlists and threads.embeddings (an embedding \
                provider is required). --check exits 1 unless hybrid beats both others on recall@5 and on MRR.
                """)

        @OptionGroup var common: CommonOptions

        @Option(help: "Labelled messages (text queue lines).")
        var messages = "Tests/Fixtures/search/messages.jsonl"

        @Option(help: "Labelled queries.")
        var queries = "Tests/Fixtures/search/queries.json"

        @Option(name: .customLong("as"), help: "The user who searches (a member of every thread).")
        var user = "evaluator"

        @Option(help: "Embedding provider base URL (default: threads.embeddings.baseURL).")
        var embedURL: String?

        @Flag(help: "Exit 1 unless hybrid beats keyword-only and semantic-only on both measures.")
        var check = false

        @Flag(help: "Print the figures as JSON.")
        var json = false

        struct Query: Decodable {
            var query: String
            var conversationId: String?
            var relevant: [String]
            var kind: String?
        }

        struct Figures: Encodable {
            var mode: String
            var recallAt5: Double
            var mrr: Double
            var recallAt5ByKind: [String: Double]
        }

        struct Report: Encodable {
            var messages: Int
            var approved: Int
            var threads: Int
            var queries: Int
            var model: String
            var modes: [Figures]
        }

        func run() async throws {
            try common.bootstrapLogging(default: .error)
            var config = try common.loadConfig().config
            let labelled: [Query]
            do {
                labelled = try JSONDecoder().decode([Query].self, from: Data(contentsOf: URL(fileURLWithPath: queries)))
            } catch {
                throw CLIError(message: "cannot read the queries \(queries): \(error)")
            }
            let lines: Data
            do { lines = try Data(contentsOf: URL(fileURLWithPath: messages)) } catch {
                throw CLIError(message: "cannot read the messages \(messages): \(error.localizedDescription)")
            }
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-search-eval-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: root) }
            let queue = root.appendingPathComponent("queues/text")
            try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
            try lines.write(to: queue.appendingPathComponent("labelled.jsonl"))
            config.dataRoot = root
            config.store = StoreConfig(path: root.appendingPathComponent("sluice.sqlite"))
            config.threads.embeddings.provider = .openAICompatible
            if let embedURL { config.threads.embeddings.baseURL = embedURL }
            config.webhooks = []

            let services: Services
            do { services = try await Services.live(config: config, logger: Logger(label: "sluice")) } catch {
                throw CLIError(message: "cannot start: \(error)")
            }
            try await services.daemon(mode: .once).run()
            guard let indexer = services.embeddingIndexer() else { throw CLIError(message: "no embedding provider") }
            do { try await indexer.indexPending() } catch {
                throw CLIError(message: "the embedding provider at \(config.threads.embeddings.baseURL) failed: \(error)")
            }
            let store = services.store
            let conversations = try await store.conversations(of: user)
            var approved = 0
            for conversation in conversations {
                approved += try await store.threadMessages(conversationId: conversation, limit: 100_000).count
            }
            let total = lines.split(separator: UInt8(ascii: "\n")).count
            if approved < total {
                FileHandle.standardError.write(Data("warning: \(total - approved) of \(total) labelled messages were not approved, so cannot be found\n".utf8))
            }

            var figures: [Figures] = []
            for mode in ThreadSearch.Mode.allCases {
                var recall: [(kind: String, value: Double)] = []
                var reciprocal: [Double] = []
                for query in labelled {
                    let scope = query.conversationId.map { [$0] } ?? conversations
                    let ranked = try await services.threads.search.rank(query.query, conversations: scope, perConversation: 100_000, mode: mode).ranked
                    let ids = try await store.threadMessages(seqs: ranked.map(\.seq)).map(\.id.rawValue)
                    let relevant = Set(query.relevant)
                    let found = Set(ids.prefix(5)).intersection(relevant).count
                    recall.append((query.kind ?? "all", relevant.isEmpty ? 0 : Double(found) / Double(relevant.count)))
                    reciprocal.append(ids.firstIndex(where: relevant.contains).map { 1 / Double($0 + 1) } ?? 0)
                }
                let byKind = Dictionary(grouping: recall, by: \.kind).mapValues { values in values.map(\.value).reduce(0, +) / Double(values.count) }
                figures.append(Figures(mode: mode.rawValue, recallAt5: Self.mean(recall.map(\.value)), mrr: Self.mean(reciprocal),
                                       recallAt5ByKind: byKind))
            }
            let report = Report(messages: total, approved: approved, threads: conversations.count, queries: labelled.count,
                                model: indexer.provider.model, modes: figures)
            if json {
                try printJSON(report)
            } else {
                print("search quality: \(approved) of \(total) messages approved in \(conversations.count) threads, \(labelled.count) queries, vectors from \(report.model)")
                let kinds = Set(figures.flatMap(\.recallAt5ByKind.keys)).sorted()
                var table = TextTable(headers: ["MODE", "RECALL@5", "MRR"] + kinds.map { "R@5 \($0.uppercased())" })
                for figure in figures {
                    table.rows.append([figure.mode, Self.format(figure.recallAt5), Self.format(figure.mrr)]
                                      + kinds.map { Self.format(figure.recallAt5ByKind[$0] ?? 0) })
                }
                print(table.render())
            }
            if check {
                let byMode = Dictionary(uniqueKeysWithValues: figures.map { ($0.mode, $0) })
                guard let hybrid = byMode["hybrid"], let keyword = byMode["keyword"], let semantic = byMode["semantic"] else { return }
                let beats = hybrid.recallAt5 > max(keyword.recallAt5, semantic.recallAt5) && hybrid.mrr > max(keyword.mrr, semantic.mrr)
                if !beats { throw CLIError(message: "hybrid does not beat both keyword-only and semantic-only on recall@5 and MRR") }
                print("check: hybrid beats keyword-only and semantic-only on recall@5 and MRR")
            }
        }

        static func mean(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count) }
        static func format(_ value: Double) -> String { String(format: "%.4f", value) }
    }
}
