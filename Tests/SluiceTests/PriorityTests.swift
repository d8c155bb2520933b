import Foundation
import Logging
import SluiceCore
import SluiceProviders
import SluiceTesting
import SluiceText
import MetricsTestKit
import Testing

@Suite struct PriorityTests {
    static let scorer: PriorityScorer = {
        do {
            return try PriorityScorer.load(directory: TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists"), language: "en")
        } catch {
            fatalError("priority indicators do not load: \(error)")
        }
    }()

    @Test(arguments: [
        ("URGENT: the server is down, need help ASAP!!!", "high"),
        ("My dad had a heart attack, call an ambulance", "high"),
        ("Emergency!! there's a fire in the kitchen", "high"),
        ("HELP ME PLEASE I AM LOCKED OUT", "high"),
        ("Please send the contract by 5pm today, it's urgent", "high"),
        ("Can you send the report by 5pm?", "medium"),
        ("I need this in 10 minutes", "medium"),
        ("This is the third time I'm asking, unacceptable", "medium"),
        ("Still waiting for the invoice, any update?", "medium"),
        ("Meeting moved to tonight", "low"),
        ("lunch tomorrow?", "low"),
        ("hey, how was the weekend", "low"),
        ("thanks!", "low"),
        ("No rush, whenever you can", "low"),
        ("It's not an emergency, just checking in", "low"),
        ("not urgent but could you look at the slides", "low"),
        ("Take your time, at your convenience", "low"),
        ("there is no emergency, all good", "low"),
        ("ASAP please, no rush though", "low"),
    ])
    func ruleEngineBands(message: String, band: String) {
        let verdict = Self.scorer.score(message)
        #expect(verdict.priority == band, "\(message): \(verdict.urgencyScore) \(verdict.urgencyIndicators)")
        #expect((0...100).contains(verdict.urgencyScore))
        #expect(verdict.isUrgent == (verdict.priority == "high"))
        #expect(verdict.engine == "rules")
    }

    @Test func indicatorsExplainTheScore() {
        let verdict = Self.scorer.score("URGENT: need help ASAP, by 5pm!!!")
        #expect(verdict.urgencyIndicators.contains("urgent: asap"))
        #expect(verdict.urgencyIndicators.contains("deadline: by 5pm"))
        #expect(verdict.urgencyIndicators.contains("exclamations: !!!"))
        #expect(verdict.urgencyIndicators.contains("shouting in capitals") == false, "mixed case is not shouting")
        #expect(verdict.reason.hasPrefix("Urgent: "))
        let negated = Self.scorer.score("this is not an emergency")
        #expect(negated.urgencyIndicators == ["negated: emergency"])
        #expect(negated.priority == "low")
    }

    /// The rules engine is deterministic: a scorer loaded anew gives exactly the pinned answer.
    @Test func answersArePinnedAcrossLoads() throws {
        let message = "Server down!!! need a fix by EOD"
        let fresh = try PriorityScorer.load(directory: TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists"), language: "en")
        let expected = PriorityVerdict(urgencyScore: 45, reason: "Some urgency: emergency: down, deadline: by eod, exclamations: !!!",
                                       urgencyIndicators: ["emergency: down", "deadline: by eod", "exclamations: !!!"], engine: "rules")
        #expect(fresh.score(message) == expected)
        #expect(Self.scorer.score(message) == expected)
    }

    @Test func badIndicatorFileNamesTheLine() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-prio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("urgent\t35\turgent\nsoon\tlots\turgent\n".utf8).write(to: folder.appendingPathComponent("priority-xx.tsv"))
        #expect(throws: WordlistError.self) { try PriorityScorer.load(directory: folder, language: "xx") }
        do { _ = try PriorityScorer.load(directory: folder, language: "xx") } catch { #expect(error.description.contains("line 2")) }
    }

    // MARK: LLM engine

    func llm(_ server: FakeJSONServer) -> LLMPriorityEngine {
        var config = PriorityConfig()
        config.engine = .llm
        config.baseURL = server.baseURL + "/v1"
        config.apiKeyEnv = "TEST_LLM_KEY"
        config.timeoutSeconds = 5
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return LLMPriorityEngine(config: config, environment: ["TEST_LLM_KEY": "k-1"], fallback: RulesPriorityEngine(scorer: Self.scorer),
                                 logger: logger)
    }

    static func completion(_ content: String) -> String {
        let escaped = String(data: try! JSONEncoder().encode(content), encoding: .utf8)!
        return #"{"choices":[{"index":0,"message":{"role":"assistant","content":\#(escaped)}}]}"#
    }

    @Test func llmAnswerIsUsedWhenStrictlyValid() async throws {
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: Self.completion(#"{"priority":"high","urgencyScore":88,"isUrgent":true,"reason":"outage","urgencyIndicators":["outage"]}"#))
        }
        defer { server.stop() }
        let verdict = await llm(server).score("prod is down", context: "ops channel")
        #expect(verdict == PriorityVerdict(urgencyScore: 88, reason: "outage", urgencyIndicators: ["outage"], engine: "llm"))
        let request = try #require(server.received.first)
        #expect(request.path == "/v1/chat/completions")
        #expect(request.headers["authorization"] == "Bearer k-1")
        let body = try #require(request.json)
        #expect((body["response_format"] as? [String: Any])?["type"] as? String == "json_object")
        let messages = try #require(body["messages"] as? [[String: Any]])
        #expect(messages.map { $0["role"] as? String } == ["system", "user"])
        #expect((messages[1]["content"] as? String)?.contains("Conversation context: ops channel") == true)
    }

    @Test(arguments: [
        ("sure! it's urgent", "not a JSON object"),
        (#"{"priority":"high","urgencyScore":"88","isUrgent":true,"reason":"x","urgencyIndicators":[]}"#, "wrong fields"),
        (#"{"priority":"high","urgencyScore":30,"isUrgent":true,"reason":"x","urgencyIndicators":[]}"#, "inconsistent"),
        (#"{"priority":"low","urgencyScore":140,"isUrgent":false,"reason":"x","urgencyIndicators":[]}"#, "outside 0-100"),
        (#"{"priority":"low","urgencyScore":5,"isUrgent":false,"reason":"x","urgencyIndicators":[],"confidence":1}"#, "unexpected field"),
    ])
    func llmFallsBackToRulesOnAnyBadAnswer(content: String, why: String) async throws {
        let server = try await FakeJSONServer.start { _, _ in .init(body: Self.completion(content)) }
        defer { server.stop() }
        let verdict = await llm(server).score("URGENT: need help ASAP!!!", context: nil)
        #expect(verdict.engine == "rules (llm fallback)")
        #expect(verdict.fallbackReason?.contains(why) == true, "\(verdict.fallbackReason ?? "nil")")
        #expect(verdict.priority == "high", "the rules still judge")
    }

    @Test func llmHTTPFailureFallsBack() async throws {
        let server = try await FakeJSONServer.start { _, _ in .init(status: 500, body: #"{"error":{"message":"boom"}}"#) }
        defer { server.stop() }
        let verdict = await llm(server).score("no rush", context: nil)
        #expect(verdict.engine == "rules (llm fallback)")
        #expect(verdict.fallbackReason?.contains("HTTP 500: boom") == true)
        #expect(verdict.priority == "low")
    }
}
