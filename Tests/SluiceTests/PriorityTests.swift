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

    @Test func sameInputSameAnswer() {
        let message = "Server down!!! need a fix by EOD"
        #expect(Self.scorer.score(message) == Self.scorer.score(message))
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

@Suite struct CircuitBreakerTests {
    let policy = CircuitBreaker.Policy(failureThreshold: 3, openSeconds: 10)

    @Test func opensAfterConsecutiveFailuresAndProbesAfterTheWait() {
        var breaker = CircuitBreaker(policy: policy)
        #expect(breaker.admit(now: 0) == .allowed)
        breaker.recordFailure(now: 0)
        breaker.recordFailure(now: 1)
        #expect(breaker.state == .closed(consecutiveFailures: 2))
        breaker.recordSuccess()
        #expect(breaker.state == .closed(consecutiveFailures: 0), "a success resets the count")
        for second in 2...4 { breaker.recordFailure(now: Double(second)) }
        #expect(breaker.state == .open(until: 14))
        #expect(breaker.admit(now: 10) == .rejected(retryInSeconds: 4))
        #expect(breaker.admit(now: 14) == .probe)
        #expect(breaker.state.name == "half-open")
        #expect(breaker.admit(now: 14.5) == .rejected(retryInSeconds: 0), "only one probe at a time")
        breaker.recordSuccess()
        #expect(breaker.state == .closed(consecutiveFailures: 0))
    }

    @Test func failedProbeReopens() {
        var breaker = CircuitBreaker(policy: policy)
        for _ in 0..<3 { breaker.recordFailure(now: 0) }
        #expect(breaker.admit(now: 10) == .probe)
        breaker.recordFailure(now: 10)
        #expect(breaker.state == .open(until: 20))
        #expect(breaker.admit(now: 19) == .rejected(retryInSeconds: 1))
    }

    @Test func neutralOutcomeFreesTheProbeSlot() {
        var breaker = CircuitBreaker(policy: policy)
        for _ in 0..<3 { breaker.recordFailure(now: 0) }
        #expect(breaker.admit(now: 10) == .probe)
        breaker.recordNeutral()
        #expect(breaker.admit(now: 10) == .probe)
    }

    @Test func openCircuitFailsFastWithoutCallingTheProvider() async throws {
        let server = try await FakeJSONServer.start { _, _ in .init(status: 503, body: #"{"error":{"message":"down"}}"#) }
        defer { server.stop() }
        var vision = VisionConfig()
        vision.provider = .openAIModeration
        vision.endpoint = server.baseURL + "/v1"
        vision.apiKeyEnv = nil
        vision.maxAttempts = 1
        vision.breakerFailures = 2
        vision.breakerOpenSeconds = 60
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let provider = OpenAIModerationProvider(config: vision, environment: [:], logger: logger)
        for _ in 0..<2 { _ = try? await provider.classify(Data([0xFF, 0xD8, 0xFF])) }
        #expect(server.received.count == 2)
        do {
            _ = try await provider.classify(Data([0xFF, 0xD8, 0xFF]))
            Issue.record("no error")
        } catch {
            #expect(error.kind == .circuitOpen)
            #expect(error.description.contains("circuit is open"))
        }
        #expect(server.received.count == 2, "an open circuit sends nothing")
        #expect(await provider.caller.breaker.state.name == "open")
    }
}

@Suite struct OpenAIModerationTests {
    @Test func requestShapeAndMapping() async throws {
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: #"{"id":"modr-1","model":"omni-moderation-latest","results":[{"flagged":true,"categories":{"sexual":true},"category_scores":{"sexual":0.92,"violence":0.2,"violence/graphic":0.55,"self-harm":0.01,"harassment":0.0},"category_applied_input_types":{"sexual":["image"]}}]}"#)
        }
        defer { server.stop() }
        var vision = VisionConfig()
        vision.provider = .openAIModeration
        vision.endpoint = server.baseURL + "/v1"
        vision.apiKeyEnv = "OPENAI_TEST_KEY"
        let provider = OpenAIModerationProvider(config: vision, environment: ["OPENAI_TEST_KEY": "sk-9"], logger: Logger(label: "test"))
        let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
        let result = try await provider.classify(jpeg)
        #expect(result == SafeSearch(adult: .veryLikely, spoof: .unknown, medical: .veryUnlikely, violence: .likely, racy: .veryLikely))
        let request = try #require(server.received.first)
        #expect(request.path == "/v1/moderations")
        #expect(request.headers["authorization"] == "Bearer sk-9")
        let body = try #require(request.json)
        #expect(body["model"] as? String == "omni-moderation-latest")
        let input = try #require((body["input"] as? [[String: Any]])?.first)
        #expect(input["type"] as? String == "image_url")
        let url = try #require((input["image_url"] as? [String: Any])?["url"] as? String)
        #expect(url.hasPrefix("data:image/jpeg;base64,"))
        #expect(Data(base64Encoded: String(url.dropFirst(23))) == jpeg)
    }

    @Test(arguments: [(0.0, Likelihood.veryUnlikely), (0.099, .veryUnlikely), (0.1, .unlikely), (0.3, .possible), (0.5, .likely),
                      (0.79, .likely), (0.8, .veryLikely), (1.0, .veryLikely)])
    func cutPoints(score: Double, expected: Likelihood) {
        #expect(OpenAIModerationProvider.likelihood(score) == expected)
    }
}

@Suite struct ProviderMetricsTests {
    @Test func circuitStateAndCallsAreVisibleInMetrics() async throws {
        let metrics = TestMetrics()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let caller = ResilientCaller(provider: "fake", retry: RetryState.Policy(maxAttempts: 2, initialBackoff: 0, maxBackoff: 0),
                                     breaker: CircuitBreaker.Policy(failureThreshold: 2, openSeconds: 60), maxInFlight: 1,
                                     logger: logger, metrics: metrics)
        for _ in 0..<3 {
            _ = try? await caller.call { () async throws(ProviderError) -> Int in
                throw ProviderError(kind: .http, message: "HTTP 503", status: 503)
            }
        }
        let gauge = try metrics.expectGauge("sluice_provider_circuit_state", [("provider", "fake")])
        #expect(gauge.values == [0, 2], "closed, then open")
        #expect(try metrics.expectCounter("sluice_provider_calls_total", [("provider", "fake"), ("outcome", "failure")]).totalValue == 2)
        #expect(try metrics.expectCounter("sluice_provider_calls_total", [("provider", "fake"), ("outcome", "rejected")]).totalValue == 1)
        #expect(try metrics.expectCounter("sluice_provider_retries_total", [("provider", "fake")]).totalValue == 2)
    }
}
