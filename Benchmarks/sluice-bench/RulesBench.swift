import Foundation
import SluiceCore
import SluiceTesting

/// `sluice-bench <sluice binary> --rules [--texts N] [--rounds R]`: the daemon's text path (`sluice run --once` over
/// a text queue) with the conversation rules stage (every line has a recipient: relations read, a message
/// request or not, the spam counters) against the same messages without recipients (the stage does not apply),
/// alternating, in one invocation. Target: the rules cost at most 15% of the path's throughput.
enum RulesBench {
    static func run(binary: String, texts: Int, rounds: Int) async throws {
        let fm = FileManager.default
        let base = fm.temporaryDirectory.appendingPathComponent("sluice-rules-bench-\(getpid())")
        defer { try? fm.removeItem(at: base) }
        let server = try await FakeVisionServer.always(SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .veryUnlikely,
                                                                  violence: .veryUnlikely, racy: .veryUnlikely))
        defer { server.stop() }
        let wordlists = TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path
        let samples = ["see you at the cocktail bar later", "the deploy is blocked, need help ASAP!!!", "no rush, whenever you can",
                       "please check https://docs.example.org/setup by 5pm", "lunch tomorrow?", "thanks, all good 🙏",
                       "can you review the PR today?", "soooo good 😂😂", "@sam @kai meeting moved", "where are you?"]
        // 200 users in 50 groups of four who follow one another; every tenth message goes outside the group (a request).
        var relations = ""
        for user in 0..<200 {
            relations += #"{"type": "user", "userId": "u\#(user)", "createdAt": "2024-01-01T00:00:00Z"}"# + "\n"
            for other in (user / 4 * 4)..<(user / 4 * 4 + 4) where other != user {
                relations += #"{"type": "follow", "from": "u\#(user)", "to": "u\#(other)"}"# + "\n"
            }
        }
        func prepare(_ label: String, rules: Bool) throws -> String {
            let root = base.appendingPathComponent(label)
            try? fm.removeItem(at: root)
            try fm.createDirectory(at: root.appendingPathComponent("queues/text"), withIntermediateDirectories: true)
            var lines = ""
            let start = 1_800_000_000
            for index in 0..<texts {
                let sender = index % 200
                let recipient = index % 10 == 9 ? (sender + 37) % 200 : sender / 4 * 4 + (sender % 4 + 1) % 4
                let sentAt = Date(timeIntervalSince1970: Double(start + index / 20)).formatted(.iso8601)
                let target = rules ? #", "recipientId": "u\#(recipient)", "conversationId": "c\#(sender / 4)""# : ""
                lines += #"{"id": "m\#(index)", "userId": "u\#(sender)"\#(target), "text": "\#(samples[index % samples.count]) #\#(index)", "sentAt": "\#(sentAt)"}"# + "\n"
            }
            try Data(lines.utf8).write(to: root.appendingPathComponent("queues/text/bench.jsonl"))
            let config = root.appendingPathComponent("pipeline.json")
            try Data("""
            {"dataRoot": "\(root.path)", "vision": {"endpoint": "\(server.endpoint)", "apiKeyEnv": null},
             "text": {"wordlistsDirectory": "\(wordlists)"}}
            """.utf8).write(to: config)
            try Data(relations.utf8).write(to: root.appendingPathComponent("relations.jsonl"))
            _ = try ReprocessBench.shell(binary, ["relations", "import", root.appendingPathComponent("relations.jsonl").path, "--config", config.path])
            return config.path
        }
        var with: [Double] = []
        var without: [Double] = []
        for round in 0..<rounds {
            for rules in round % 2 == 0 ? [false, true] : [true, false] {
                let config = try prepare(rules ? "rules" : "plain", rules: rules)
                let start = Date()
                _ = try ReprocessBench.shell(binary, ["run", "--once", "--config", config, "--log-level", "error"])
                let rate = Double(texts) / Date().timeIntervalSince(start)
                if rules { with.append(rate) } else { without.append(rate) }
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let ratio = median(with) / median(without)
        print("Text path, `sluice run --once` over \(texts) messages, \(rounds) alternating rounds, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print("")
        print("path                                   median messages/s   ratio")
        print("without recipients (no rules stage)    \(String(format: "%.0f", median(without)).padding(toLength: 19, withPad: " ", startingAt: 0)) 1.00")
        print("with recipients (rules + spam signals) \(String(format: "%.0f", median(with)).padding(toLength: 19, withPad: " ", startingAt: 0)) \(String(format: "%.2f", ratio))")
        print("")
        print("rules stage cost: \(String(format: "%.1f", (1 - ratio) * 100))% of throughput (target ≤ 15%)")
    }
}
