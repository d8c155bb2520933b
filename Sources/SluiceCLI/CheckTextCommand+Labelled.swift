import Foundation
import Logging
import SluiceCore
import SluicePipeline
import SluiceServices

/// `sluice check-text --labelled FILE`: the text pipeline as configured (the wordlists, and the classifier when
/// `text.classifier` is set) over a labelled file, with the figures a moderator cares about.
extension CheckTextCommand {
    struct LabelledLine: Decodable {
        var id: String?
        var text: String
        /// `hostile` (block or hold), `concern` (a person should see it) or `clean`.
        var label: String
        var category: String?
        /// Whether the text has a word from the wordlists (so "recall without listed words" can be told apart).
        var listed: Bool?
    }

    struct LabelledEvaluation: Encodable {
        var file: String
        var classifier: String
        var lines: Int
        /// Lines held for review or blocked.
        var flagged: Int
        /// Of flagged lines, the share labelled hostile or concern.
        var precision: Double
        /// Hostile lines flagged / hostile lines.
        var hostileRecall: Double
        /// The same for hostile lines without a listed word.
        var unlistedHostileRecall: Double
        /// Concern lines flagged (held or blocked) / concern lines.
        var concernRecall: Double
        /// Clean lines flagged / clean lines.
        var cleanFlagRate: Double
        /// Clean lines allowed but marked (mild words, classifier marks) / clean lines.
        var cleanMarkRate: Double
        /// Lines held because the classifier could not be asked.
        var classifierFailures: Int
        /// category → [flagged, lines].
        var categories: [String: [Int]]
    }

    func evaluate(_ file: String, config: PipelineConfig) async throws {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw CLIError(message: "cannot read \(file): \((error as NSError).localizedDescription)")
        }
        var lines: [LabelledLine] = []
        for (index, raw) in data.split(separator: UInt8(ascii: "\n")).enumerated() where !raw.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) {
            do { lines.append(try JSONDecoder().decode(LabelledLine.self, from: Data(raw))) } catch {
                throw CLIError(message: "\(file):\(index + 1): not a labelled line {\"text\", \"label\", \"category\"?, \"listed\"?}: \(error)")
            }
            guard ["hostile", "concern", "clean"].contains(lines[lines.count - 1].label) else {
                throw CLIError(message: "\(file):\(index + 1): label \"\(lines[lines.count - 1].label)\" is not hostile, concern or clean")
            }
        }
        var logger = Logger(label: "sluice")
        logger.logLevel = .error
        let texts: TextPipeline
        do { texts = try Pipelines.live(config: config, logger: logger).texts } catch { throw CLIError(message: "\(error)") }
        // Judged a window at a time (the classifier's latency sets the pace), results in line order.
        let messages = lines.indices.map { ParsedMessage(id: ItemID("line-\($0 + 1)"), userId: "eval", content: TextContent(text: lines[$0].text)) }
        let runs = await texts.judging.run(messages, context: .intake, concurrency: texts.concurrentLines)
        let items = zip(messages, runs).map { message, run in
            let base = Item(id: message.id, kind: .text, userId: "eval", status: .pending)
            return run.item(from: base, scope: .upload) ?? base
        }
        var flagged = 0, flaggedRight = 0, hostile = 0, hostileHit = 0, unlisted = 0, unlistedHit = 0
        var concern = 0, concernHit = 0, clean = 0, cleanFlagged = 0, cleanMarked = 0, failures = 0
        var categories: [String: [Int]] = [:]
        for (index, (line, item)) in zip(lines, items).enumerated() {
            let isFlagged = item.status == .blocked || item.status == .review
            let marked = item.status == .approved && (item.textVerdict?.matches.isEmpty == false || item.textVerdict?.classifier?.action == .mark)
            if item.reason?.hasPrefix("text not classified") == true { failures += 1 }
            if isFlagged {
                flagged += 1
                if line.label != "clean" { flaggedRight += 1 }
            }
            categories[line.category ?? line.label, default: [0, 0]][0] += isFlagged ? 1 : 0
            categories[line.category ?? line.label, default: [0, 0]][1] += 1
            switch line.label {
            case "hostile":
                hostile += 1
                if isFlagged { hostileHit += 1 }
                if line.listed == false {
                    unlisted += 1
                    if isFlagged { unlistedHit += 1 }
                }
            case "concern":
                concern += 1
                if isFlagged { concernHit += 1 }
            default:
                clean += 1
                if isFlagged { cleanFlagged += 1 }
                if marked { cleanMarked += 1 }
            }
            let wrong = (line.label == "clean") == isFlagged
            if misses, !json, wrong {
                print("\(line.id ?? "line \(index + 1)"): \(line.label) (\(line.category ?? "-")), \(item.status.rawValue): \(line.text.prefix(90))"
                      + (item.reason.map { "  — \($0.prefix(90))" } ?? ""))
            }
        }
        func ratio(_ part: Int, _ whole: Int) -> Double { whole == 0 ? 0 : Double(part) / Double(whole) }
        let result = LabelledEvaluation(
            file: file, classifier: texts.classifier?.name ?? "none", lines: lines.count, flagged: flagged,
            precision: ratio(flaggedRight, flagged), hostileRecall: ratio(hostileHit, hostile), unlistedHostileRecall: ratio(unlistedHit, unlisted),
            concernRecall: ratio(concernHit, concern), cleanFlagRate: ratio(cleanFlagged, clean), cleanMarkRate: ratio(cleanMarked, clean),
            classifierFailures: failures, categories: categories)
        if json {
            try printJSON(result)
            return
        }
        func percent(_ value: Double) -> String { String(format: "%.1f%%", value * 100) }
        print("\(file) (classifier: \(result.classifier)): \(lines.count) lines, \(flagged) flagged")
        print("  precision \(String(format: "%.3f", result.precision)), hostile recall \(percent(result.hostileRecall)) "
              + "(without listed words \(percent(result.unlistedHostileRecall))), concern held \(percent(result.concernRecall)), "
              + "clean flagged \(percent(result.cleanFlagRate)), clean marked \(percent(result.cleanMarkRate))"
              + (failures > 0 ? ", classifier failures \(failures)" : ""))
        var table = TextTable(headers: ["CATEGORY", "FLAGGED", "LINES"])
        for (name, counts) in categories.sorted(by: { $0.key < $1.key }) { table.rows.append([name, "\(counts[0])", "\(counts[1])"]) }
        print(table.render())
    }
}
