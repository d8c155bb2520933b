import ArgumentParser
import Foundation
import SluiceCore
import SluiceServices
import SluiceText

struct CheckTextCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-text",
        abstract: "Run the profanity filter on one message, or on every line of a file (JSON Lines out, in order).",
        discussion: "Exit code 0 whether or not the text is allowed; non-zero only for usage or I/O errors.")

    @OptionGroup var common: CommonOptions

    @Argument(help: "The message to check.")
    var text: String?

    @Option(help: "Check every line of this file (one message per line).")
    var file: String?

    @Option(help: "Measure the text pipeline (wordlists, plus text.classifier when set) on a labelled JSON Lines file {text, label: hostile|concern|clean, category?, listed?}.")
    var labelled: String?

    @Flag(help: "With --labelled: list the lines judged wrongly.")
    var misses = false

    @Flag(help: "Print JSON: {allowed, reason, matches [{term, category, severity, start, end}], censored}.")
    var json = false

    func validate() throws {
        if [text != nil, file != nil, labelled != nil].filter({ $0 }).count != 1 {
            throw ValidationError("give one of: a message, --file F, --labelled F")
        }
    }

    func run() async throws {
        let config = try common.loadConfig().config
        if let labelled {
            try await evaluate(labelled, config: config)
            return
        }
        let filter = try TextFilterLoader.load(config)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if let text {
            print(render(result(of: { () throws(TextInputError) in try filter.check(text) }), encoder: encoder))
            return
        }
        guard let file else { return }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            throw CLIError(message: "cannot read \(file): \((error as NSError).localizedDescription)")
        }
        var output = ""
        for (index, line) in TextLines.split(data).enumerated() {
            output += render(result(of: { () throws(TextInputError) in try filter.check(utf8: line) }), encoder: encoder, line: index + 1)
            output += "\n"
            if output.utf8.count > 1 << 16 {
                FileHandle.standardOutput.write(Data(output.utf8))
                output = ""
            }
        }
        FileHandle.standardOutput.write(Data(output.utf8))
    }

    private func result(of body: () throws(TextInputError) -> TextVerdict) -> Result<TextVerdict, TextInputError> {
        do throws(TextInputError) { return .success(try body()) } catch { return .failure(error) }
    }

    private func render(_ result: Result<TextVerdict, TextInputError>, encoder: JSONEncoder, line: Int? = nil) -> String {
        switch result {
        case let .success(verdict):
            if json { return (try? String(decoding: encoder.encode(verdict), as: UTF8.self)) ?? "{}" }
            return verdict.allowed
                ? (verdict.reason.map { "allowed (\($0)): \(verdict.censored)" } ?? "allowed")
                : "blocked: \(verdict.reason ?? "")\n  \(verdict.censored)"
        case let .failure(error):
            if json {
                let object = InputErrorJSON(error: error.message, kind: error.kind.rawValue, line: line)
                return (try? String(decoding: encoder.encode(object), as: UTF8.self)) ?? "{}"
            }
            return "error\(line.map { " (line \($0))" } ?? ""): \(error.message)"
        }
    }
}

private struct InputErrorJSON: Encodable {
    var error: String
    var kind: String
    var line: Int?
}

/// Splits file bytes into lines (LF, with a trailing CR dropped); a final empty line is not a message.
enum TextLines {
    static func split(_ data: Data) -> [Data.SubSequence] {
        var lines = data.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        if lines.last?.isEmpty == true { lines.removeLast() }
        return lines
    }
}

enum TextFilterLoader {
    static func load(_ config: PipelineConfig) throws -> ProfanityFilter {
        do {
            return try Pipelines.filter(config)
        } catch {
            throw CLIError(message: "\(error)")
        }
    }
}

struct BenchTextCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-text",
        abstract: "Measure the filter alone: messages per CPU-second over every line of a file (JSON out).")

    @OptionGroup var common: CommonOptions

    @Option(help: "Corpus, one message per line.")
    var file: String

    @Option(help: "Minimum CPU seconds to measure.")
    var seconds: Double = 2

    func run() async throws {
        let config = try common.loadConfig().config
        let filter = try TextFilterLoader.load(config)
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw CLIError(message: "cannot read \(file): \((error as NSError).localizedDescription)")
        }
        let messages = TextLines.split(data).compactMap { String(validating: $0, as: UTF8.self) }.filter { !$0.isEmpty }
        guard !messages.isEmpty else { throw CLIError(message: "\(file) has no lines to check") }
        var flagged = 0
        for message in messages { if let verdict = try? filter.check(message), !verdict.matches.isEmpty { flagged += 1 } }
        var checked = 0
        let start = Self.cpuSeconds()
        var elapsed = 0.0
        repeat {
            for message in messages { _ = try? filter.check(message) }
            checked += messages.count
            elapsed = Self.cpuSeconds() - start
        } while elapsed < seconds
        let result = BenchResult(messages: checked, cpuSeconds: elapsed, flagged: flagged, corpusLines: messages.count,
                                 messagesPerCPUSecond: Double(checked) / elapsed)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(result), as: UTF8.self))
    }

    static func cpuSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    private struct BenchResult: Encodable {
        var messages: Int
        var cpuSeconds: Double
        var flagged: Int
        var corpusLines: Int
        var messagesPerCPUSecond: Double
    }
}
