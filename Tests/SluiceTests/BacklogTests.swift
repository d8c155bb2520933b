#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SluiceCore
import SluiceStore
import SluiceTesting
import Synchronization
import Testing

/// reprocess, ingest, review and reports as operators run them (the real binary on a data root).
@Suite(.serialized) struct BacklogTests {
    static let photos = ["rocket.jpg", "coffee.png", "chelsea.png", "coins.png", "hubble_deep_field.jpg"]
    static let blocked = SafeSearch(adult: .veryLikely, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .veryLikely)
    static let possible = SafeSearch(adult: .possible, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .unlikely)

    /// Under the "new provider" Hubble (1000×872) is blocked and the coins (384×303) go to review, told apart
    /// by the aspect ratio of the JPEG the provider receives.
    static let swapped: @Sendable (FakeVisionServer.Received, Int) -> FakeVisionServer.Reply = { received, _ in
        guard let size = received.image.flatMap(JPEGInspector.dimensions) else { return .safeSearch(cleanResult) }
        let ratio = Double(size.width) / Double(size.height)
        if abs(ratio - 1000.0 / 872.0) < 0.02 { return .safeSearch(blocked) }
        if abs(ratio - 384.0 / 303.0) < 0.02 { return .safeSearch(possible) }
        return .safeSearch(cleanResult)
    }

    func seed(_ root: TemporaryDataRoot, endpoint: String) async throws -> URL {
        for photo in Self.photos {
            try root.drop(TestEnvironment.fixture("images/photos/\(photo)"), user: "u", name: photo)
        }
        let queue = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        try Data("""
        {"id": "t1", "userId": "u", "text": "please frobnicate the widget"}
        {"id": "t2", "userId": "u", "text": "nice cocktail bar"}
        {"id": "t3", "userId": "u", "text": "total sh1t"}
        """.utf8).writeClosingOnExec(to: queue.appendingPathComponent("t.jsonl"))
        let config = try root.writeConfigFile(endpoint: endpoint)
        #expect(try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"]).status == 0)
        return config
    }

    func snapshot(_ root: TemporaryDataRoot) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for path in root.allFiles() where !path.hasSuffix("-wal") && !path.hasSuffix("-shm") {
            files[path] = try Data(contentsOf: root.file(path))
        }
        return files
    }

    @Test func reprocessFlipsExactlyTheExpectedItemsAndTheirFiles() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let config = try await seed(root, endpoint: clean.endpoint)
        let store = try await root.store()
        #expect(try await store.items(kind: .image).allSatisfy { $0.status == .approved })

        // A new provider and an operator wordlist.
        let swapped = try await FakeVisionServer.start(Self.swapped)
        defer { swapped.stop() }
        let words = root.url.appendingPathComponent("house.tsv")
        try Data("frobnicate\tstrong\tother\tword\n".utf8).writeClosingOnExec(to: words)
        let newConfig = try root.writeConfigFile(endpoint: swapped.endpoint, extra: """
        "text": {"wordlistsDirectory": "\(TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path)", "wordlists": ["\(words.path)"]}
        """)
        // An operator's term is not kept off by the built-in allowlist (which has "hello", for "hell"): the operator means it.
        try Data("frobnicate\tstrong\tother\tword\nhello\tmild\tother\tword\n".utf8).writeClosingOnExec(to: words)
        let hello = try await shell(TestEnvironment.sluiceBinary, ["check-text", "hello there", "--json", "--config", newConfig.path])
        #expect(hello.stdout.contains("\"hello\""), "the operator's term is matched: \(hello.stdout)")
        try Data("frobnicate\tstrong\tother\tword\n".utf8).writeClosingOnExec(to: words)
        let before = try snapshot(root)
        let dry = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--dry-run", "--json", "--config", newConfig.path])
        #expect(dry.status == 0, "\(dry.stderr)")
        let dryJSON = try #require(try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any])
        let dryChanges = (dryJSON["changes"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }.sorted()
        #expect(dryChanges == ["t1", "u/coins", "u/hubble_deep_field"])
        #expect(try snapshot(root) == before, "a dry run changes no byte of the store or the files")

        let run = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--json", "--config", newConfig.path])
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(summary["moves"] as? [String: Int] == ["approved → blocked": 2, "approved → review": 1], "\(summary["moves"] ?? "")")
        #expect(((summary["stages"] as? [String: Any])?["classify"] as? [String: Int])?["failed"] == 0)

        #expect(try await store.item("u/hubble_deep_field")?.status == .blocked)
        #expect(!root.exists("approved/u/hubble_deep_field.jpg") && !root.exists("thumbnails/u/hubble_deep_field.jpg"))
        #expect(root.exists("quarantine/u/hubble_deep_field.jpg"))
        #expect(try await store.item("u/coins")?.status == .review)
        #expect(root.exists("review/u/coins.jpg") && !root.exists("approved/u/coins.jpg"))
        #expect(try await store.item("t1")?.status == .blocked)
        #expect(try await store.item("t1")?.reason == "Content contains prohibited terms: frobnicate")
        for id in ["u/rocket", "u/coffee", "u/chelsea"] {
            #expect(try await store.item(id)?.status == .approved)
            #expect(root.exists("approved/\(id).jpg"))
            #expect(try await store.events(of: id).filter { $0.type == "reprocess" }.isEmpty, "\(id) did not change")
        }
        let event = try #require(try await store.events(of: "u/hubble_deep_field").last)
        #expect(event.type == "reprocess" && event.fromStatus == .approved && event.toStatus == .blocked && event.stage == "classify")
        #expect(event.detail?.contains("approved → blocked") == true)

        // Back to the clean provider for the blocked and review items: files follow again.
        #expect(try root.writeConfigFile(endpoint: clean.endpoint) == config)
        let back = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--kind", "image", "--status", "blocked,review",
                                                                  "--config", config.path])
        #expect(back.status == 0, "\(back.stderr)")
        #expect(back.stdout.contains("blocked → approved: 1") && back.stdout.contains("review → approved: 1"), "\(back.stdout)")
        #expect(back.stdout.contains("STAGE") && back.stdout.contains("classify"))
        // The same long-lived handle sees what the other processes wrote.
        for id in ["u/hubble_deep_field", "u/coins"] {
            let item = try await store.item(id)
            let history = (try? await store.events(of: id).map(\.type)) ?? []
            #expect(item?.status == .approved, "\(String(describing: item?.status)) \(item?.reason ?? "") \(history)")
            #expect(root.exists("approved/\(id).jpg") && root.exists("thumbnails/\(id).jpg"))
        }
        #expect(!root.exists("quarantine/u/hubble_deep_field.jpg") && !root.exists("review/u/coins.jpg"))
    }

    @Test func failedReclassificationKeepsTheItem() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        _ = try await seed(root, endpoint: clean.endpoint)
        let broken = try await FakeVisionServer.start { _, _ in .http(status: 500, body: "down") }
        defer { broken.stop() }
        let config = try root.writeConfigFile(endpoint: broken.endpoint)
        let result = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--kind", "image", "--config", config.path])
        #expect(result.status == 0)
        #expect(result.stdout.contains("status moves: none"))
        #expect(result.stdout.contains("re-classification failed, kept as approved"), "\(result.stdout)")
        let store = try await root.store()
        #expect(try await store.items(kind: .image).allSatisfy { $0.status == .approved })
        for photo in Self.photos { #expect(root.exists("approved/u/\((photo as NSString).deletingPathExtension).jpg")) }
    }

    @Test func killedRunResumesWithoutProcessingAnythingTwice() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let sources = TestEnvironment.fixtureFiles("images/photos")
        for round in 0..<5 {
            for (index, source) in sources.enumerated() {
                try root.drop(source, user: "k", name: "p\(round)_\(index).\(source.pathExtension)")
            }
        }
        let config = try root.writeConfigFile(endpoint: clean.endpoint)
        #expect(try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"]).status == 0)
        let total = sources.count * 5

        // Until the kill, answers after the twelfth are held back, so the kill always lands part-way however slowly
        // the test polls; the resumed run's answers all come at once.
        let holding = Mutex(true)
        let slowBlock = try await FakeVisionServer.start { _, index in
            index >= 12 && holding.withLock({ $0 }) ? .delayed(seconds: 30, then: .safeSearch(Self.blocked))
                : .delayed(seconds: 0.1, then: .safeSearch(Self.blocked))
        }
        defer { slowBlock.stop() }
        let blockConfig = try root.writeConfigFile(endpoint: slowBlock.endpoint)
        let process = Process()
        process.executableURL = TestEnvironment.sluiceBinary
        process.arguments = ["reprocess", "--kind", "image", "--concurrency", "2", "--config", blockConfig.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var flipped = 0
        await waitUntil(every: 25) {
            flipped = (try? await root.storeWhenReady()?.items(status: .blocked).count) ?? 0
            return flipped >= 5
        }
        kill(process.processIdentifier, SIGKILL)
        await waitForExit(process)
        holding.withLock { $0 = false }
        #expect(flipped >= 5 && flipped < total, "killed after \(flipped) of \(total)")

        let resumed = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--kind", "image", "--concurrency", "2", "--json",
                                                                     "--config", blockConfig.path])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(resumed.stdout.utf8)) as? [String: Any])
        #expect(summary["resumed"] as? Bool == true)
        #expect((summary["alreadyDone"] as? Int ?? 0) >= 5)
        #expect((summary["alreadyDone"] as? Int ?? 0) + (summary["processed"] as? Int ?? 0) == total)
        let store = try await root.store()
        for item in try await store.items(kind: .image) {
            #expect(item.status == .blocked, "\(item.id)")
            #expect(try await store.events(of: item.id).filter { $0.type == "reprocess" }.count == 1, "\(item.id) processed twice")
            #expect(root.exists(item.original ?? "-"), "\(item.id) kept in quarantine")
        }
        #expect(root.allFiles().filter { $0.hasPrefix("approved/") || $0.hasPrefix("thumbnails/") }.isEmpty)
        // The run finished: the same arguments start a new run.
        let again = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--kind", "image", "--json", "--dry-run", "--config", blockConfig.path])
        #expect((try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])?["resumed"] as? Bool == false)
    }

    @Test func ingestCopiesValidUploadsAndReportsTheRest() async throws {
        let root = try TemporaryDataRoot()
        let source = root.url.appendingPathComponent("old-backlog")
        try FileManager.default.createDirectory(at: source.appendingPathComponent("alice"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: source.appendingPathComponent("bad user"), withIntermediateDirectories: true)
        try FileManager.default.copyClosingOnExec(at: TestEnvironment.fixture("images/photos/rocket.jpg"), to: source.appendingPathComponent("alice/r1.jpg"))
        try FileManager.default.copyClosingOnExec(at: TestEnvironment.fixture("images/photos/coins.png"), to: source.appendingPathComponent("alice/c1.png"))
        try Data("not an image".utf8).writeClosingOnExec(to: source.appendingPathComponent("alice/notes.jpg"))
        try FileManager.default.copyClosingOnExec(at: TestEnvironment.fixture("images/photos/rocket.jpg"), to: source.appendingPathComponent("alice/has space.jpg"))
        try FileManager.default.copyClosingOnExec(at: TestEnvironment.fixture("images/photos/rocket.jpg"), to: source.appendingPathComponent("bad user/x.jpg"))
        try Data("%PDF-1.4".utf8).writeClosingOnExec(to: source.appendingPathComponent("alice/doc.pdf"))
        let before = try FileManager.default.subpathsOfDirectory(atPath: source.path).sorted()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let config = try root.writeConfigFile(endpoint: clean.endpoint)

        let first = try await shell(TestEnvironment.sluiceBinary, ["ingest", source.path, "--json", "--config", config.path])
        #expect(first.status == 0, "\(first.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        #expect(summary["copied"] as? Int == 2)
        let reasons = (summary["rejected"] as? [[String: String]] ?? []).map { "\(($0["path"]! as NSString).lastPathComponent): \($0["reason"]!)" }
        #expect(reasons.count == 4)
        #expect(reasons.contains { $0.hasPrefix("notes.jpg: not an image") })
        #expect(reasons.contains { $0.hasPrefix("has space.jpg: bad name") })
        #expect(reasons.contains { $0.hasPrefix("x.jpg: bad name: user folder \"bad user\"") })
        #expect(reasons.contains { $0.hasPrefix("doc.pdf: PDF files are not accepted") })
        #expect(root.exists("pending/alice/r1.jpg") && root.exists("pending/alice/c1.png"))
        #expect(try FileManager.default.subpathsOfDirectory(atPath: source.path).sorted() == before, "the source is never changed")

        let second = try await shell(TestEnvironment.sluiceBinary, ["ingest", source.path, "--json", "--config", config.path])
        #expect((try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])?["alreadyPending"] as? Int == 2)
        #expect(try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"]).status == 0)
        let third = try await shell(TestEnvironment.sluiceBinary, ["ingest", source.path, "--json", "--config", config.path])
        #expect((try JSONSerialization.jsonObject(with: Data(third.stdout.utf8)) as? [String: Any])?["alreadyIngested"] as? Int == 2)

        let flat = root.url.appendingPathComponent("flat")
        try FileManager.default.createDirectory(at: flat, withIntermediateDirectories: true)
        try FileManager.default.copyClosingOnExec(at: TestEnvironment.fixture("images/photos/grass.png"), to: flat.appendingPathComponent("g.png"))
        let flatRun = try await shell(TestEnvironment.sluiceBinary, ["ingest", flat.path, "--user", "bob", "--config", config.path])
        #expect(flatRun.status == 0 && flatRun.stdout.contains("copied 1"))
        #expect(root.exists("pending/bob/g.png"))
        let badUser = try await shell(TestEnvironment.sluiceBinary, ["ingest", flat.path, "--user", "no way", "--config", config.path])
        #expect(badUser.status != 0 && badUser.stderr.contains("bad name"))
    }

    @Test func reviewDecisionsAreRecordedAndFilesFollow() async throws {
        let root = try TemporaryDataRoot()
        let possible = try await FakeVisionServer.always(Self.possible)
        defer { possible.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "a.jpg")
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "u", name: "b.png")
        let config = try root.writeConfigFile(endpoint: possible.endpoint)
        #expect(try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"]).status == 0)
        let list = try await shell(TestEnvironment.sluiceBinary, ["review", "list", "--config", config.path])
        #expect(list.stdout.contains("u/a") && list.stdout.contains("u/b") && list.stdout.contains("2 in review"))

        let approve = try await shell(TestEnvironment.sluiceBinary, ["review", "approve", "u/a", "--note", "a rocket, fine", "--by", "dana",
                                                                     "--config", config.path])
        #expect(approve.status == 0, "\(approve.stderr)")
        #expect(root.exists("approved/u/a.jpg") && root.exists("thumbnails/u/a.jpg") && !root.exists("review/u/a.jpg"))
        #expect(JPEGInspector.metadataSegments(try read(root.file("approved/u/a.jpg"))).isEmpty)
        let block = try await shell(TestEnvironment.sluiceBinary, ["review", "block", "u/b", "--by", "dana", "--config", config.path])
        #expect(block.status == 0)
        #expect(root.exists("quarantine/u/b.png") && !root.exists("review/u/b.png") && !root.exists("approved/u/b.jpg"))

        let store = try await root.store()
        let a = try #require(try await store.item("u/a"))
        #expect(a.status == .approved && a.decision?.by == "dana" && a.decision?.note == "a rocket, fine")
        let event = try #require(try await store.events(of: "u/a").last)
        #expect(event.type == "review" && event.fromStatus == .review && event.toStatus == .approved && event.detail == "by dana: a rocket, fine")
        #expect(try await store.item("u/b")?.status == .blocked)

        let again = try await shell(TestEnvironment.sluiceBinary, ["review", "approve", "u/a", "--config", config.path])
        #expect(again.status != 0 && again.stderr.contains("u/a is approved, not in review"))
        let show = try await shell(TestEnvironment.sluiceBinary, ["review", "show", "u/a", "--json", "--config", config.path])
        #expect((try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])?["status"] as? String == "approved")
    }

    @Test func reportsListShowsTheItemEachPointsAt() async throws {
        let root = try TemporaryDataRoot()
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let store = try await root.store()
        try await store.recordVerdict(Item(id: "m1", kind: .text, userId: "u", status: .approved))
        try await store.recordReport(Report(reportId: "r1", messageId: "m1", category: "harassment", description: "mean", reporterUserId: "v"))
        try await store.recordReport(Report(reportId: "r2", messageId: "gone", category: "spam", description: nil, reporterUserId: nil))
        let json = try await shell(TestEnvironment.sluiceBinary, ["reports", "list", "--json", "--config", config.path])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(entries.count == 2)
        let r1 = try #require(entries.first { ($0["report"] as? [String: Any])?["reportId"] as? String == "r1" })
        #expect((r1["item"] as? [String: Any])?["status"] as? String == "approved")
        let r2 = try #require(entries.first { ($0["report"] as? [String: Any])?["reportId"] as? String == "r2" })
        #expect(r2["item"] == nil || r2["item"] is NSNull)
        let table = try await shell(TestEnvironment.sluiceBinary, ["reports", "list", "--config", config.path])
        #expect(table.stdout.contains("harassment") && table.stdout.contains("(unknown item)"))
    }
}
