import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluiceServices

struct PriorityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "priority",
        abstract: "Score how urgent a message is: {priority, urgencyScore, isUrgent, reason, urgencyIndicators}.")

    @OptionGroup var common: CommonOptions

    @Argument(help: "The message.")
    var text: String

    @Option(help: "Conversation context (used by the LLM engine).")
    var context: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        let config = try common.loadConfig().config
        let engine: any PriorityEngine
        do {
            engine = try Pipelines.live(config: config, logger: Logger(label: "sluice")).texts.priority
        } catch {
            throw CLIError(message: "\(error)")
        }
        let verdict = await engine.score(text, context: context)
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
}
