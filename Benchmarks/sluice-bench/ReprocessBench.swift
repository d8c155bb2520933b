import Foundation
import SluiceCore
import SluiceTesting

/// `sluice-bench <sluice binary> --reprocess`: items/s for `sluice reprocess` over 10,000 text items and
/// 1,000 images against a zero-latency fake provider (target ≥ 50,000 text items/s).
enum ReprocessBench {
    static func run(binary: String, texts: Int, images: Int) async throws {
        let fm = FileManager.default
        let root = fm.temporaryDirectory.appendingPathComponent("sluice-reprocess-bench-\(getpid())")
        defer { try? fm.removeItem(at: root) }
        try fm.createDirectory(at: root.appendingPathComponent("queues/text"), withIntermediateDirectories: true)

        let clean = SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .veryUnlikely, violence: .veryUnlikely, racy: .veryUnlikely)
        let blocked = SafeSearch(adult: .veryLikely, spoof: .veryUnlikely, medical: .veryUnlikely, violence: .veryUnlikely, racy: .veryLikely)
        let cleanServer = try await FakeVisionServer.always(clean)
        let blockServer = try await FakeVisionServer.always(blocked)
        defer {
            cleanServer.stop()
            blockServer.stop()
        }

        let samples = ["see you at the cocktail bar later", "the deploy is blocked, need help ASAP!!!", "what the f.u.c.k happened",
                       "no rush, whenever you can", "please frobnicate the widget by 5pm", "lunch tomorrow?", "Scunthorpe won again",
                       "this is sh1t", "thanks, all good", "can you review the PR today?"]
        var lines = ""
        for index in 0..<texts {
            lines += #"{"id": "t\#(index)", "userId": "u\#(index % 100)", "text": "\#(samples[index % samples.count]) #\#(index)"}"# + "\n"
        }
        try Data(lines.utf8).write(to: root.appendingPathComponent("queues/text/bench.jsonl"))
        let photos = TestEnvironment.fixtureFiles("images/photos")
        for index in 0..<images {
            let source = photos[index % photos.count]
            let folder = root.appendingPathComponent("pending/u\(index % 20)")
            try fm.createDirectory(at: folder, withIntermediateDirectories: true)
            try fm.copyItem(at: source, to: folder.appendingPathComponent("i\(index).\(source.pathExtension)"))
        }
        let wordlists = TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path
        let house = root.appendingPathComponent("house.tsv")
        try Data("frobnicate\tstrong\tother\tword\n".utf8).write(to: house)
        func config(_ endpoint: String, house: Bool) throws -> String {
            let file = root.appendingPathComponent(house ? "after.json" : "before.json")
            try Data("""
            {"dataRoot": "\(root.path)", "vision": {"endpoint": "\(endpoint)", "apiKeyEnv": null},
             "text": {"wordlistsDirectory": "\(wordlists)", "wordlists": [\(house ? "\"\(root.appendingPathComponent("house.tsv").path)\"" : "")]}}
            """.utf8).write(to: file)
            return file.path
        }
        let before = try config(cleanServer.endpoint, house: false)
        let after = try config(blockServer.endpoint, house: true)

        let ingestStart = Date()
        _ = try shell(binary, ["run", "--once", "--config", before, "--log-level", "error"])
        let ingestSeconds = Date().timeIntervalSince(ingestStart)

        func reprocess(_ kind: String) throws -> (wall: Double, summary: [String: Any]) {
            let start = Date()
            let output = try shell(binary, ["reprocess", "--kind", kind, "--json", "--config", after])
            let wall = Date().timeIntervalSince(start)
            let summary = (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
            return (wall, summary)
        }
        let text = try reprocess("text")
        let image = try reprocess("image")

        func row(_ label: String, _ count: Int, _ result: (wall: Double, summary: [String: Any])) -> String {
            let inner = result.summary["itemsPerSecond"] as? Double ?? 0
            let moves = (result.summary["moves"] as? [String: Int] ?? [:]).map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")
            return "\(label.padding(toLength: 8, withPad: " ", startingAt: 0)) \(String(count).padding(toLength: 7, withPad: " ", startingAt: 0)) "
                + "\(String(format: "%.2f", result.wall).padding(toLength: 9, withPad: " ", startingAt: 0)) "
                + "\(String(format: "%.0f", Double(count) / result.wall).padding(toLength: 14, withPad: " ", startingAt: 0)) "
                + "\(String(format: "%.0f", inner).padding(toLength: 17, withPad: " ", startingAt: 0)) \(moves)"
        }
        print("Backlog reprocessing, zero-latency fake provider, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print("(first ingest of both by `sluice run --once`: \(String(format: "%.1f", ingestSeconds)) s)")
        print("")
        print("kind     items   wall s    items/s wall   items/s in run    status moves")
        print(row("text", texts, text))
        print(row("image", images, image))
        print("")
        let textRate = text.summary["itemsPerSecond"] as? Double ?? 0
        print("text reprocessing: \(String(format: "%.0f", textRate)) items/s in the run (target ≥ 50,000); wall time includes process start and store open")
    }

    static func shell(_ binary: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
