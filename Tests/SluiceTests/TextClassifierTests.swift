import Foundation
import Logging
import SluiceCore
import SluicePipeline
import SluiceProviders
import SluiceServices
import SluiceTesting
import Testing

/// `text.classifier`: a second opinion on what the wordlists allow, through the moderation wire format, failing
/// closed like the image classifier.
@Suite(.serialized) struct TextClassifierTests {
    static let scores: @Sendable (String) -> [String: Double] = { text in
        if text.contains("where you live") { return ["harassment/threatening": 0.95, "harassment": 0.7, "violence": 0.61] }
        if text.contains("want to be here") { return ["self-harm/intent": 0.62, "self-harm": 0.55] }
        if text.contains("pathetic") { return ["harassment": 0.66] }
        return ["harassment": 0.01]
    }

    func writeQueue(_ root: TemporaryDataRoot, _ lines: [String]) throws {
        try root.writeQueue("chat.jsonl", lines)
    }

    func classify(_ server: FakeModerationServer, attempts: Int = 2) -> (inout PipelineConfig) -> Void {
        { config in
            config.text.classifier.kind = .local
            config.text.classifier.endpoint = server.baseURL
            config.text.classifier.maxAttempts = attempts
            config.text.classifier.timeoutSeconds = 60
        }
    }

    @Test func verdictsFollowThePolicyAndOnlyAllowedTextIsSent() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let moderation = try await FakeModerationServer.start(scores: Self.scores)
        defer { moderation.stop() }
        try writeQueue(root, [
            #"{"id": "m1", "userId": "alice", "text": "see you at the cocktail bar at 5"}"#,
            #"{"id": "m2", "userId": "bob", "text": "i know where you live"}"#,
            #"{"id": "m3", "userId": "carol", "text": "i dont want to be here anymore"}"#,
            #"{"id": "m4", "userId": "dave", "text": "you are pathetic"}"#,
            #"{"id": "m5", "userId": "erin", "text": "what the f.u.c.k"}"#,
        ])
        let store = try await runOnce(root, server: vision, edit: classify(moderation))

        let m1 = try #require(try await store.item("m1"))
        #expect(m1.status == .approved && m1.reason == nil)
        #expect(m1.textVerdict?.classifier?.provider == "local-text")
        #expect(m1.textVerdict?.classifier?.action == nil)
        #expect(m1.textVerdict?.classifier?.scores["harassment"] == 0.01)

        let m2 = try #require(try await store.item("m2"))
        #expect(m2.status == .blocked)
        #expect(m2.reason == "text classifier (local-text): threat 0.95 ≥ block 0.80")
        #expect(m2.textVerdict?.allowed == true, "the wordlists allowed it; the classifier blocked it")
        #expect(m2.textVerdict?.classifier?.categories == ["threat", "harassment", "violence"])
        #expect(m2.textVerdict?.classifier?.scores["threat"] == 0.95)

        let m3 = try #require(try await store.item("m3"))
        #expect(m3.status == .review)
        #expect(m3.reason == "text classifier (local-text): selfHarm 0.62 ≥ review 0.40")

        let m4 = try #require(try await store.item("m4"))
        #expect(m4.status == .approved && m4.reason == nil, "mark only annotates")
        #expect(m4.textVerdict?.classifier?.action == .mark && m4.textVerdict?.classifier?.categories == ["harassment"])

        let m5 = try #require(try await store.item("m5"))
        #expect(m5.status == .blocked && m5.reason == "Content contains prohibited terms: fuck")
        #expect(m5.textVerdict?.classifier == nil)
        #expect(!moderation.texts.contains("what the f.u.c.k"), "text the wordlists block is never sent")
        #expect(Set(moderation.texts) == ["see you at the cocktail bar at 5", "i know where you live", "i dont want to be here anymore", "you are pathetic"])
        let request = try #require(moderation.received.first)
        #expect(request.json?["model"] as? String == "local-text")
        #expect(request.headers["authorization"] == nil)
    }

    /// `text.classifierMayAllow`: strong words not aimed at anyone are let through, marked; aimed abuse and slurs
    /// stay blocked, and without an answer the wordlists' block stands.
    @Test func theClassifierMayLetUnaimedStrongLanguageThrough() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let moderation = try await FakeModerationServer.start(scores: { text in
            text.contains("you") ? ["harassment": 0.97] : ["harassment": 0.1]
        }, failure: { text, _ in text.contains("printer") ? .init(status: 500, body: "{}") : nil })
        defer { moderation.stop() }
        try writeQueue(root, [
            #"{"id": "m1", "userId": "a", "text": "fuck yeah we won"}"#,
            #"{"id": "m2", "userId": "b", "text": "fuck you"}"#,
            #"{"id": "m3", "userId": "c", "text": "this fucking printer"}"#,
            #"{"id": "m4", "userId": "d", "text": "nigger"}"#,
        ])
        let store = try await runOnce(root, server: vision) { config in
            classify(moderation, attempts: 1)(&config)
            config.text.classifier.mayAllow = [.strong, .severe]
        }
        let m1 = try #require(try await store.item("m1"))
        #expect(m1.status == .approved && m1.reason == nil)
        #expect(m1.textVerdict?.allowed == true && m1.textVerdict?.matches.map(\.term) == ["fuck"])
        #expect(m1.textVerdict?.reason == "Content contains strong language, not aimed at anyone (local-text): fuck")
        #expect(m1.textVerdict?.censored == "**** yeah we won")
        let m2 = try #require(try await store.item("m2"))
        #expect(m2.status == .blocked && m2.reason?.hasPrefix("Content contains prohibited terms: fuck") == true, "aimed: the block stands")
        #expect(m2.textVerdict?.classifier?.scores["harassment"] == 0.97)
        let m3 = try #require(try await store.item("m3"))
        #expect(m3.status == .blocked && m3.reason == "Content contains prohibited terms: fucking", "no answer: the block stands")
        #expect(try await store.item("m4")?.status == .blocked)
        #expect(!moderation.texts.contains("nigger"), "a slur is never a question for the classifier")
    }

    @Test func openAIModerationSendsTheKeyAndMapsTheHighestSource() async throws {
        let moderation = try await FakeModerationServer.start { _ in
            ["hate": 0.2, "hate/threatening": 0.7, "harassment/threatening": 0.3, "self-harm/instructions": 0.4, "violence/graphic": 0.9]
        }
        defer { moderation.stop() }
        var config = TextClassifierConfig()
        config.kind = .openAIModeration
        config.endpoint = moderation.baseURL
        let classifier = OpenAIModerationTextClassifier(config: config, environment: ["OPENAI_API_KEY": "sk-test"], logger: quietLogger)
        let scores = try await classifier.classify("some text")
        #expect(scores[.threat] == 0.7 && scores[.hate] == 0.7 && scores[.selfHarm] == 0.4 && scores[.violence] == 0.9)
        #expect(scores[.harassment] == 0 && scores[.sexualMinors] == 0)
        let request = try #require(moderation.received.first)
        #expect(request.path == "/v1/moderations")
        #expect(request.headers["authorization"] == "Bearer sk-test")
        #expect(request.json?["model"] as? String == "omni-moderation-latest")
        #expect(request.json?["input"] as? String == "some text")
        #expect(classifier.name == "openai-moderation")
    }

    @Test(arguments: [
        (500, #"{"error":{"message":"boom"}}"#, "local-text answered HTTP 500"),
        (200, #"{"results":[]}"#, "local-text answered in an unexpected format"),
        (200, #"{"results":[{"category_scores":{"toxicity":0.9}}]}"#, "local-text answered in an unexpected format"),
        (200, "not json", "local-text answered in an unexpected format"),
    ])
    func failuresHoldTheMessageForReview(status: Int, body: String, expected: String) async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let moderation = try await FakeModerationServer.start(scores: Self.scores) { _, _ in .init(status: status, body: body) }
        defer { moderation.stop() }
        try writeQueue(root, [
            #"{"id": "m1", "userId": "alice", "text": "see you at 5"}"#,
            #"{"id": "m2", "userId": "bob", "text": "what the f.u.c.k"}"#,
        ])
        let store = try await runOnce(root, server: vision, edit: classify(moderation, attempts: 1))
        let m1 = try #require(try await store.item("m1"))
        #expect(m1.status == .review, "nothing is approved without the classification")
        let reason = try #require(m1.reason)
        #expect(reason.hasPrefix("text not classified, held for review: \(expected)"), "\(reason)")
        #expect(!reason.contains("boom") && !reason.contains("toxicity") && !reason.contains("not json"), "the provider's own words stay in the log")
        #expect(try await store.item("m2")?.status == .blocked, "the wordlists' block needs no classifier")
        #expect(root.exists("queues/text/done/chat.jsonl"))
    }

    @Test func aRetryableFailureIsRetried() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let moderation = try await FakeModerationServer.start(scores: Self.scores) { _, index in
            index == 0 ? .init(status: 503, body: #"{"error":{"message":"busy"}}"#) : nil
        }
        defer { moderation.stop() }
        try writeQueue(root, [#"{"id": "m1", "userId": "alice", "text": "see you at 5"}"#])
        let store = try await runOnce(root, server: vision, edit: classify(moderation, attempts: 2))
        #expect(try await store.item("m1")?.status == .approved)
        #expect(moderation.received.count == 2)
    }

    @Test func linesJudgedAtOnceAreRecordedInFileOrder() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        // Early lines answer slowest, so a window's answers arrive in reverse order.
        let moderation = try await FakeModerationServer.start(scores: Self.scores) { text, _ in
            guard let n = Int(text.split(separator: " ").last ?? "") else { return nil }
            return .init(body: #"{"results":[{"category_scores":{"harassment":0.\#(n % 10)}}]}"#, delay: Double(40 - n) * 0.002)
        }
        defer { moderation.stop() }
        var lines = (1...40).map { #"{"id": "m\#($0)", "userId": "u\#($0)", "text": "line \#($0)"}"# }
        lines[29] = #"{"id": "m5", "userId": "u5", "text": "line 30"}"#
        try writeQueue(root, lines)
        let store = try await runOnce(root, server: vision, edit: classify(moderation))
        let m5 = try #require(try await store.item("m5"))
        #expect(m5.content?.text == "line 30", "the later line for an id wins, as when lines are judged one by one")
        #expect(try await store.item("m30") == nil)
        for n in [1, 2, 39, 40] {
            #expect(try await store.item("m\(n)")?.textVerdict?.classifier?.scores["harassment"] == Double(n % 10) / 10)
        }
    }

    @Test func reprocessingKeepsOrRedoesTheClassification() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let moderation = try await FakeModerationServer.start(scores: Self.scores)
        defer { moderation.stop() }
        try writeQueue(root, [
            #"{"id": "m2", "userId": "bob", "text": "i know where you live"}"#,
            #"{"id": "m4", "userId": "dave", "text": "you are pathetic"}"#,
        ])
        let store = try await runOnce(root, server: vision, edit: classify(moderation))
        #expect(try await store.item("m4")?.status == .approved)
        let sent = moderation.received.count

        // The filter alone re-run: the stored classification (and its block) stands; nothing is sent.
        var stricter = root.config(endpoint: vision.endpoint, edit: classify(moderation))
        stricter.text.classifier.policy[.harassment] = TextCategoryRule(review: 0.6)
        let services = try await Services.live(config: stricter, environment: [:], logger: quietLogger)
        _ = try await services.reprocessor().run(.init(filter: ItemFilter(kind: .text), stages: ["text"]), progress: { _, _ in })
        #expect(moderation.received.count == sent)
        #expect(try await services.store.item("m2")?.status == .blocked)
        #expect(try await services.store.item("m4")?.status == .approved)

        // The classifier re-run under the stricter policy.
        let summary = try await services.reprocessor().run(.init(filter: ItemFilter(kind: .text), stages: ["classify-text"]), progress: { _, _ in })
        #expect(summary.failures.isEmpty)
        let m4 = try #require(try await services.store.item("m4"))
        #expect(m4.status == .review && m4.reason == "text classifier (local-text): harassment 0.66 ≥ review 0.60")
        #expect(try await services.store.item("m2")?.status == .blocked)

        // The classifier turned off (`none`): re-running the filter alone still keeps its block; every stage re-run
        // judges as configured, without one.
        let off = try await Services.live(config: root.config(endpoint: vision.endpoint), environment: [:], logger: quietLogger)
        _ = try await off.reprocessor().run(.init(filter: ItemFilter(kind: .text), stages: ["text"]), progress: { _, _ in })
        let m2 = try #require(try await off.store.item("m2"))
        #expect(m2.status == .blocked && m2.textVerdict?.classifier?.provider == "local-text", "\(m2.reason ?? "")")
        #expect(try await off.store.item("m4")?.status == .review)
        _ = try await off.reprocessor().run(.init(filter: ItemFilter(kind: .text)), progress: { _, _ in })
        #expect(try await off.store.item("m2")?.status == .approved, "no classifier configured, every stage re-run")
        #expect(try await off.store.item("m2")?.textVerdict?.classifier == nil)
    }

    @Test(arguments: [
        (#""classifier": "perspective""#, #"bad value for config key "text.classifier": "perspective" is not a text classifier; allowed: none, openai-moderation, local"#),
        (#""classifierPolicy": {"threats": {"block": 0.5}}"#, #"unknown config key "text.classifierPolicy.threats""#),
        (#""classifierPolicy": {"threat": {"delete": 0.5}}"#, #"unknown config key "text.classifierPolicy.threat.delete""#),
        (#""classifierPolicy": {"threat": {"block": 1.5}}"#, #"bad value for config key "text.classifierPolicy.threat.block": must be a score in [0, 1], got 1.5"#),
        (#""classifierPolicy": {"hate": {"review": 0.9, "block": 0.5}}"#, #"bad value for config key "text.classifierPolicy.hate": thresholds must not decrease from mark to review to block, got review 0.9, block 0.5"#),
        (#""classifierMayAllow": ["extreme"]"#, #"bad value for config key "text.classifierMayAllow[0]": "extreme" is not a severity; allowed: mild, strong, severe"#),
        (#""classifierMayAllow": ["slur"]"#, #"bad value for config key "text.classifierMayAllow": slur cannot be let through by a classifier"#),
        (#""classifierEndpoint": "ftp://x""#, #"bad value for config key "text.classifierEndpoint": must be an http:// or https:// URL, got "ftp://x""#),
    ])
    func badSettingsNameTheKey(setting: String, expected: String) throws {
        let json = #"{"vision": {"endpoint": "http://127.0.0.1:1"}, "text": {"classifier": "local", \#(setting)}}"#
            .replacingOccurrences(of: #""classifier": "local", "classifier""#, with: #""classifier""#)
        #expect {
            try PipelineConfig.parse(Data(json.utf8), baseDirectory: URL(fileURLWithPath: "/tmp"))
        } throws: { error in
            String(describing: error).hasPrefix(expected) || { print("got: \(error)"); return false }()
        }
    }

    @Test func policyMergesOverTheStandardRules() throws {
        let json = #"{"text": {"classifier": "local", "classifierPolicy": {"harassment": {"block": 0.9}}}}"#
        let config = try PipelineConfig.parse(Data(json.utf8), baseDirectory: URL(fileURLWithPath: "/tmp"))
        #expect(config.text.classifier.policy[.harassment] == TextCategoryRule(block: 0.9))
        #expect(config.text.classifier.policy[.threat] == TextClassifierConfig.standardPolicy[.threat])
        #expect(config.text.classifier.effectiveEndpoint == "http://127.0.0.1:8092/v1")
    }
}
