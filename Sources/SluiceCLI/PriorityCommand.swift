import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluiceServices

struct PriorityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "priority",
        abstract: "Score how urgent a message is: {priority, urgencyScore, isUrgent, reason, urgencyIndicators, confidence, timeframe, category, recommendedAction}.",
        discussion: """
            With --labelled FILE (JSON Lines {"text", "context"?, "band": high|medium|low}) it scores every line with the \
            configured engine and prints the band accuracy, the high↔low swaps and the confusion matrix (--misses lists \
            the lines it got wrong).
            """)

    @OptionGroup var common: CommonOptions

    @Argument(help: "The message.")
    var text: String?

    @Option(help: "Conversation context: earlier messages (an earlier \"the server is down\" makes \"any update??\" urgent).")
    var context: String?

    @Option(name: .customLong("sent-at"), help: ArgumentHelp(
        "When the message was sent: an ISO 8601 date-time, or \"now\"; a deadline said as a time of day (\"by 5pm\") then counts from it, read in priority.timeZone. Without it the words alone are scored.",
        valueName: "date-time"))
    var sentAt: String?

    @Option(help: "Measure the engine on a labelled JSON Lines file instead.")
    var labelled: String?

    @Flag(help: "With --labelled: list the lines scored in the wrong band.")
    var misses = false

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if (text == nil) == (labelled == nil) { throw ValidationError("give a message or --labelled FILE (one of them)") }
        if sentAt != nil, labelled != nil { throw ValidationError("--sent-at goes with a message, not with --labelled") }
        if let sentAt, sentAt != "now", Self.date(sentAt) == nil {
            throw ValidationError("--sent-at \"\(sentAt)\" is not an ISO 8601 date-time with a time zone (e.g. 2026-11-25T16:50:00Z) or \"now\"")
        }
    }

    /// An ISO 8601 date-time with a zone, with or without fractional seconds.
    static func date(_ text: String) -> Date? {
        (try? Date(text, strategy: Date.ISO8601FormatStyle())) ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }

    func run() async throws {
        let config = try common.loadConfig().config
        let engine: any PriorityEngine
        do {
            engine = try Pipelines.live(config: config, logger: Logger(label: "sluice")).texts.priority
        } catch {
            throw CLIError(message: "\(error)")
        }
        if let labelled {
            try await evaluate(engine, file: labelled)
            return
        }
        let sent = sentAt.flatMap { $0 == "now" ? Date() : Self.date($0) }
        let verdict = await engine.score(text ?? "", context: context, sentAt: sent)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(verdict), as: UTF8.self))
        } else {
            print("\(verdict.priority) (\(verdict.urgencyScore)/100\(verdict.isUrgent ? ", urgent" : "")): \(verdict.reason)")
            for indicator in verdict.urgencyIndicators { print("  - \(indicator)") }
            if let fallback = verdict.fallbackReason { print("  (rules used: \(fallback))") }
        }
    }

    struct Labelled: Decodable {
        var id: String?
        var text: String
        var context: String?
        var band: String
    }

    struct Evaluation: Encodable {
        var file: String
        var lines: Int
        var correct: Int
        var accuracy: Double
        var swaps: Int
        /// expected band → scored band → count.
        var confusion: [String: [String: Int]]
        /// Which engine answered how many lines (`llm`, `rules`, `rules (llm fallback)`): an LLM run counts its
        /// fallbacks here instead of passing the rules' answers off as the model's.
        var engines: [String: Int]
    }

    func evaluate(_ engine: any PriorityEngine, file: String) async throws {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw CLIError(message: "cannot read \(file): \(error.localizedDescription)")
        }
        let bands = ["high", "medium", "low"]
        var confusion = Dictionary(uniqueKeysWithValues: bands.map { ($0, Dictionary(uniqueKeysWithValues: bands.map { ($0, 0) })) })
        var lines = 0
        var correct = 0
        var swaps = 0
        var engines: [String: Int] = [:]
        for (index, raw) in data.split(separator: UInt8(ascii: "\n")).enumerated() {
            let line: Labelled
            do { line = try JSONDecoder().decode(Labelled.self, from: Data(raw)) } catch {
                throw CLIError(message: "\(file):\(index + 1): not a labelled line {\"text\", \"context\"?, \"band\"}: \(error)")
            }
            guard bands.contains(line.band) else { throw CLIError(message: "\(file):\(index + 1): band \"\(line.band)\" is not high, medium or low") }
            let verdict = await engine.score(line.text, context: line.context)
            lines += 1
            engines[verdict.engine, default: 0] += 1
            confusion[line.band, default: [:]][verdict.priority, default: 0] += 1
            if verdict.priority == line.band {
                correct += 1
            } else {
                if Set([verdict.priority, line.band]) == ["high", "low"] { swaps += 1 }
                if misses, !json {
                    print("\(line.id ?? "line \(index + 1)"): expected \(line.band), scored \(verdict.priority) (\(verdict.urgencyScore)): \(line.text.prefix(100))"
                          + (line.context.map { "  [context: \($0.prefix(60))]" } ?? "") + "  — \(verdict.urgencyIndicators.prefix(4).joined(separator: "; "))")
                }
            }
        }
        let result = Evaluation(file: file, lines: lines, correct: correct, accuracy: lines == 0 ? 0 : Double(correct) / Double(lines),
                                swaps: swaps, confusion: confusion, engines: engines)
        if json {
            try printJSON(result)
            return
        }
        print("\(file): \(correct)/\(lines) in the right band = \(String(format: "%.1f%%", result.accuracy * 100)); high↔low swaps: \(swaps)"
              + (engines.keys.count > 1 || engines["rules"] == nil ? "; answered by " + engines.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") : ""))
        var table = TextTable(headers: ["EXPECTED \\ SCORED", "HIGH", "MEDIUM", "LOW"])
        for band in bands { table.rows.append([band] + bands.map { "\(confusion[band]?[$0] ?? 0)" }) }
        print(table.render())
    }
}
