import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluicePipeline
import SluiceServices

struct ReprocessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reprocess",
        abstract: "Re-judge stored items with the current config (providers, thresholds, wordlists).",
        discussion: """
        Interrupted (Ctrl-C, kill -9) and run again with the same arguments, it continues where it stopped.
        --dry-run prints what would change and changes nothing.
        """)

    @OptionGroup var common: CommonOptions

    @Option(help: "Only this kind: image, text.")
    var kind: ItemKind?

    @Option(help: "Only these statuses, comma-separated: approved,blocked,review,rejected.")
    var status: String?

    @Option(help: "Only this user.")
    var user: String?

    @Option(help: "Only items created at or after this date (YYYY-MM-DD or ISO 8601).")
    var since: String?

    @Option(help: "Only items created before this date (YYYY-MM-DD or ISO 8601).")
    var until: String?

    @Option(help: "Stages to re-run, comma-separated: match,classify,caption,text,priority,embed (default: all but embed; embed backfills smart search's vectors for every approved thread message without one, whatever the filters; it needs threads.embeddings' provider).")
    var stages: String?

    @Flag(help: "Print what would change; write nothing.")
    var dryRun = false

    @Option(help: "Items per batch: several `sluice reprocess` runs with the same arguments (on several hosts over one PostgreSQL store) each claim a batch at a time (default 1000; fixed when a run starts).")
    var batchSize = 1_000

    @Option(help: "Images re-judged at once (default: concurrency.items, or vision.maxInFlight + 2 per CPU thread).")
    var concurrency: Int?

    @Flag(help: "Also re-judge items a person decided; a machine verdict that disagrees sends them to review.")
    var includeHumanDecisions = false

    @Flag(help: "Print the summary as JSON.")
    var json = false

    func run() async throws {
        try common.bootstrapLogging(default: .error)
        let config = try common.loadConfig().config
        var filter = ItemFilter(kind: kind, userId: user)
        if let status {
            // Pending items are the daemon's to judge; the help names the same four.
            let judged = ItemStatus.allCases.filter { $0 != .pending }
            filter.statuses = try status.split(separator: ",").map { raw in
                guard let value = ItemStatus(rawValue: String(raw)), judged.contains(value) else {
                    throw ValidationError("--status \"\(raw)\" is not a status reprocess takes; allowed: \(judged.map(\.rawValue).joined(separator: ", "))")
                }
                return value
            }
        }
        filter.since = try since.map { try Self.date($0, flag: "--since") }
        filter.until = try until.map { try Self.date($0, flag: "--until") }
        let allowed = Reprocessor.allStages + ["embed"]
        // embed is a backfill (it needs the embedding provider running), so only when asked for by name.
        var chosen = stages.map { $0.split(separator: ",").map(String.init) } ?? Reprocessor.allStages
        if let unknown = chosen.first(where: { !allowed.contains($0) }) {
            throw ValidationError("--stages \"\(unknown)\" is not a stage; allowed: \(allowed.joined(separator: ", "))")
        }
        if chosen.contains("embed"), config.threads.embeddings.provider == .none {
            throw ValidationError("--stages embed needs an embedding provider: threads.embeddings.provider is \"none\"")
        }
        let embed = chosen.contains("embed")
        chosen.removeAll { $0 == "embed" }
        if let concurrency, !(1...256).contains(concurrency) { throw ValidationError("--concurrency must be 1...256") }
        guard (1...100_000).contains(batchSize) else { throw ValidationError("--batch-size must be 1...100000") }

        try common.requireStore(config)
        let services: Services
        do {
            services = try await Services.live(config: config, logger: Logger(label: "sluice"), readOnlyStore: dryRun)
        } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        var summary = Reprocessor.Summary()
        summary.dryRun = dryRun
        if !chosen.isEmpty {
            // The run's batch claims are renewed while it works (several hosts may share the run); a run on this host
            // that was killed leaves claims that are freed first.
            if !dryRun { await services.leases.releaseDeadLocalOwners() }
            let heartbeat = Task { [leases = services.leases] in if !dryRun { await leases.heartbeat() } }
            defer { heartbeat.cancel() }
            let renderer = ProgressRenderer(label: dryRun ? "dry run" : "reprocess")
            summary = try await services.reprocessor().run(
                Reprocessor.Options(filter: filter, stages: chosen, dryRun: dryRun, concurrency: concurrency ?? config.itemsInFlight,
                                    includeHumanDecisions: includeHumanDecisions, batchSize: batchSize)
            ) { done, total in renderer.update(done: done, total: total) }
            renderer.finish()
        }
        if embed, let indexer = services.embeddingIndexer() {
            summary.embeddingModel = indexer.provider.model
            if dryRun {
                summary.embedded = try await services.store.messagesNeedingEmbedding(model: indexer.provider.model, limit: Int(Int32.max)).count
            } else {
                let renderer = ProgressRenderer(label: "embed")
                do {
                    summary.embedded = try await indexer.indexPending { done in renderer.update(done: done, total: done) }
                } catch {
                    renderer.finish()
                    throw CLIError(message: "embedding stopped: \(error) (run again to go on; vectors stored so far are kept)")
                }
                renderer.finish()
            }
        }
        if json {
            try printJSON(summary)
            return
        }
        print(Self.render(summary))
    }

    static func date(_ raw: String, flag: String) throws -> Date {
        if let date = try? Date(raw, strategy: .iso8601) { return date }
        if let date = try? Date("\(raw)T00:00:00Z", strategy: .iso8601) { return date }
        throw ValidationError("\(flag) \"\(raw)\" is not a date (YYYY-MM-DD or ISO 8601)")
    }

    static func render(_ summary: Reprocessor.Summary) -> String {
        var lines: [String] = []
        if summary.dryRun {
            lines.append("Dry run: nothing was changed.")
            for change in summary.changes { lines.append("  would change \(change.id): \(change.from.rawValue) → \(change.to.rawValue) [\(change.stage)] \(change.why)") }
        }
        lines.append("\(summary.processed) items re-judged\(summary.resumed ? " (resumed; \(summary.alreadyDone) were done before)" : "") in \(String(format: "%.2f", summary.seconds)) s (\(String(format: "%.0f", summary.itemsPerSecond)) items/s)")
        var table = TextTable(headers: ["STAGE", "CHANGED", "UNCHANGED", "FAILED"])
        for stage in Reprocessor.allStages {
            guard let counts = summary.stages[stage] else { continue }
            table.rows.append([stage, "\(counts.changed)", "\(counts.unchanged)", "\(counts.failed)"])
        }
        lines.append(table.rows.isEmpty ? (summary.embedded == nil ? "no stage ran" : "no item stage ran") : table.render())
        if let embedded = summary.embedded {
            lines.append("embed: \(embedded) message\(embedded == 1 ? "" : "s") \(summary.dryRun ? "would get" : "got") a vector from \(summary.embeddingModel ?? "?")")
        }
        if summary.keptByHumanDecision > 0 { lines.append("kept (human decision): \(summary.keptByHumanDecision)") }
        if !summary.moves.isEmpty {
            lines.append("status moves: " + summary.moves.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
        } else {
            lines.append("status moves: none")
        }
        for failure in summary.failures.prefix(20) { lines.append("failed: \(failure)") }
        if summary.failures.count > 20 { lines.append("… and \(summary.failures.count - 20) more failures") }
        return lines.joined(separator: "\n")
    }
}
