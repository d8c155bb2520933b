import ArgumentParser
import Foundation
import SluiceCore
import SluiceServices

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show one item (image `{userId}/{imageId}` or text id) with its history.")

    @OptionGroup var common: CommonOptions

    @Argument(help: "Item id, e.g. user1/img42.")
    var id: String

    @Flag(help: "Print JSON (stable fields, see README).")
    var json = false

    func run() async throws {
        let config = try common.loadConfig().config
        let store = try await common.existingStore(config)
        guard let item = try await store.item(ItemID(id)) else {
            throw CLIError(message: "no item with id \"\(id)\" in \(config.store.path.path)")
        }
        let history = try await store.events(of: ItemID(id))
        if json {
            try printJSON(ItemWithHistory(item: item, history: history))
            return
        }
        var lines = [
            "id:        \(item.id.rawValue)", "kind:      \(item.kind.rawValue)", "user:      \(item.userId)",
            "status:    \(item.status.rawValue)", "reason:    \(item.reason ?? "-")",
        ]
        if let s = item.safeSearch {
            lines.append("safeSearch: adult \(s.adult.rawValue), racy \(s.racy.rawValue), violence \(s.violence.rawValue), medical \(s.medical.rawValue), spoof \(s.spoof.rawValue) (\(item.provider ?? "-"))")
        }
        if let e = item.exif {
            lines.append("exif:      GPS \(e.hadGPS ? "removed" : "none"), camera \([e.make, e.model].compactMap { $0 }.joined(separator: " ").nilIfEmpty ?? "-"), orientation \(e.orientation.map(String.init) ?? "-")")
        }
        if let content = item.content {
            lines.append("text:      \(content.text.prefix(200))")
            if let source = content.source { lines.append("source:    \(source)") }
        }
        if let verdict = item.textVerdict {
            lines.append("verdict:   \(verdict.allowed ? "allowed" : "blocked")\(verdict.reason.map { " — \($0)" } ?? "")")
            if !verdict.matches.isEmpty {
                lines.append("matches:   " + verdict.matches.map { "\($0.term) (\($0.severity.rawValue), \($0.category)) at \($0.start)..<\($0.end)" }.joined(separator: "; "))
                lines.append("censored:  \(verdict.censored.prefix(200))")
            }
        }
        if let approved = item.outputs.approved { lines.append("approved:  \(approved) (\(item.outputs.approvedBytes ?? 0) bytes)") }
        if let thumbnail = item.outputs.thumbnail { lines.append("thumbnail: \(thumbnail) (\(item.outputs.thumbnailBytes ?? 0) bytes)") }
        if let original = item.original { lines.append("original:  \(original)") }
        lines.append("created:   \(item.createdAt.formatted(.iso8601))   updated: \(item.updatedAt.formatted(.iso8601))   attempts: \(item.attempts)")
        lines.append("history:")
        for event in history {
            let change = [event.fromStatus?.rawValue, event.toStatus?.rawValue].compactMap { $0 }.joined(separator: " → ")
            lines.append("  \(event.at.formatted(.iso8601))  \(event.type)  \(change)  \(event.stage.map { "[\($0)] " } ?? "")\(event.detail ?? "")")
        }
        // Ids, paths, texts and reasons come from outside: control characters are escaped (see TextTable).
        print(lines.map(Identifiers.terminalSafe).joined(separator: "\n"))
    }
}

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List items, newest first.")

    @OptionGroup var common: CommonOptions

    @Option(help: "Only this status: \(ItemStatus.allCases.map(\.rawValue).joined(separator: ", ")).")
    var status: ItemStatus?

    @Option(help: "Only this kind: image, text.")
    var kind: ItemKind?

    @Option(help: "At most this many items.")
    var limit: Int?

    @Flag(help: "Print a JSON array (stable fields, see README).")
    var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1 (got \(limit))") }
    }

    func run() async throws {
        let config = try common.loadConfig().config
        let items = try await common.existingStore(config).items(status: status, kind: kind, limit: limit)
        if json {
            try printJSON(items)
            return
        }
        print(TextTable(headers: Item.tableHeaders, rows: items.map(\.tableRow)).render())
        let counts = Dictionary(grouping: items, by: \.status).mapValues(\.count)
        print("\n" + ItemStatus.allCases.compactMap { s in counts[s].map { "\($0) \(s.rawValue)" } }.joined(separator: ", ")
              + (items.isEmpty ? "no items" : ""))
    }
}

extension ItemStatus: ExpressibleByArgument {}
extension ItemKind: ExpressibleByArgument {}
