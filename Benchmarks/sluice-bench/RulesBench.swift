import Foundation
import SluiceCore
import SluiceTesting

/// `sluice-bench <sluice binary> --rules [--texts N] [--rounds R]`: the daemon's text path (`sluice run --once` over
/// a text queue) over the same messages three ways, alternating, in one invocation:
/// - plain: no recipient, no conversation;
/// - in conversations: a `conversationId` but no recipient (the store indexes the thread: members, thread
///   messages, full-text search; the rules stage does not apply);
/// - with recipients: a `recipientId` too (the rules stage: relations read, a message request or not, the spam
///   counters).
/// Every text is distinct (a word spelt from the line's number), as in a real chat.
/// Target: the rules stage costs at most 15% of the path's throughput (with recipients against in conversations;
/// both lines carry the same conversation ids, so the thread indexing they share is not counted as the stage's).
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
        enum Path: CaseIterable { case plain, conversations, recipients }
        func prepare(_ label: String, path: Path) throws -> String {
            let root = base.appendingPathComponent(label)
            try? fm.removeItem(at: root)
            try fm.createDirectory(at: root.appendingPathComponent("queues/text"), withIntermediateDirectories: true)
            var lines = ""
            let start = 1_800_000_000
            for index in 0..<texts {
                let sender = index % 200
                let recipient = index % 10 == 9 ? (sender + 37) % 200 : sender / 4 * 4 + (sender % 4 + 1) % 4
                let sentAt = Date(timeIntervalSince1970: Double(start + index / 20)).formatted(.iso8601)
                let target = switch path {
                case .plain: ""
                case .conversations: #", "conversationId": "c\#(sender / 4)""#
                case .recipients: #", "recipientId": "u\#(recipient)", "conversationId": "c\#(sender / 4)""#
                }
                // Every text differs from every other in its letters, as in a real chat (the duplicates counter keeps one key
                // per text): the line's number spelt in letters.
                let tag = String(String.UnicodeScalarView((0..<4).compactMap { Unicode.Scalar(UInt8(97 + index / Int(pow(26, Double($0))) % 26)) }))
                lines += #"{"id": "m\#(index)", "userId": "u\#(sender)"\#(target), "text": "\#(samples[index % samples.count]) #\#(index) \#(tag)", "sentAt": "\#(sentAt)"}"# + "\n"
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
        var rates: [Path: [Double]] = [:]
        for round in 0..<rounds {
            // Each round runs the paths in another order, so none always runs first or last.
            let order = Path.allCases
            for index in order.indices {
                let path = order[(index + round) % order.count]
                let config = try prepare("\(path)", path: path)
                let start = Date()
                _ = try ReprocessBench.shell(binary, ["run", "--once", "--config", config, "--log-level", "error"])
                rates[path, default: []].append(Double(texts) / Date().timeIntervalSince(start))
            }
        }
        func median(_ path: Path) -> Double {
            let values = (rates[path] ?? []).sorted()
            return values.isEmpty ? 0 : values[values.count / 2]
        }
        let plain = median(.plain)
        let conversations = median(.conversations)
        let recipients = median(.recipients)
        func row(_ label: String, _ rate: Double, _ ratio: Double) -> String {
            label.padding(toLength: 44, withPad: " ", startingAt: 0)
                + String(format: "%.0f", rate).padding(toLength: 19, withPad: " ", startingAt: 0) + String(format: "%.2f", ratio)
        }
        print("Text path, `sluice run --once` over \(texts) messages, \(rounds) rounds of the three paths in turn, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print("")
        print("path                                        median messages/s  ratio to plain")
        print(row("plain (no recipient, no conversation)", plain, 1))
        print(row("in conversations (thread indexing)", conversations, conversations / plain))
        print(row("with recipients (+ rules and spam signals)", recipients, recipients / plain))
        print("")
        print("thread indexing cost: \(String(format: "%.1f", (1 - conversations / plain) * 100))% of the plain path's throughput")
        print("rules stage cost: \(String(format: "%.1f", (1 - recipients / conversations) * 100))% of the path in conversations (target ≤ 15%)")
    }
}
