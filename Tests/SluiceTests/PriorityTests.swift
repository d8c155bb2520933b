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
        // The label rule of Tests/Fixtures/priority: a deadline within the hour is high; anything needing an answer or
        // action within a day or two (plans for tonight, a question about tomorrow) medium.
        ("I need this in 10 minutes", "high"),
        ("This is the third time I'm asking, unacceptable", "medium"),
        ("Still waiting for the invoice, any update?", "medium"),
        ("Meeting moved to tonight", "medium"),
        ("lunch tomorrow?", "medium"),
        ("water is pouring through the kitchen ceiling HELP", "high"),
        ("could you sign this off in the next few minutes, the customer is waiting on the line", "high"),
        ("OMG I GOT THE JOB!!!", "low"),
        ("there's a fire drill at 11 today, it's planned, no need to do anything", "low"),
        ("hey, how was the weekend", "low"),
        ("thanks!", "low"),
        ("No rush, whenever you can", "low"),
        ("It's not an emergency, just checking in", "low"),
        ("not urgent but could you look at the slides", "low"),
        ("Take your time, at your convenience", "low"),
        ("there is no emergency, all good", "low"),
        ("ASAP please, no rush though", "low"),
        // Times said in words: the time now and a deadline against it (within the hour is high, later is not).
        ("it's quarter to four and the post office shuts at 4, can you take the parcel", "high"),
        ("its 3:25 and the bank's cut-off is half past, send me the sort code", "high"),
        ("it's quarter past two, the meeting is at 6, can you bring the charger", "medium"),
        ("it's half past nine, no plans till the weekend", "low"),
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
        let negated = Self.scorer.score("there is no emergency")
        #expect(negated.urgencyIndicators == ["negated: emergency"])
        #expect(negated.priority == "low")
        let calm = Self.scorer.score("this is not an emergency")
        #expect(calm.urgencyIndicators == ["hedge: not an emergency"])
        #expect(calm.priority == "low")
    }

    /// The rules engine is deterministic: a scorer loaded anew gives exactly the pinned answer.
    @Test func answersArePinnedAcrossLoads() throws {
        let message = "Server down!!! need a fix by EOD"
        let fresh = try PriorityScorer.load(directory: TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists"), language: "en")
        let expected = PriorityVerdict(urgencyScore: 72, reason: "Urgent: blocking: server down, deadline: eod, exclamations: !!!",
                                       urgencyIndicators: ["blocking: server down", "deadline: eod", "exclamations: !!!"], engine: "rules",
                                       confidence: "low", timeframe: "immediate", category: "work",
                                       recommendedAction: "Respond now: someone is waiting on you.")
        #expect(fresh.score(message) == expected)
        #expect(Self.scorer.score(message) == expected)
    }

    @Test func badIndicatorFileNamesTheLine() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-prio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("urgent\t35\turgent\nsoon\tlots\turgent\n".utf8).writeClosingOnExec(to: folder.appendingPathComponent("priority-xx.tsv"))
        #expect(throws: WordlistError.self) { try PriorityScorer.load(directory: folder, language: "xx") }
        do { _ = try PriorityScorer.load(directory: folder, language: "xx") } catch { #expect(error.description.contains("line 2")) }
    }

    // MARK: LLM engine

    /// The LLM engine against `server`, asking for `model`, with the rules as its fallback.
    static func llm(_ server: FakeJSONServer, model: String = PriorityConfig().model) -> LLMPriorityEngine {
        var config = PriorityConfig()
        config.engine = .llm
        config.baseURL = server.baseURL + "/v1"
        config.model = model
        config.apiKeyEnv = "TEST_LLM_KEY"
        config.timeoutSeconds = 60
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return LLMPriorityEngine(config: config, environment: ["TEST_LLM_KEY": "k-1"], fallback: RulesPriorityEngine(scorer: Self.scorer),
                                 logger: logger)
    }

    /// tune-7.jsonl's accuracy, measured once when it was the held-out heldout-6 (the rules were never tuned on it;
    /// it is the model engine's training data since): a floor, never a target.
    static let heldOutFloor = 0.69

    static func completion(_ content: String) -> String {
        let escaped = String(data: try! JSONEncoder().encode(content), encoding: .utf8)!
        return #"{"choices":[{"index":0,"message":{"role":"assistant","content":\#(escaped)}}]}"#
    }

    @Test func llmAnswerIsUsedWhenStrictlyValid() async throws {
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: Self.completion(#"{"priority":"high","urgencyScore":88,"isUrgent":true,"reason":"outage","urgencyIndicators":["outage"]}"#))
        }
        defer { server.stop() }
        let verdict = await Self.llm(server).score("prod is down", context: "ops channel")
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
        (#"{"priority":"low","urgencyScore":5,"isUrgent":false,"reason":"x","urgencyIndicators":[],"mood":"calm"}"#, "unexpected field"),
        (#"{"priority":"low","urgencyScore":5,"isUrgent":false,"reason":"x","urgencyIndicators":[],"confidence":1}"#, "wrong fields"),
        (#"{"priority":"low","urgencyScore":5,"isUrgent":false,"reason":"x","urgencyIndicators":[],"timeframe":"yesterday"}"#, "is not one of"),
    ])
    func llmFallsBackToRulesOnAnyBadAnswer(content: String, why: String) async throws {
        let server = try await FakeJSONServer.start { _, _ in .init(body: Self.completion(content)) }
        defer { server.stop() }
        let verdict = await Self.llm(server).score("URGENT: need help ASAP!!!", context: nil)
        #expect(verdict.engine == "rules (llm fallback)")
        #expect(verdict.fallbackReason?.contains(why) == true, "\(verdict.fallbackReason ?? "nil")")
        #expect(verdict.priority == "high", "the rules still judge")
    }

    @Test func llmOptionalFieldsAreKeptWhenValid() async throws {
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: Self.completion(#"{"priority":"high","urgencyScore":90,"isUrgent":true,"reason":"flood","urgencyIndicators":["water"],"confidence":"high","timeframe":"immediate","category":"emergency","recommendedAction":"Call now"}"#))
        }
        defer { server.stop() }
        let verdict = await Self.llm(server).score("water coming in", context: nil)
        #expect(verdict.engine == "llm")
        #expect(verdict.confidence == "high" && verdict.timeframe == "immediate" && verdict.category == "emergency")
        #expect(verdict.recommendedAction == "Call now")
    }

    /// Seed 004's optional fields from the rules, and the context: an earlier outage makes "any update??" urgent,
    /// an earlier chat about a present does not.
    @Test func rulesFillTheSeedsOptionalFieldsAndReadTheContext() async {
        let engine = RulesPriorityEngine(scorer: Self.scorer)
        let outage = await engine.score("any update??", context: "the server is down again")
        #expect(outage.priority == "high")
        #expect(outage.timeframe == "immediate")
        #expect(outage.urgencyIndicators.contains("follow-up on an urgent earlier message"))
        let gift = await engine.score("any update??", context: "thinking of getting mum a cookbook for her birthday")
        #expect(gift.priority != "high")
        let flood = await engine.score("water is pouring through the kitchen ceiling HELP", context: nil)
        #expect(flood.category == "emergency" && flood.timeframe == "immediate")
        #expect(flood.recommendedAction?.contains("emergency services") == true)
        #expect(["high", "medium", "low"].contains(flood.confidence ?? ""))
        let chat = await engine.score("how was the holiday? 😂", context: nil)
        #expect(chat.priority == "low" && chat.timeframe == "none")
        let request = await engine.score("can you send me the figures by tomorrow?", context: nil)
        #expect(request.priority == "medium" && request.timeframe == "soon")
    }

    /// The labelled sets (Tests/Fixtures/priority): the figures README quotes may not get worse. The held-out file
    /// is never used for tuning; this only keeps a later change from losing what it measured.
    @Test func labelledSetsKeepTheirMeasuredAccuracy() async throws {
        let engine = RulesPriorityEngine(scorer: Self.scorer)
        for (file, floor) in [("tune", 0.94), ("tune-2", 0.94), ("tune-3", 0.92), ("tune-4", 0.91), ("tune-5", 0.97), ("tune-6", 0.94), ("tune-7", Self.heldOutFloor),
                             ("tune-8", 0.72), ("tune-9", 0.75), ("tune-10", 0.56), ("tune-11", 0.63),
                             ("tune-12", 0.67), ("tune-13", 0.71), ("tune-14", 0.62), ("tune-15", 0.66), ("tune-16", 0.70), ("tune-17", 0.74),
                             ("tune-18", 0.69), ("tune-19", 0.67),
                             ("tune-20", 0.68), ("tune-21", 0.61), ("tune-22", 0.68), ("tune-23", 0.74),
                             ("tune-24", 0.67), ("tune-25", 0.68), ("tune-26", 0.72), ("tune-27", 0.69), ("tune-28", 0.68), ("tune-29", 0.72), ("heldout-25", 0.68), ("heldout-26", 0.68)] {
            let lines = try PriorityModelTests.lines(PriorityModelTests.fixtures.appendingPathComponent("\(file).jsonl"),
                                                     as: PriorityModelTests.Labelled.self)
            let (right, swaps) = await PriorityModelTests.tally(lines) { await engine.score($0.text, context: $0.context).priority }
            let accuracy = Double(right) / Double(lines.count)
            #expect(accuracy >= floor, "\(file): \(right)/\(lines.count)")
            if file == "tune" || file == "tune-2" { #expect(swaps == 0, "\(file): \(swaps) high↔low swaps") }
            // The files the rules were tuned on (tune-7 … tune-29 never were: they are only the model engine's training data).
            if ["tune", "tune-2", "tune-3", "tune-4", "tune-5", "tune-6"].contains(file) { #expect(swaps <= 2, "\(file): \(swaps) high↔low swaps") }
        }
    }

    @Test func llmHTTPFailureFallsBack() async throws {
        let server = try await FakeJSONServer.start { _, _ in .init(status: 500, body: #"{"error":{"message":"boom"}}"#) }
        defer { server.stop() }
        let verdict = await Self.llm(server).score("no rush", context: nil)
        #expect(verdict.engine == "rules (llm fallback)")
        #expect(verdict.fallbackReason?.contains("HTTP 500: boom") == true)
        #expect(verdict.priority == "low")
    }

    // MARK: Deadlines counted from the send time

    /// 2026-11-25 at `hour`:`minute` in New York (UTC−5 in November).
    static func sentInNewYork(_ hour: Int, _ minute: Int) -> Date {
        Date(timeIntervalSince1970: 1_795_564_800 + Double((hour + 5) * 3600 + minute * 60))
    }

    static let newYork = TimeZone(identifier: "America/New_York")!

    /// A deadline said as a time of day, with no time in the message, counts from when it was sent (read in
    /// priority.timeZone): within the hour it is urgent, as "in 10 minutes" is; "is" never makes a deadline.
    @Test(arguments: [
        ("can you call the bank by 5pm", 16, 50, 10),
        ("pls send the invoice before 5", 16, 50, 10),
        ("meeting at 17:00, bring the slides", 16, 20, 40),
        ("bring the cake round by half past five", 17, 10, 20),
        ("lunch at noon?", 11, 30, 30),
        ("can you call the bank by 5pm", 12, 0, nil),
        ("can you call the bank by 4pm", 16, 50, nil),
        ("the score is 5", 16, 50, nil),
        ("no its 4:30 here, we need it by 5", 16, 50, nil),
        ("need the keys back by 5 today", 16, 50, 10),
        // Counts, not times; another day; a negated deadline.
        ("we're at 5 people already", 16, 30, nil),
        ("they won by 2 goals", 13, 15, nil),
        ("sales are up by 10 percent", 9, 30, nil),
        ("bake at 350 for an hour", 15, 20, nil),
        ("net zero by 2030", 20, 0, nil),
        ("can we meet tomorrow at 5pm?", 16, 30, nil),
        ("inspection on the 3rd of nov at 2pm", 13, 40, nil),
        ("we don't need it by 5pm anymore", 16, 30, nil),
    ] as [(String, Int, Int, Int?)])
    func aDeadlineSaidAsATimeOfDayCountsFromWhenTheMessageWasSent(text: String, hour: Int, minute: Int, ahead: Int?) async throws {
        let engine = RulesPriorityEngine(scorer: Self.scorer, timeZone: Self.newYork)
        let verdict = await engine.score(text, context: nil, sentAt: Self.sentInNewYork(hour, minute))
        let counted = verdict.urgencyIndicators.filter { $0.hasSuffix(" min after it was sent") }
        if let ahead {
            #expect(counted.count == 1 && counted[0].hasSuffix(", \(ahead) min after it was sent"), "\(verdict.urgencyIndicators)")
            #expect(verdict.priority == "high" && verdict.timeframe == "immediate", "\(verdict)")
        } else {
            #expect(counted.isEmpty, "\(verdict.urgencyIndicators)")
        }
        // Without a send time only the words count.
        let alone = await engine.score(text, context: nil)
        #expect(!alone.urgencyIndicators.contains { $0.hasSuffix(" min after it was sent") })
        if ahead != nil { #expect(alone.priority != "high", "\(text) is high from its words alone: the case shows nothing") }
    }

    /// A message that says the time itself is read by that time, not the send time.
    @Test func aTimeTheMessageStatesWinsOverTheSendTime() async {
        let engine = RulesPriorityEngine(scorer: Self.scorer, timeZone: Self.newYork)
        let verdict = await engine.score("its 3:15, need it by 4", context: nil, sentAt: Self.sentInNewYork(9, 0))
        #expect(verdict.urgencyIndicators.contains("deadline: by 4, 45 min from now"), "\(verdict.urgencyIndicators)")
        #expect(!verdict.urgencyIndicators.contains { $0.hasSuffix(" min after it was sent") })
    }

    /// The LLM engine is told when the message was sent, in the configured zone; without a send time the request
    /// is exactly as before (recorded answers keep matching).
    @Test func theLLMEngineIsToldWhenTheMessageWasSent() async throws {
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: Self.completion(#"{"priority":"high","urgencyScore":80,"isUrgent":true,"reason":"due soon","urgencyIndicators":[]}"#))
        }
        defer { server.stop() }
        var config = PriorityConfig()
        config.baseURL = server.baseURL + "/v1"
        config.apiKeyEnv = "TEST_LLM_KEY"
        config.timeZone = "America/New_York"
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let engine = LLMPriorityEngine(config: config, environment: ["TEST_LLM_KEY": "k-1"], fallback: RulesPriorityEngine(scorer: Self.scorer),
                                       logger: logger)
        _ = await engine.score("call the bank by 5pm", context: "ops", sentAt: Self.sentInNewYork(16, 5))
        _ = await engine.score("call the bank by 5pm", context: "ops")
        let users = server.received.compactMap { ($0.json?["messages"] as? [[String: Any]])?.last?["content"] as? String }
        #expect(users == ["Sent at: 16:05 (local time)\n\nConversation context: ops\n\nMessage: call the bank by 5pm",
                          "Conversation context: ops\n\nMessage: call the bank by 5pm"])
    }
}
