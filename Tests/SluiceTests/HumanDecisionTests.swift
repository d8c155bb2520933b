import Foundation
import SluiceCore
import SluiceStore
import SluiceTesting
import Testing

/// A person's decision is final: a later `sluice reprocess` with a provider that disagrees neither publishes a
/// blocked item nor withdraws an approved one; with `--include-human-decisions` a disagreement goes to review,
/// never straight to approved.
@Suite(.serialized) struct HumanDecisionTests {
    static let possible = SafeSearch(adult: .possible, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .unlikely)
    static let explicit = SafeSearch(adult: .veryLikely, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .veryLikely)

    /// u/blocked and u/approved decided by dana after the provider held both for review.
    func decided(_ root: TemporaryDataRoot) async throws -> URL {
        let review = try await FakeVisionServer.always(Self.possible)
        defer { review.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "blocked.jpg")
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "u", name: "approved.png")
        let config = try root.writeConfigFile(endpoint: review.endpoint)
        #expect(try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"]).status == 0)
        let block = try await shell(TestEnvironment.sluiceBinary, ["review", "block", "u/blocked", "--by", "dana", "--note", "not for us",
                                                                   "--config", config.path])
        #expect(block.status == 0, "\(block.stderr)")
        let approve = try await shell(TestEnvironment.sluiceBinary, ["review", "approve", "u/approved", "--by", "dana", "--config", config.path])
        #expect(approve.status == 0, "\(approve.stderr)")
        return config
    }

    func summary(_ output: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
    }

    @Test func reprocessKeepsWhatAPersonDecided() async throws {
        let root = try TemporaryDataRoot()
        _ = try await decided(root)
        let store = try await root.store()
        #expect(try await store.item("u/blocked")?.decision?.decision == .blocked)
        #expect(try await store.item("u/approved")?.decision?.decision == .approved)

        // A provider that says everything is safe must not publish the blocked item.
        let safe = try await FakeVisionServer.always(cleanResult)
        defer { safe.stop() }
        let safeConfig = try root.writeConfigFile(endpoint: safe.endpoint)
        let run = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--json", "--config", safeConfig.path])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try summary(run.stdout)
        #expect(json["keptByHumanDecision"] as? Int == 2)
        #expect((json["moves"] as? [String: Int])?.isEmpty == true)
        #expect(safe.received.isEmpty, "decided items are not even sent to the provider")
        let blocked = try #require(try await store.item("u/blocked"))
        #expect(blocked.status == .blocked && blocked.reason == "blocked by dana: not for us")
        #expect(!root.exists("approved/u/blocked.jpg") && !root.exists("thumbnails/u/blocked.jpg"))
        #expect(root.exists("quarantine/u/blocked.jpg"))

        // A provider that blocks everything must not withdraw the approved one.
        let strict = try await FakeVisionServer.always(Self.explicit)
        defer { strict.stop() }
        let strictConfig = try root.writeConfigFile(endpoint: strict.endpoint)
        let table = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--config", strictConfig.path])
        #expect(table.stdout.contains("kept (human decision): 2") && table.stdout.contains("status moves: none"), "\(table.stdout)")
        let approved = try #require(try await store.item("u/approved"))
        #expect(approved.status == .approved && approved.reason == "approved by dana")
        #expect(root.exists("approved/u/approved.jpg") && root.exists("thumbnails/u/approved.jpg"))
        #expect(try await store.events(of: "u/approved").filter { $0.type == "reprocess" }.isEmpty)
    }

    @Test func includingHumanDecisionsSendsDisagreementsToReview() async throws {
        let root = try TemporaryDataRoot()
        _ = try await decided(root)
        let safe = try await FakeVisionServer.always(cleanResult)
        defer { safe.stop() }
        let safeConfig = try root.writeConfigFile(endpoint: safe.endpoint)
        let run = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--include-human-decisions", "--json", "--config", safeConfig.path])
        #expect(run.status == 0, "\(run.stderr)")
        let json = try summary(run.stdout)
        // The person approved u/approved and the provider agrees: unchanged. The person blocked u/blocked and the
        // provider says safe: review, never approved.
        #expect(json["moves"] as? [String: Int] == ["blocked → review": 1], "\(json["moves"] ?? "")")
        let store = try await root.store()
        let disputed = try #require(try await store.item("u/blocked"))
        #expect(disputed.status == .review)
        #expect(disputed.reason?.contains("disagrees with the human decision blocked by dana: not for us") == true, "\(disputed.reason ?? "")")
        #expect(!root.exists("approved/u/blocked.jpg"), "a disputed item is never published")
        #expect(root.exists("review/u/blocked.jpg") && !root.exists("quarantine/u/blocked.jpg"))
        #expect(try await store.item("u/approved")?.status == .approved)

        let strict = try await FakeVisionServer.always(Self.explicit)
        defer { strict.stop() }
        let strictConfig = try root.writeConfigFile(endpoint: strict.endpoint)
        let again = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--kind", "image", "--status", "approved",
                                                                   "--include-human-decisions", "--json", "--config", strictConfig.path])
        #expect(try summary(again.stdout)["moves"] as? [String: Int] == ["approved → review": 1])
        #expect(try await store.item("u/approved")?.status == .review)
        #expect(!root.exists("approved/u/approved.jpg") && root.exists("review/u/approved.jpg"))
    }

    @Test func textDecisionsStandThroughReprocess() async throws {
        let root = try TemporaryDataRoot()
        let queue = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        try Data(#"{"id": "t1", "userId": "u", "text": "please frobnicate the widget"}"#.utf8).writeClosingOnExec(to: queue.appendingPathComponent("a.jsonl"))
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        #expect(try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"]).status == 0)
        let store = try await root.store()
        // An item a person has to decide (as reports or appeals will put it), approved by dana.
        var item = try #require(try await store.item("t1"))
        item.status = .review
        try await store.recordVerdict(item, stage: "test")
        let approve = try await shell(TestEnvironment.sluiceBinary, ["review", "approve", "t1", "--by", "dana", "--config", config.path])
        #expect(approve.status == 0, "\(approve.stderr)")

        let words = root.url.appendingPathComponent("house.tsv")
        try Data("frobnicate\tstrong\tother\tword\n".utf8).writeClosingOnExec(to: words)
        let strict = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1", extra: """
        "text": {"wordlistsDirectory": "\(TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path)", "wordlists": ["\(words.path)"]}
        """)
        let kept = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--json", "--config", strict.path])
        #expect(try summary(kept.stdout)["keptByHumanDecision"] as? Int == 1)
        #expect(try await store.item("t1")?.status == .approved)
        let included = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--include-human-decisions", "--json", "--config", strict.path])
        #expect(try summary(included.stdout)["moves"] as? [String: Int] == ["approved → review": 1], "\(included.stdout)")
        #expect(try await store.item("t1")?.status == .review)
    }
}
