import Foundation
import SluiceCore
import SluicePipeline
import SluiceServices
import SluiceStore
import SluiceTesting
import Testing

/// Captions and priority as stages of the daemon: what lands in the store, and what is never sent out.
@Suite(.serialized) struct AIStagesPipelineTests {
    static let captionReply = #"{"choices":[{"message":{"content":"A rocket."}}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}"#

    @Test func onlyApprovedImagesAreCaptioned() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let blocking = try await FakeVisionServer.always(SafeSearch(adult: .veryLikely, spoof: .unlikely, medical: .unlikely,
                                                                    violence: .unlikely, racy: .veryLikely))
        defer { blocking.stop() }
        let captions = try await FakeJSONServer.start { _, _ in .init(body: Self.captionReply) }
        defer { captions.stop() }

        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "ok.jpg")
        let store = try await runOnce(root, server: vision) { config in
            config.caption.provider = .openAICompatible
            config.caption.baseURL = captions.baseURL + "/v1"
            config.caption.model = "llava"
        }
        let item = try #require(try await store.item("u/ok"))
        #expect(item.status == .approved)
        #expect(item.caption?.caption?.caption == "A rocket.")
        #expect(item.caption?.caption?.provider == "openai-compatible" && item.caption?.caption?.model == "llava")
        #expect(item.caption?.caption?.usage.totalTokens == 13)
        #expect((item.caption?.caption?.processingTimeMs ?? -1) >= 0)
        #expect(captions.received.count == 1)

        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "u", name: "bad.png")
        let second = try await runOnce(root, server: blocking) { config in
            config.caption.provider = .openAICompatible
            config.caption.baseURL = captions.baseURL + "/v1"
        }
        #expect(try await second.item("u/bad")?.status == .blocked)
        #expect(try await second.item("u/bad")?.caption == nil)
        #expect(captions.received.count == 1, "blocked content is never sent to a caption provider")
    }

    @Test func skippedAndFailedCaptionsAreRecordedWithoutChangingTheVerdict() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "a.jpg")
        let store = try await runOnce(root, server: vision)
        #expect(try await store.item("u/a")?.caption == CaptionOutcome(skipped: "caption skipped: caption.provider is \"none\""))

        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "b.jpg")
        let keyless = try await runOnce(root, server: vision) { $0.caption.provider = .anthropic }
        #expect(try await keyless.item("u/b")?.caption?.skipped == "caption skipped: no API key: ANTHROPIC_API_KEY is not set")

        let failing = try await FakeJSONServer.start { _, _ in .init(status: 500, body: #"{"error":{"message":"gpu on fire"}}"#) }
        defer { failing.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "c.jpg")
        let failed = try await runOnce(root, server: vision) { config in
            config.caption.provider = .openAICompatible
            config.caption.baseURL = failing.baseURL + "/v1"
            config.caption.maxAttempts = 2
            config.caption.initialBackoffSeconds = 0.01
            config.caption.maxBackoffSeconds = 0.02
        }
        let item = try #require(try await failed.item("u/c"))
        #expect(item.status == .approved)
        #expect(item.caption?.error?.contains("HTTP 500: gpu on fire") == true, "\(String(describing: item.caption))")
        #expect(root.exists("approved/u/c.jpg"))
    }

    @Test func textItemsCarryPriority() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        try root.writeQueue("p.jsonl", [
            #"{"id": "p1", "userId": "u", "text": "URGENT: the server is down, need help ASAP!!!"}"#,
            #"{"id": "p2", "userId": "u", "text": "no rush, whenever you can"}"#,
            #"{"id": "p3", "userId": "u", "text": "fix this sh1t by 5pm today, it's urgent"}"#,
        ])
        let store = try await runOnce(root, server: vision)
        let p1 = try #require(try await store.item("p1")?.priority)
        #expect(p1.priority == "high" && p1.isUrgent && p1.engine == "rules")
        #expect(p1.urgencyIndicators.contains("urgent: asap"))
        #expect(try await store.item("p2")?.priority?.priority == "low")
        let p3 = try #require(try await store.item("p3"))
        #expect(p3.status == .blocked, "priority is scored for blocked messages too")
        #expect(p3.priority?.priority == "high")
    }

    /// A queue line's sentAt is when its deadline counts from ("by 5pm" sent at 16:50 in priority.timeZone is due in
    /// 10 minutes); without sentAt only the words count, so reprocessing judges the same.
    @Test func aQueuedMessageIsScoredAsOfItsSentAt() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        try root.writeQueue("d.jsonl", [
            #"{"id": "d1", "userId": "u", "text": "can you call the bank by 5pm", "sentAt": "2026-11-25T21:50:00Z"}"#,
            #"{"id": "d2", "userId": "u", "text": "can you call the bank by 5pm", "sentAt": "2026-11-25T17:00:00Z"}"#,
            #"{"id": "d3", "userId": "u", "text": "can you call the bank by 5pm"}"#,
        ])
        let store = try await runOnce(root, server: vision) { config in config.priority.timeZone = "America/New_York" }
        let d1 = try #require(try await store.item("d1")?.priority)
        #expect(d1.priority == "high" && d1.urgencyIndicators.contains("deadline: by 5pm, 10 min after it was sent"), "\(d1)")
        #expect(try await store.item("d2")?.priority?.priority == "medium")
        #expect(try await store.item("d3")?.priority?.priority == "medium")
        // Re-judging reads the stored sentAt: the verdicts stand.
        let config = root.config(endpoint: vision.endpoint) { config in config.priority.timeZone = "America/New_York" }
        let services = try await Services.live(config: config, environment: [:], logger: quietLogger)
        let summary = try await services.reprocessor().run(.init(filter: ItemFilter(kind: .text)), progress: { _, _ in })
        #expect(summary.failures.isEmpty)
        #expect(try await services.store.item("d1")?.priority == d1)
        #expect(try await services.store.item("d3")?.priority?.priority == "medium")
    }

    @Test func priorityAndCaptionCLI() async throws {
        let root = try TemporaryDataRoot()
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let result = try await shell(TestEnvironment.sluiceBinary, ["priority", "call an ambulance now!!", "--json", "--config", config.path])
        #expect(result.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["priority"] as? String == "high")
        #expect(object["isUrgent"] as? Bool == true)
        #expect((object["urgencyIndicators"] as? [String])?.contains("emergency: call an ambulance") == true)
        // --sent-at: a date-time with a zone, or "now"; anything else is refused, naming it.
        for (value, shown) in [("yesterday", "--sent-at \"yesterday\" is not an ISO 8601 date-time"),
                               ("2026-11-25T16:50:00", "--sent-at \"2026-11-25T16:50:00\" is not an ISO 8601 date-time")] {
            let refused = try await shell(TestEnvironment.sluiceBinary, ["priority", "x", "--sent-at", value, "--config", config.path])
            #expect(refused.status == 64 && refused.stderr.contains(shown), "\(refused.stderr)")
        }
        let withLabelled = try await shell(TestEnvironment.sluiceBinary, ["priority", "--labelled", config.path, "--sent-at", "now", "--config", config.path])
        #expect(withLabelled.status == 64 && withLabelled.stderr.contains("--sent-at goes with a message, not with --labelled"))
        let sent = try await shell(TestEnvironment.sluiceBinary, ["priority", "call the bank by 5pm pls", "--sent-at", "2026-11-25T16:50:00Z",
                                                                  "--json", "--config", config.path])
        #expect(sent.status == 0, "\(sent.stderr)")
        for key in ["priority", "urgencyScore", "isUrgent", "reason", "urgencyIndicators", "confidence", "timeframe", "category",
                    "recommendedAction"] { #expect(object[key] != nil, "\(key)") }
        #expect(object["category"] as? String == "health")

        let off = try await shell(TestEnvironment.sluiceBinary, ["caption", TestEnvironment.fixture("images/photos/rocket.jpg").path,
                                                           "--config", config.path])
        #expect(off.status != 0)
        #expect(off.stderr.contains("captioning is off: caption.provider is \"none\""))
    }

    @Test func captionCLIPrintsTheSeedFields() async throws {
        let root = try TemporaryDataRoot()
        let captions = try await FakeJSONServer.start { _, _ in .init(body: Self.captionReply) }
        defer { captions.stop() }
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1", extra: """
        "caption": {"provider": "openai-compatible", "baseURL": "\(captions.baseURL)/v1", "model": "llava"}
        """)
        let result = try await shell(TestEnvironment.sluiceBinary, ["caption", TestEnvironment.fixture("images/photos/coffee.png").path,
                                                              "--json", "--config", config.path])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["caption"] as? String == "A rocket.")
        #expect(object["provider"] as? String == "openai-compatible" && object["model"] as? String == "llava")
        #expect((object["usage"] as? [String: Any])?["totalTokens"] as? Int == 13)
        #expect(object["processingTime"] is Int)
        let sent = try #require(captions.received.first?.json)
        let parts = try #require(((sent["messages"] as? [[String: Any]])?.first)?["content"] as? [[String: Any]])
        let url = try #require((parts.last?["image_url"] as? [String: Any])?["url"] as? String)
        #expect(url.hasPrefix("data:image/jpeg;base64,"), "PNG input is sent as the pipeline's JPEG")
    }
}
