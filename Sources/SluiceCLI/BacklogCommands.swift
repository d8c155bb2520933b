import ArgumentParser
import Foundation
import SluiceCore
import SluiceDaemon
import SluicePipeline
import SluiceServices

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Copy an existing image backlog into pending/ (a flat folder with --user, or {userId}/{file} folders).",
        discussion: "Names and formats are checked as the daemon checks them; the source is never changed.")

    @OptionGroup var common: CommonOptions

    @Argument(help: "Folder to import.")
    var directory: String

    @Option(help: "The user every file of a flat folder belongs to.")
    var user: String?

    @Flag(help: "Print the summary as JSON.")
    var json = false

    func run() async throws {
        let config = try common.loadConfig().config
        let ingestor: BacklogIngestor
        do { ingestor = try await Services.live(config: config).ingestor() } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError(message: "\(directory) is not a folder")
        }
        let renderer = ProgressRenderer(label: "ingest")
        let summary: BacklogIngestor.Summary
        do {
            summary = try await ingestor.ingest(URL(fileURLWithPath: directory), user: user) { renderer.update(done: $0, total: $1) }
        } catch let error as IngestError {
            throw CLIError(message: error.message)
        }
        renderer.finish()
        if json {
            try printJSON(summary)
            return
        }
        print("copied \(summary.copied) (\(summary.bytes / 1024) KiB), already ingested \(summary.alreadyIngested), already pending \(summary.alreadyPending), rejected \(summary.rejected.count)")
        for rejection in summary.rejected.prefix(50) { print("  rejected \(rejection.path): \(rejection.reason)") }
        if summary.rejected.count > 50 { print("  … and \(summary.rejected.count - 50) more") }
        if summary.copied > 0 { print("run `sluice run --once` (or keep the daemon running) to moderate them") }
    }
}

struct ReviewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "review",
        abstract: "Human decisions on items in review.",
        subcommands: [List.self, Show.self, Approve.self, Block.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Items waiting in review, oldest first.")
        @OptionGroup var common: CommonOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let config = try common.loadConfig().config
            // Not `existingStore(config).items(…)`: Swift 6.3.1's optimizer crashed splitting this coroutine with it.
            try common.requireStore(config)
            let items = Array(try await Services.store(config: config).items(status: .review).reversed())
            if json {
                try printJSON(items)
            } else {
                print(TextTable(headers: Item.tableHeaders, rows: items.map(\.tableRow)).render())
                print("\n\(items.count) in review")
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One item with its history (as `sluice status`).")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Item id.") var id: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let status = try StatusCommand.parse(["--config", common.config, id] + (json ? ["--json"] : []))
            try await status.run()
        }
    }

    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Approve: produces the approved image and thumbnail.")
        @OptionGroup var decision: DecisionOptions
        func run() async throws { try await decision.apply(.approve) }
    }

    struct Block: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Block: the original moves to quarantine/.")
        @OptionGroup var decision: DecisionOptions
        func run() async throws { try await decision.apply(.block) }
    }

    struct DecisionOptions: ParsableArguments {
        @OptionGroup var common: CommonOptions
        @Argument(help: "Item id.") var id: String
        @Option(help: "Why (recorded with the decision).") var note: String?
        @Option(help: "Who decided (default: $USER).") var by: String?

        func apply(_ choice: HumanDecisions.Choice) async throws {
            let config = try common.loadConfig().config
            try common.requireStore(config)
            let services: Services
            do { services = try await Services.live(config: config) } catch {
                throw CLIError(message: "cannot start: \(error)")
            }
            let who = by ?? ProcessInfo.processInfo.environment["USER"] ?? "operator"
            do {
                let item = try await services.decisions.decide(ItemID(id), choice, by: who, note: note)
                print("\(item.id): \(item.status.rawValue) (\(item.reason ?? ""))")
                if let approved = item.outputs.approved { print("  \(approved)") }
                if let original = item.original { print("  \(original)") }
            } catch let error as DecisionError {
                throw CLIError(message: error.message)
            }
            await services.pipelines.pool.shutdown()
        }
    }
}

struct ReportsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reports", abstract: "User reports.", subcommands: [List.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Submitted reports, newest first, with the item each points at.")
        @OptionGroup var common: CommonOptions
        @Flag(help: "Print JSON.") var json = false

        struct Entry: Encodable {
            var report: Report
            var item: Item?
        }

        func run() async throws {
            let config = try common.loadConfig().config
            try common.requireStore(config)
            let store = try await Services.store(config: config)
            let reports = try await store.reports()
            let items = Dictionary(uniqueKeysWithValues: try await store.items(Array(Set(reports.map { ItemID($0.messageId) }))).map { ($0.id.rawValue, $0) })
            if json {
                try printJSON(reports.map { Entry(report: $0, item: items[$0.messageId]) })
                return
            }
            var table = TextTable(headers: ["REPORT", "CREATED", "CATEGORY", "ITEM", "ITEM STATUS", "BY", "DESCRIPTION"])
            for report in reports {
                table.rows.append([report.reportId, report.createdAt.formatted(.iso8601), report.category, report.messageId,
                                   items[report.messageId]?.status.rawValue ?? "(unknown item)", report.reporterUserId ?? "-",
                                   String((report.description ?? "").prefix(60))])
            }
            print(table.render())
            print("\n\(reports.count) reports")
        }
    }
}
