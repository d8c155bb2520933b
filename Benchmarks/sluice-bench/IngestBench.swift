import Foundation
import SluiceCore
import SluiceTesting

/// `sluice-bench <sluice binary> --ingest [--texts N] [--rounds R]`: the daemon's text path end to end — a text
/// queue file through parse, validation, filter, priority, item row and event (`sluice run --once`) — in messages/s,
/// with the start of the daemon over an empty queue timed in the same rounds and taken off; and, as the peer in the
/// same invocation, `sluice reprocess --kind text` re-judging the same messages (the filter and priority without
/// queue parsing). Target: ≥ 60,000 messages/s.
enum IngestBench {
    static func run(binary: String, texts: Int, rounds: Int) async throws {
        let fm = FileManager.default
        let base = fm.temporaryDirectory.appendingPathComponent("sluice-ingest-bench-\(getpid())")
        defer { try? fm.removeItem(at: base) }
        let server = try await FakeVisionServer.always(SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .veryUnlikely,
                                                                  violence: .veryUnlikely, racy: .veryUnlikely))
        defer { server.stop() }
        let wordlists = TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path
        let samples = ["see you at the cocktail bar later", "the deploy is blocked, need help ASAP!!!", "what the f.u.c.k happened",
                       "no rush, whenever you can", "lunch tomorrow?", "Scunthorpe won again", "this is sh1t", "thanks, all good 🙏",
                       "can you review the PR today? it's 2:40 and the meeting is at 3", "water is coming through the ceiling HELP"]
        var lines = ""
        lines.reserveCapacity(texts * 90)
        for index in 0..<texts {
            lines += #"{"id": "t\#(index)", "userId": "u\#(index % 1000)", "text": "\#(samples[index % samples.count]) #\#(index)", "kind": "message"}"# + "\n"
        }
        let queue = Data(lines.utf8)
        func prepare(_ label: String, withQueue: Bool) throws -> String {
            let root = base.appendingPathComponent(label)
            try? fm.removeItem(at: root)
            try fm.createDirectory(at: root.appendingPathComponent("queues/text"), withIntermediateDirectories: true)
            if withQueue { try queue.write(to: root.appendingPathComponent("queues/text/bench.jsonl")) }
            let config = root.appendingPathComponent("pipeline.json")
            try Data("""
            {"dataRoot": "\(root.path)", "vision": {"endpoint": "\(server.endpoint)", "apiKeyEnv": null},
             "text": {"wordlistsDirectory": "\(wordlists)"}}
            """.utf8).write(to: config)
            return config.path
        }
        func timed(_ arguments: [String]) throws -> (seconds: Double, output: String) {
            let start = Date()
            let output = try ReprocessBench.shell(binary, arguments)
            return (Date().timeIntervalSince(start), output)
        }
        var ingest: [Double] = []
        var reprocess: [Double] = []
        for round in 0..<rounds {
            let empty = try timed(["run", "--once", "--log-level", "error", "--config", try prepare("empty-\(round)", withQueue: false)])
            let config = try prepare("full-\(round)", withQueue: true)
            let full = try timed(["run", "--once", "--log-level", "error", "--config", config])
            ingest.append(Double(texts) / max(0.001, full.seconds - empty.seconds))
            let again = try timed(["reprocess", "--kind", "text", "--json", "--config", config])
            let summary = (try? JSONSerialization.jsonObject(with: Data(again.output.utf8))) as? [String: Any] ?? [:]
            reprocess.append(summary["itemsPerSecond"] as? Double ?? 0)
            print("round \(round + 1): ingest \(String(format: "%.0f", ingest.last ?? 0)) messages/s "
                  + "(run \(String(format: "%.2f", full.seconds)) s, empty start \(String(format: "%.2f", empty.seconds)) s); "
                  + "reprocess \(String(format: "%.0f", reprocess.last ?? 0)) items/s")
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let rate = median(ingest)
        let peer = median(reprocess)
        print("")
        print("Text queue ingest, \(texts) messages, \(rounds) rounds, \(ProcessInfo.processInfo.activeProcessorCount) cores (medians)")
        print("path                                   messages/s   ratio")
        print("sluice run --once (queue → verdicts)   \(String(format: "%.0f", rate).padding(toLength: 12, withPad: " ", startingAt: 0)) 1.00")
        print("sluice reprocess --kind text (peer)    \(String(format: "%.0f", peer).padding(toLength: 12, withPad: " ", startingAt: 0)) "
              + String(format: "%.2f", peer / max(1, rate)))
        print("ingest: \(String(format: "%.0f", rate)) messages/s (target ≥ 60,000)")
    }
}
