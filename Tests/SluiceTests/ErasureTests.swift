import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SluiceAPI
import SluiceCore
import SluiceServices
import SluiceTesting
import Testing

/// Deletion on request, as the files on disk and the store show it: every file of an item or a user goes, the
/// rows' content goes, a tombstone (who, when, hash) stays; only backends may erase.
@Suite(.serialized) struct ErasureTests {
    static let blocking = SafeSearch(adult: .veryLikely, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .veryLikely)

    /// frank: an approved image (+ thumbnail), a blocked one (quarantine), a pending upload and a text message;
    /// grace: one approved image that must survive.
    static func seed(_ root: TemporaryDataRoot) async throws -> any StatusStore {
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let blocked = try await FakeVisionServer.always(blocking)
        defer { blocked.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "frank", name: "ok.jpg")
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "grace", name: "keep.jpg")
        let queue = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        try Data(#"""
            {"id": "m-1", "userId": "frank", "text": "see you at noon"}
            {"id": "g-1", "userId": "grace", "recipientId": "frank", "text": "noon works"}
            """#.utf8).writeClosingOnExec(to: queue.appendingPathComponent("q.jsonl"))
        _ = try await runOnce(root, server: clean)
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "frank", name: "bad.png")
        let store = try await runOnce(root, server: blocked)
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "frank", name: "waiting.png")
        #expect(try await store.item("m-1")?.userId == "frank")
        return store
    }

    /// Runs the daemon once over the root's text queue with a text classifier whose answers wait at a gate, erases
    /// `user` once `judging` says the lines the test needs are at the classifier, then opens the gate and waits for the
    /// daemon. Returns the store and whether `judging` came true before the erasure.
    static func eraseWhileJudging(_ root: TemporaryDataRoot, user: String,
                                  judging: @escaping @Sendable (FakeModerationServer) -> Bool) async throws -> (store: any StatusStore, judged: Bool) {
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let gate = FakeVisionServer.Gate()
        let moderation = try await FakeModerationServer.start(scores: { _ in [:] }, held: { _ in await gate.wait() })
        defer { moderation.stop() }
        let config = root.config(endpoint: clean.endpoint) { config in
            config.text.classifier.kind = .local
            config.text.classifier.endpoint = moderation.baseURL
            config.text.classifier.timeoutSeconds = 120
        }
        let services = try await Services.live(config: config, environment: [:], logger: quietLogger)
        let daemon = Task { try await Services.live(config: config, environment: [:], logger: quietLogger).daemon(mode: .once).run() }
        let judged = try await waitUntil(seconds: 120) { judging(moderation) }
        _ = try await services.erasure.eraseUser(user, by: "test", reason: "erasure request")
        await gate.open()
        try await daemon.value
        return (services.store, judged)
    }

    /// A line as erasure leaves it: spaces, as many as it had bytes.
    static func blank(_ line: String) -> String { String(repeating: " ", count: line.utf8.count) }

    static func files(_ root: TemporaryDataRoot, of user: String) -> [String] {
        root.allFiles().filter { $0.split(separator: "/").dropLast().last.map(String.init) == user }.sorted()
    }

    static func application(_ root: TemporaryDataRoot) async throws -> some ApplicationProtocol {
        let config = root.config(endpoint: "http://127.0.0.1:9/v1")
        return buildApplication(services: try await Services.live(config: config, environment: [:], logger: quietLogger).api(),
                                environment: SeedClientTests.environment, logger: quietLogger)
    }

    /// A user erased while the daemon is classifying their uploads: the verdicts that come back afterwards are not
    /// recorded and nothing of the uploads is published (they were, with approved rows, before).
    @Test func uploadsBeingJudgedWhenTheirUserIsErasedStayErased() async throws {
        let root = try TemporaryDataRoot()
        // The provider answers once the test has erased (or given up waiting), so both are being judged then.
        let gate = FakeVisionServer.Gate()
        let slow = try await FakeVisionServer.start { _, _ in .held(until: { await gate.wait() }, then: .safeSearch(cleanResult)) }
        defer { slow.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "zed", name: "p1.jpg")
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "zed", name: "p2.png")
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "amy", name: "keep.jpg")
        let config = root.config(endpoint: slow.endpoint)
        let services = try await Services.live(config: config, environment: [:], logger: quietLogger)
        let daemon = Task { try await Services.live(config: config, environment: [:], logger: quietLogger).daemon(mode: .once).run() }
        // Erased once both are being classified (received, not judged).
        let beingJudged = try await waitUntil(seconds: 120) {
            try await services.store.items(kind: .image).filter({ $0.userId == "zed" && $0.status == .pending }).count == 2
        }
        let summary = try await services.erasure.eraseUser("zed", by: "test", reason: "erasure request")
        await gate.open()
        #expect(beingJudged, "both uploads were received and sent to the provider")
        #expect(summary.items.count == 2, "\(summary)")
        try await daemon.value
        #expect(Self.files(root, of: "zed").isEmpty, "\(Self.files(root, of: "zed"))")
        #expect(try await services.store.items(kind: .image).filter { $0.userId == "zed" }.isEmpty)
        #expect(try await services.store.item("amy/keep")?.status == .approved && root.exists("approved/amy/keep.jpg"))
    }

    /// A user erased while lines of theirs wait in a queue file not read yet: the lines are blanked in place (the others
    /// keep their numbers), so the daemon that reads the file later records none of them, and the file it finishes
    /// keeps none. A queue file another process is still appending to is blanked too, and its writer's later lines are
    /// kept (the file was not replaced under it).
    @Test func queuedLinesOfAnErasedUserAreNeverRecorded() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let amy = #"{"id": "a-1", "userId": "amy", "recipientId": "zed", "text": "see you at noon"}"#
        let zeds = [#"{"id": "z-1", "userId": "zed", "text": "my address is 1 Main St"}"#, #"{"userId": "zed", "text": "a line without an id"}"#,
                    #"{"id": "z-2", "userId": "zed", "text": "bye"}"#]
        try root.writeQueue("later.jsonl", [zeds[0], amy, zeds[1], zeds[2]])
        // Appended to in place: still open when the user is erased, and written to afterwards.
        let open = root.file("queues/text/open.jsonl")
        let still = #"{"id": "z-3", "userId": "zed", "text": "still being written"}"#
        try Data((still + "\n").utf8).writeClosingOnExec(to: open)
        let writer = try FileHandle(forWritingTo: open)
        try writer.seekToEnd()
        let services = try await Services.live(config: root.config(endpoint: clean.endpoint), environment: [:], logger: quietLogger)
        let summary = try await services.erasure.eraseUser("zed", by: "test", reason: "erasure request")
        #expect(summary.items.isEmpty, "nothing of zed's was recorded yet")
        let after = #"{"id": "a-2", "userId": "amy", "text": "written after the erasure"}"#
        try writer.write(contentsOf: Data((after + "\n").utf8))
        try writer.close()
        #expect(try String(contentsOf: open, encoding: .utf8) == Self.blank(still) + "\n" + after + "\n")

        let store = try await runOnce(root, server: clean)
        #expect(try await store.items(matching: ItemFilter(userId: "zed")).isEmpty)
        #expect(try await store.items(kind: .text).map(\.id.rawValue).sorted() == ["a-1", "a-2"], "no line of zed's, not even a rejected one")
        #expect(try await store.item("a-1")?.content?.source == "queues/text/later.jsonl:2")
        #expect(try await store.item("a-2")?.content?.source == "queues/text/open.jsonl:2")
        let done = try String(contentsOf: root.file("queues/text/done/later.jsonl"), encoding: .utf8)
        #expect(done == [Self.blank(zeds[0]), amy, Self.blank(zeds[1]), Self.blank(zeds[2]), ""].joined(separator: "\n"), "\(done)")
    }

    /// A user erased while the daemon is judging a queue file that holds lines of theirs (it read the file before the
    /// erasure blanked it; the text classifier answers once the test has erased): the lines it judged are not recorded,
    /// and the file it finishes keeps none of them.
    @Test func queuedLinesBeingJudgedWhenTheirUserIsErasedAreNotRecorded() async throws {
        let root = try TemporaryDataRoot()
        let amy = #"{"id": "a-1", "userId": "amy", "text": "see you at noon"}"#
        let zeds = [#"{"id": "z-1", "userId": "zed", "text": "my address is 1 Main St"}"#, #"{"id": "z-2", "userId": "zed", "text": "bye"}"#]
        try root.writeQueue("chat.jsonl", [zeds[0], amy, zeds[1]])
        let (store, beingJudged) = try await Self.eraseWhileJudging(root, user: "zed") { $0.texts.count == 3 }
        #expect(beingJudged, "every line was read and sent to the classifier before the erasure")
        let recorded = try await store.items(matching: ItemFilter(userId: "zed"))
        #expect(recorded.isEmpty, "\(recorded.map { ($0.id, $0.status, $0.reason ?? "") })")
        #expect(try await store.item("a-1")?.status == .approved)
        let done = try String(contentsOf: root.file("queues/text/done/chat.jsonl"), encoding: .utf8)
        #expect(done == [Self.blank(zeds[0]), amy, Self.blank(zeds[1]), ""].joined(separator: "\n"), "\(done)")
    }

    /// A line of a user erased after its file was read, judged by the conversation rules only after the erasure (the
    /// file's first 250 lines are held at the text classifier meanwhile): the daemon's rules, which hear of the
    /// erasure first, count it as a new message, but the message request it makes is not written, nor is its item.
    @Test func queuedLinesJudgedAfterTheirUserIsErasedAreNotCounted() async throws {
        let root = try TemporaryDataRoot()
        try root.writeQueue("chat.jsonl", (0..<250).map { #"{"id": "a-\#($0)", "userId": "amy", "text": "note \#($0)"}"# }
                                          + [#"{"id": "z-1", "userId": "zed", "recipientId": "amy", "text": "hi amy"}"#])
        let (store, beingJudged) = try await Self.eraseWhileJudging(root, user: "zed") { !$0.texts.isEmpty }
        #expect(beingJudged, "the file was read and its first lines sent to the classifier before the erasure")
        #expect(try await store.item("a-249")?.status == .approved)
        #expect(try await store.items(matching: ItemFilter(userId: "zed")).isEmpty)
        #expect(try await store.relationFacts(sender: "zed", recipient: "amy") == RelationFacts(), "no message request of zed's")
    }

    /// A daemon killed in the middle of a queue file (its first batch of 2,000 lines recorded, the rest held at the text
    /// classifier), a user with lines on both sides erased, and the file replayed: blanking the user's lines changed
    /// the file's bytes, yet each line without an id of its own is recorded once, under the id it was first recorded
    /// under (the fingerprint written down when the file was first read), and no line of the erased user's is.
    @Test func aFileReplayedAfterACrashAndAnErasureRecordsEachRejectedLineOnce() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let lines = (0..<3_000).map { index in
            index % 100 == 7 ? "not json \(index)"
                : index % 10 == 3 ? #"{"id": "z-\#(index)", "userId": "zed", "text": "line \#(index)"}"#
                : #"{"id": "a-\#(index)", "userId": "amy", "text": "line \#(index)"}"#
        }
        try root.writeQueue("chat.jsonl", lines)
        // Lines after the first batch wait at the classifier until the daemon judging them is dead.
        let gate = FakeVisionServer.Gate()
        let moderation = try await FakeModerationServer.start(scores: { _ in [:] }, held: { text in
            if let number = Int(text.dropFirst("line ".count)), number >= 2_000 { await gate.wait() }
        })
        defer { moderation.stop() }
        let wordlists = TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path
        let config = try root.writeConfigFile(endpoint: clean.endpoint, extra: """
            "text": { "wordlistsDirectory": "\(wordlists)", "classifier": "local", "classifierEndpoint": "\(moderation.baseURL)",
                      "classifierTimeoutSeconds": 120 }
            """)
        let daemon = Process()
        daemon.executableURL = TestEnvironment.sluiceBinary
        daemon.arguments = ["run", "--config", config.path, "--log-level", "error"]
        try daemon.run()
        let firstBatch = try await waitUntil(seconds: 120) {
            guard let store = await root.storeWhenReady() else { return false }
            return try await store.item("a-1999") != nil
        }
        kill(daemon.processIdentifier, SIGKILL)
        _ = await waitForExit(daemon)
        #expect(firstBatch, "the daemon recorded the file's first batch before it was killed")
        #expect(root.exists("queues/text/chat.jsonl") && !root.exists("queues/text/done/chat.jsonl"), "killed in the middle of the file")

        let services = try await Services.live(config: root.config(endpoint: clean.endpoint), environment: [:], logger: quietLogger)
        let erased = try await services.erasure.eraseUser("zed", by: "test", reason: "erasure request")
        #expect(erased.items.count == 200, "zed's lines in the first batch")
        await gate.open()
        let replay = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "info"])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.stderr.contains("text queue file read before"), "\(replay.stderr)")
        #expect(root.exists("queues/text/done/chat.jsonl"))

        let items = try await services.store.items(kind: .text)
        let rejected = items.filter { $0.status == .rejected }
        #expect(rejected.count == 30, "\(rejected.count) rejected items for 30 lines that are not JSON")
        #expect(Set(rejected.compactMap(\.reason)).count == 30, "each names its own line")
        #expect(items.filter { $0.userId == "amy" }.count == 2_670)
        #expect(items.filter { $0.userId == "zed" }.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.file("queues/text/.fingerprints").path).isEmpty,
                "the file's fingerprint record goes once it is in done/")
    }

    @Test func anItemAndThenAUserAreErasedWithEveryFile() async throws {
        let root = try TemporaryDataRoot()
        let store = try await Self.seed(root)
        #expect(Self.files(root, of: "frank") == ["approved/frank/ok.jpg", "pending/frank/waiting.png", "quarantine/frank/bad.png",
                                                  "thumbnails/frank/ok.jpg"])
        let okHash = try #require(try await store.item("frank/ok")?.contentHash)

        try await Self.application(root).test(.router) { client in
            // End users cannot erase, not even their own items.
            try await client.execute(uri: "/v1/items/frank/ok", method: .delete, headers: SeedClientTests.user("frank")) { response in
                #expect(response.status == .forbidden && (SeedClientTests.json(response.body)["error"] as? [String: Any])?["status"] as? String == "PERMISSION_DENIED")
            }
            try await client.execute(uri: "/v1/users/frank", method: .delete, headers: SeedClientTests.user("frank")) { response in
                #expect(response.status == .forbidden)
            }
            try await client.execute(uri: "/v1/items/frank/ok", method: .delete) { response in
                #expect(response.status == .unauthorized)
            }
            #expect(Self.files(root, of: "frank").count == 4)

            try await client.execute(uri: "/v1/items/frank/ok", method: .delete, headers: SeedClientTests.app) { response in
                #expect(response.status == .ok)
                let body = SeedClientTests.json(response.body)
                #expect(body["erased"] as? [String] == ["frank/ok"] && body["files"] as? Int == 2, "\(body)")
            }
            #expect(Self.files(root, of: "frank") == ["pending/frank/waiting.png", "quarantine/frank/bad.png"])
            try await client.execute(uri: "/v1/items/frank/ok", method: .get, headers: SeedClientTests.app) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/v1/images/approved/frank/ok.jpg", method: .get, headers: SeedClientTests.app) { response in
                #expect(response.status == .notFound)
            }
            // Twice is not an error to hide: there is nothing left.
            try await client.execute(uri: "/v1/items/frank/ok", method: .delete, headers: SeedClientTests.app) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/v1/items/frank/ok", method: .post, headers: SeedClientTests.app) { response in
                #expect(response.status == .methodNotAllowed)
            }
            // An upload not judged yet is erased by name too (it has no row; its file was it).
            try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "frank", name: "later.png")
            try await client.execute(uri: "/v1/items/frank/later", method: .delete, headers: SeedClientTests.app) { response in
                let body = SeedClientTests.json(response.body)
                #expect(body["erased"] as? [String] == ["frank/later"] && body["files"] as? Int == 1, "\(body)")
            }
            #expect(!root.exists("pending/frank/later.png"))

            // The user: quarantine, pending, the text message, their reports' authorship.
            try await client.execute(uri: "/v1/functions/submit_report", method: .post, headers: SeedClientTests.user("frank"),
                                     body: ByteBuffer(string: #"{"data": {"messageId": "grace/keep", "category": "spam", "description": "mine"}}"#)) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/v1/users/grace/follows/frank", method: .put, headers: SeedClientTests.app) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/v1/users/frank/blocks/grace", method: .put, headers: SeedClientTests.app) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/v1/users/frank", method: .delete, headers: SeedClientTests.app) { response in
                #expect(response.status == .ok)
                let body = SeedClientTests.json(response.body)
                #expect(Set(body["erased"] as? [String] ?? []) == ["frank/bad", "m-1"] && body["files"] as? Int == 2, "\(body)")
            }
            try await client.execute(uri: "/v1/users/has%2Fslash", method: .delete, headers: SeedClientTests.app) { response in
                #expect(response.status == .badRequest)
            }
        }
        #expect(Self.files(root, of: "frank").isEmpty)
        #expect(!root.allFiles().contains { $0.contains("frank") }, "\(root.allFiles())")
        #expect(try await store.items(matching: ItemFilter(userId: "frank")).isEmpty)
        #expect(try await store.reports().allSatisfy { $0.reporterUserId == nil && $0.description == nil })
        let stillBlocks = try await store.isBlocked(blocker: "frank", blocked: "grace")
        #expect(try await store.relationHistory("frank").isEmpty && !stillBlocks)
        #expect(try await store.relationFacts(sender: "grace", recipient: "frank") == RelationFacts(), "no follow of frank is left")
        // The queue file already read keeps no line of frank's: it is blank, so grace's keeps its number.
        let done = try String(contentsOf: root.file("queues/text/done/q.jsonl"), encoding: .utf8)
        let frank = #"{"id": "m-1", "userId": "frank", "text": "see you at noon"}"#
        #expect(done == Self.blank(frank) + "\n" + #"{"id": "g-1", "userId": "grace", "recipientId": "frank", "text": "noon works"}"#, "\(done)")
        #expect(try await store.item("g-1")?.content?.source == "queues/text/q.jsonl:2")
        // grace is untouched.
        #expect(try await store.item("grace/keep")?.status == .approved)
        #expect(root.allFiles().contains("approved/grace/keep.jpg"))
        // The tombstones: who, when, what it held (its hash) — nothing else.
        let tombstones = try await store.tombstones(userId: "frank")
        #expect(tombstones.map(\.itemId.rawValue).sorted() == ["frank/bad", "frank/ok", "m-1"])
        #expect(tombstones.first { $0.itemId.rawValue == "frank/ok" }?.contentHash == okHash)
        #expect(tombstones.allSatisfy { $0.erasedBy == "app" })
    }

    @Test func eraseUserFromTheCLIAndDeleteProfilePicture() async throws {
        let root = try TemporaryDataRoot()
        _ = try await Self.seed(root)
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "grace", name: "profile_grace.jpg")
        try await Self.application(root).test(.router) { client in
            // Seed 004: a user deletes their own profile picture, not someone else's.
            try await client.execute(uri: "/v1/functions/deleteProfilePicture", method: .post, headers: SeedClientTests.user("frank"),
                                     body: ByteBuffer(string: #"{"data": {"userId": "grace"}}"#)) { response in
                #expect(response.status == .forbidden)
            }
            try await client.execute(uri: "/v1/functions/deleteProfilePicture", method: .post, headers: SeedClientTests.user("grace"),
                                     body: ByteBuffer(string: #"{"data": {"userId": "grace"}}"#)) { response in
                #expect(response.status == .ok)
                #expect(SeedClientTests.json(response.body)["result"] as? [String: Bool] == ["success": true, "deleted": true])
            }
            try await client.execute(uri: "/v1/functions/deleteProfilePicture", method: .post, headers: SeedClientTests.user("grace"),
                                     body: ByteBuffer(string: #"{"data": {}}"#)) { response in
                #expect(response.status == .badRequest)
            }
        }
        #expect(Self.files(root, of: "grace") == ["approved/grace/keep.jpg", "thumbnails/grace/keep.jpg"])

        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let result = try await shell(TestEnvironment.sluiceBinary, ["erase-user", "frank", "--by", "dpo@example.org", "--json", "--config", config.path])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect((summary["erased"] as? [String])?.count == 3 && summary["files"] as? Int == 4, "\(summary)")
        #expect(Self.files(root, of: "frank").isEmpty)
        let bad = try await shell(TestEnvironment.sluiceBinary, ["erase-user", "../etc", "--config", config.path])
        #expect(bad.status != 0 && bad.stderr.contains("user"), "\(bad.stderr)")
        let store = try await Services.store(config: root.config(endpoint: "http://127.0.0.1:9/v1"))
        #expect(try await store.tombstones(userId: "frank").allSatisfy { $0.erasedBy == "dpo@example.org" && $0.reason.contains("erase-user") })
    }
}
