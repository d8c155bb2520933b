#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SluiceAPI
import SluiceCore
import SluicePipeline
import SluiceServices
import SluiceStore
import SluiceTesting
import Synchronization
import Testing

/// The real `sluice` binary as operators run it: watch mode, signals, kill -9 and restart, CLI output.
@Suite(.serialized) struct DaemonProcessTests {
    @Test func killNineMidBatchThenRestartGivesExactlyOneVerdictEach() async throws {
        let root = try TemporaryDataRoot()
        // Until the kill, answers after the tenth are held back, so the kill always lands part-way however slowly the
        // test polls; the rerun's answers all come at once.
        let holding = Mutex(true)
        let server = try await FakeVisionServer.start { _, index in
            index >= 10 && holding.withLock({ $0 }) ? .delayed(seconds: 30, then: .safeSearch(cleanResult))
                : .delayed(seconds: 0.15, then: .safeSearch(cleanResult))
        }
        defer { server.stop() }
        let sources = TestEnvironment.fixtureFiles("images/orientation") + TestEnvironment.fixtureFiles("images/photos")
        var ids: [String] = []
        for round in 0..<2 {
            for (index, source) in sources.enumerated() {
                let id = "img\(round)_\(index)"
                ids.append("crash/\(id)")
                try root.drop(source, user: "crash", name: id + "." + source.pathExtension)
            }
        }
        let config = try root.writeConfigFile(endpoint: server.endpoint)

        let daemon = Process()
        daemon.executableURL = TestEnvironment.sluiceBinary
        daemon.arguments = ["run", "--config", config.path, "--log-level", "error"]
        try daemon.run()
        // Wait until some, but not all, verdicts are in, then kill without warning.
        var verdicts = 0
        await waitUntil {
            verdicts = (try? await root.storeWhenReady()?.items().filter { $0.status.isFinal }.count) ?? 0
            return verdicts >= 4
        }
        kill(daemon.processIdentifier, SIGKILL)
        await waitForExit(daemon)
        holding.withLock { $0 = false }
        #expect(verdicts >= 4 && verdicts < ids.count, "killed after \(verdicts) of \(ids.count)")

        let rerun = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"])
        #expect(rerun.status == 0, "\(rerun.stderr)")

        let store = try await root.store()
        for id in ids {
            let item = try #require(try await store.item(id), "\(id) lost")
            #expect(item.status == .approved, "\(id): \(item.status) \(item.reason ?? "")")
            let verdictEvents = try await store.events(of: id).filter { $0.type == "verdict" }
            #expect(verdictEvents.count == 1, "\(id) has \(verdictEvents.count) verdicts")
            for output in [item.outputs.approved, item.outputs.thumbnail] {
                let path = try #require(output)
                let data = try read(root.file(path))
                #expect(JPEGInspector.dimensions(data) != nil, "\(path) incomplete")
            }
        }
        let files = root.allFiles()
        #expect(files.filter { $0.hasPrefix("pending/") }.isEmpty, "\(files.filter { $0.hasPrefix("pending/") })")
        #expect(files.filter { $0.contains(".sluice-tmp-") }.isEmpty, "orphan temp files")
    }

    @Test func watchModePicksUpNewUploadsAndDrainsOnSIGTERM() async throws {
        let root = try TemporaryDataRoot()
        // The second answer takes 5 s, so SIGTERM surely lands while that upload is in flight.
        let server = try await FakeVisionServer.start { _, index in .delayed(seconds: index == 0 ? 0.3 : 5, then: .safeSearch(cleanResult)) }
        defer { server.stop() }
        let config = try root.writeConfigFile(endpoint: server.endpoint, extra: #""daemon": {"rescanSeconds": 600}"#)
        let daemon = Process()
        daemon.executableURL = TestEnvironment.sluiceBinary
        daemon.arguments = ["run", "--config", config.path, "--log-level", "error"]
        try daemon.run()
        // Once the daemon has opened its store it is about to watch; a moment later, an upload arrives that only
        // inotify can see (the rescan period is 10 minutes).
        await waitUntil { await root.storeWhenReady() != nil }
        try await Task.sleep(nanoseconds: 800_000_000)
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "live", name: "first.jpg")
        var status: ItemStatus?
        await waitUntil {
            status = try? await root.storeWhenReady()?.item("live/first")?.status
            return status == .approved
        }
        #expect(status == .approved)
        // A new folder created while running is watched too; SIGTERM arrives while that upload is in flight.
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "newuser", name: "second.png")
        let inFlight = await waitUntil(every: 20) { server.received.count >= 2 }
        let beforeSignal = try? await root.storeWhenReady()?.item("newuser/second")?.status
        #expect(beforeSignal?.isFinal != true, "the second upload was judged before SIGTERM was sent: nothing left to drain")
        kill(daemon.processIdentifier, SIGTERM)
        #expect(await waitForExit(daemon, seconds: 60), "sluice run did not stop on SIGTERM")
        #expect(daemon.terminationReason == .exit)
        #expect(daemon.terminationStatus == 0)
        #expect(inFlight)
        #expect(try await root.store().item("newuser/second")?.status == .approved, "in-flight item finished before exit")
    }

    /// A text sent to one recipient is held in the running daemon's memory, not written (README, "Conversation rules");
    /// a daemon in watch mode stopped by SIGTERM writes it as it drains, so the next daemon counts that recipient.
    @Test func watchModeWritesTheTextsItHoldsOnSIGTERM() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        do {
            let services = try await Services.live(config: root.config(endpoint: server.endpoint), environment: [:], logger: quietLogger)
            try await services.relations.setProfile(RelationUser(userId: "r0", messagePrivacy: .anyone))
        }
        let config = try root.writeConfigFile(endpoint: server.endpoint)
        let daemon = Process()
        daemon.executableURL = TestEnvironment.sluiceBinary
        daemon.arguments = ["run", "--config", config.path, "--log-level", "error"]
        try daemon.run()
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        let queue = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        let line = #"{"id": "h0", "userId": "zed", "recipientId": "r0", "text": "cheap watches today", "sentAt": "2027-01-15T08:00:00Z"}"#
        try Data((line + "\n").utf8).writeClosingOnExec(to: queue.appendingPathComponent(".held.jsonl"))
        try FileManager.default.moveItem(at: queue.appendingPathComponent(".held.jsonl"), to: queue.appendingPathComponent("held.jsonl"))
        var status: ItemStatus?
        await waitUntil {
            status = try? await root.storeWhenReady()?.item("h0")?.status
            return status?.isFinal == true
        }
        #expect(status == .approved)
        let slot = CounterSlot(key: "spam.duplicates:zed:\(MessageSignals.fingerprint("cheap watches today"))", windowStart: 1_800_000_000)
        func members() async throws -> Set<String> {
            try await root.store().conversationState(sender: "zed", recipient: "r0", facts: false, counted: [], distinct: [slot]).members[slot] ?? []
        }
        #expect(try await members() == [], "held while the daemon runs")
        kill(daemon.processIdentifier, SIGTERM)
        #expect(await waitForExit(daemon, seconds: 60), "sluice run did not stop on SIGTERM")
        #expect(daemon.terminationStatus == 0)
        #expect(try await members() == ["r0"], "written as the daemon stopped")
    }

    /// An upload re-sent under the same id while the first is being classified: the first verdict keeps the bytes
    /// it was made on (the blocked original from memory), and the new file is judged on its own afterwards — not
    /// deleted or quarantined under the first one's verdict. Then nothing of the first is left behind.
    @Test func anUploadResentWhileTheFirstIsClassifiedIsJudgedOnItsOwn() async throws {
        let root = try TemporaryDataRoot()
        let adult = try SafeSearch(adult: .veryLikely, spoof: .veryUnlikely, medical: .veryUnlikely, violence: .veryUnlikely, racy: .unlikely)
        let server = try await FakeVisionServer.start { _, index in
            index == 0 ? .delayed(seconds: 3, then: .safeSearch(adult)) : .safeSearch(cleanResult)
        }
        defer { server.stop() }
        let config = try root.writeConfigFile(endpoint: server.endpoint, extra: #""daemon": {"rescanSeconds": 2}"#)
        let daemon = Process()
        daemon.executableURL = TestEnvironment.sluiceBinary
        daemon.arguments = ["run", "--config", config.path, "--log-level", "error"]
        try daemon.run()
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        let (firstFile, secondFile) = (TestEnvironment.fixture("images/photos/rocket.jpg"), TestEnvironment.fixture("images/photos/hubble_deep_field.jpg"))
        let second = try read(secondFile)
        try root.drop(firstFile, user: "u", name: "x.jpg")
        #expect(await waitUntil(every: 20) { server.received.count >= 1 }, "the first upload was never sent to the provider")
        // While the provider holds the first answer, the same name gets other bytes (renamed over it).
        try root.drop(secondFile, user: "u", name: "x.jpg")
        var item: Item?
        let judgedAgain = await waitUntil(every: 50) {
            item = try? await root.storeWhenReady()?.item("u/x")
            return item?.contentHash == ContentHash.sha256(second) && item?.status.isFinal == true
        }
        #expect(judgedAgain, "the re-sent upload was not judged: \(String(describing: item))")
        kill(daemon.processIdentifier, SIGTERM)
        #expect(await waitForExit(daemon, seconds: 60))
        let store = try await root.store()
        let history = try await store.events(of: "u/x").filter { $0.type == "verdict" }.map(\.toStatus)
        #expect(history == [.blocked, .approved], "\(history)")
        #expect(server.received.count == 2, "each file was classified once")
        #expect(item?.status == .approved && item?.sourceBytes == second.count)
        let files = root.allFiles()
        #expect(files.contains("approved/u/x.jpg") && files.filter { $0.hasPrefix("pending/") || $0.hasPrefix("quarantine/") }.isEmpty, "\(files)")
    }

    /// A file name is chosen by whoever uploads: its control characters reach neither the operator's terminal (colour,
    /// cursor, title escapes) nor the log as a forged line.
    @Test func fileNamesCannotWriteEscapesOrLogLines() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let name = "evil\u{1B}[31mRED\u{1B}[0m\u{1B}]0;pwned\u{07}\n2026-01-01 info sluice: item=forged status=approved.jpg"
        try root.drop(Data("not an image".utf8), user: "u", name: name)
        let config = try root.writeConfigFile(endpoint: server.endpoint)
        let run = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "info"])
        #expect(run.status == 0)
        #expect(!run.stderr.contains("\u{1B}") && !run.stderr.contains("\u{07}") && run.stderr.contains("\\u{1B}[31mRED"), "\(run.stderr)")
        #expect(!run.stderr.split(separator: "\n").contains { $0.hasPrefix("2026-01-01 info sluice: item=forged") }, "a forged log line")
        let list = try await shell(TestEnvironment.sluiceBinary, ["list", "--config", config.path])
        #expect(list.status == 0 && !list.stdout.contains("\u{1B}") && list.stdout.contains("evil\\u{1B}[31mRED"), "\(list.stdout)")
        #expect(list.stdout.split(separator: "\n").count == 3, "one row for the upload (header, row, counts): \(list.stdout)")
    }

    @Test func statusAndListPrintDocumentedJSON() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try root.drop(TestEnvironment.repositoryRoot.appendingPathComponent("Samples/alice/rocket.jpg"), user: "alice", name: "rocket.jpg")
        try root.drop(Data("nope".utf8), user: "alice", name: "bad.jpg")
        let config = try root.writeConfigFile(endpoint: server.endpoint)
        let binary = TestEnvironment.sluiceBinary
        #expect(try await shell(binary, ["run", "--once", "--config", config.path, "--log-level", "error"]).status == 0)

        let status = try await shell(binary, ["status", "alice/rocket", "--json", "--config", config.path])
        #expect(status.status == 0, "\(status.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        for key in ["id", "kind", "userId", "status", "reason", "safeSearch", "exif", "outputs", "createdAt", "updatedAt"] {
            #expect(object.keys.contains(key), "missing \(key)")
        }
        #expect(object["id"] as? String == "alice/rocket")
        #expect(object["status"] as? String == "approved")
        #expect(object["reason"] is NSNull)
        #expect((object["safeSearch"] as? [String: String])?["adult"] == "VERY_UNLIKELY")
        let exif = try #require(object["exif"] as? [String: Any])
        #expect(exif["hadGPS"] as? Bool == true)
        #expect(exif["make"] as? String == "Canon")
        #expect((object["outputs"] as? [String: Any])?["approved"] as? String == "approved/alice/rocket.jpg")
        #expect((object["outputs"] as? [String: Any])?["thumbnail"] as? String == "thumbnails/alice/rocket.jpg")
        #expect((object["createdAt"] as? String)?.hasSuffix("Z") == true)

        let list = try await shell(binary, ["list", "--status", "rejected", "--json", "--config", config.path])
        let array = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(array.count == 1)
        #expect(array.first?["id"] as? String == "alice/bad")
        #expect((array.first?["reason"] as? String)?.contains("not an image") == true)

        let table = try await shell(binary, ["list", "--config", config.path])
        #expect(table.stdout.contains("alice/rocket") && table.stdout.contains("approved") && table.stdout.contains("STATUS"))

        let missing = try await shell(binary, ["status", "alice/none", "--config", config.path])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("no item with id \"alice/none\""))
    }

    /// `users list --json` gives `disabled` as a boolean (it was the string "false").
    @Test func usersListJSONSaysDisabledAsABoolean() async throws {
        let root = try TemporaryDataRoot()
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let accounts = ReviewerAccounts(store: try await Services.store(config: root.config(endpoint: "http://127.0.0.1:9/v1")))
        _ = try await accounts.add("rita", role: .reviewer, password: "correct horse battery staple")
        let list = try await shell(TestEnvironment.sluiceBinary, ["users", "list", "--json", "--config", config.path])
        #expect(list.status == 0, "\(list.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1 && rows.first?["name"] as? String == "rita")
        #expect(rows.first?["disabled"] as? Bool == false && !(rows.first?["disabled"] is String), "\(rows)")
    }

    @Test func badConfigStopsStartupNamingTheKey() async throws {
        let root = try TemporaryDataRoot()
        let config = root.url.appendingPathComponent("pipeline.json")
        try Data(#"{"dataRoot": ".", "vision": {"endpiont": "http://x"}}"#.utf8).writeClosingOnExec(to: config)
        let result = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("unknown config key \"vision.endpiont\""), "\(result.stderr)")
        let missing = try await shell(TestEnvironment.sluiceBinary, ["list", "--config", root.url.appendingPathComponent("nope.json").path])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("cannot read config file"))
        // Reading a store that is not there (a mistyped dataRoot) names where it looked instead of creating one.
        let typo = root.url.appendingPathComponent("typo.json")
        try Data(#"{"dataRoot": "nowhere"}"#.utf8).writeClosingOnExec(to: typo)
        let empty = try await shell(TestEnvironment.sluiceBinary, ["list", "--config", typo.path])
        #expect(empty.status != 0 && empty.stderr.contains("no status store at \(root.url.appendingPathComponent("nowhere").path)"), "\(empty.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.url.appendingPathComponent("nowhere/sluice.sqlite").path))
        // The same for every command that reads, erases or decides: an erasure against the wrong store must not
        // report success.
        for command in [["erase-user", "bob"], ["review", "list"], ["review", "approve", "u/x"], ["reports", "list"], ["webhooks", "list"],
                        ["webhooks", "retry", "--failed"], ["users", "list"], ["users", "disable", "rita"], ["banks", "list"], ["relations", "show", "bob"],
                        ["threads", "search", "hello", "--user", "bob"], ["reprocess", "--kind", "text"]] {
            let run = try await shell(TestEnvironment.sluiceBinary, command + ["--config", typo.path])
            #expect(run.status != 0 && run.stderr.contains("no status store at"), "\(command): \(run.status) \(run.stdout) \(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: root.url.appendingPathComponent("nowhere/sluice.sqlite").path))
        let zero = try await shell(TestEnvironment.sluiceBinary, ["list", "--limit", "0", "--config", typo.path])
        #expect(zero.status != 0 && zero.stderr.contains("--limit must be at least 1"), "\(zero.stderr)")
        // Every command checks the log level, whether it logs or not.
        let loud = try await shell(TestEnvironment.sluiceBinary, ["list", "--log-level", "loud", "--config", config.path])
        #expect(loud.status != 0 && loud.stderr.contains("--log-level \"loud\" is not a level"), "\(loud.stderr)")
        let fromEnvironment = try await shell(TestEnvironment.sluiceBinary, ["list", "--config", config.path],
                                              environment: ProcessInfo.processInfo.environment.merging(["SLUICE_LOG_LEVEL": "loud"]) { $1 })
        #expect(fromEnvironment.status != 0 && fromEnvironment.stderr.contains("SLUICE_LOG_LEVEL \"loud\" is not a level"), "\(fromEnvironment.stderr)")
    }
}
