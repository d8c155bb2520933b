#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SluiceCore
import SluiceImaging
import SluicePipeline
import SluiceServices
import SluiceStore
import SluiceTesting
import Testing

/// Hash banks as operators and apps see them: what ends blocked without a provider call, what a bank must never
/// do (act on a low-quality hash, beat an allow bank, keep acting through a flood), reuse of classifications,
/// reprocessing against a list imported today, and the CLI and API around them.
@Suite(.serialized) struct HashBankTests {
    static let possible = SafeSearch(adult: .possible, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .unlikely)

    /// A re-encoded (JPEG quality 60), resized (70%) and slightly cropped (1% a side) copy, made with the vips CLI.
    static func disguisedCopy(of source: URL) async throws -> Data {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let vips = URL(fileURLWithPath: "/usr/bin/vips")
        let w = try #require(Int(try await shell(URL(fileURLWithPath: "/usr/bin/vipsheader"), ["-f", "width", source.path]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let h = try #require(Int(try await shell(URL(fileURLWithPath: "/usr/bin/vipsheader"), ["-f", "height", source.path]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let cropped = work.appendingPathComponent("crop.png").path
        #expect(try await shell(vips, ["crop", source.path, cropped, "\(w / 100)", "\(h / 100)", "\(w * 98 / 100)", "\(h * 98 / 100)"]).status == 0)
        #expect(try await shell(vips, ["resize", cropped, work.appendingPathComponent("copy.jpg").path + "[Q=60]", "0.7"]).status == 0)
        return try Data(contentsOf: work.appendingPathComponent("copy.jpg"))
    }

    static func fingerprint(_ data: Data) throws -> PDQFingerprint {
        let processor = try VipsImageProcessor(maxPixels: 100_000_000)
        return try #require(try processor.fingerprint(data, format: try processor.sniff(data), options: ImageOptions()))
    }

    static func services(_ root: TemporaryDataRoot, _ server: FakeVisionServer, edit: (inout PipelineConfig) -> Void = { _ in }) async throws -> Services {
        try await Services.live(config: root.config(endpoint: server.endpoint, edit: edit), environment: [:], logger: quietLogger)
    }

    /// The issue's end-to-end case: a person blocks an image; a disguised copy uploaded by someone else is blocked by
    /// the `removed` bank, with no provider call, and says which bank, hash and distance.
    @Test func aCopyOfAnImageBlockedByHandIsBlockedWithoutAProviderCall() async throws {
        let root = try TemporaryDataRoot()
        let autoAdd: (inout PipelineConfig) -> Void = { $0.banks.autoAddBlocked = true }
        let review = try await FakeVisionServer.always(Self.possible)
        defer { review.stop() }
        let source = TestEnvironment.fixture("images/orientation/Landscape_1.jpg")
        try root.drop(source, user: "alice", name: "beach.jpg")
        try await runOnce(root, server: review, edit: autoAdd)
        let services = try await Self.services(root, review, edit: autoAdd)
        #expect(try await services.store.item("alice/beach")?.status == .review)
        _ = try await services.decisions.decide("alice/beach", .block, by: "dana", note: "known bad")
        let banks = try await services.store.banks()
        #expect(banks.map(\.name) == ["removed"] && banks.first?.action == .block && banks.first?.size == 1)
        let blockedHash = try #require(try await services.store.item("alice/beach")?.pdq?.hash)

        let counting = try await FakeVisionServer.always(cleanResult)
        defer { counting.stop() }
        let copy = try await Self.disguisedCopy(of: source)
        try root.drop(copy, user: "bob", name: "holiday.jpg")
        let store = try await runOnce(root, server: counting, edit: autoAdd)
        #expect(counting.received.isEmpty, "a block match needs no provider call")
        let item = try #require(try await store.item("bob/holiday"))
        let match = try #require(item.match)
        #expect(item.status == .blocked)
        #expect(item.reason == "matched bank removed (distance \(match.distance))")
        #expect(match.bank == "removed" && match.hash == blockedHash && match.acted && match.distance <= 31 && match.distance > 0)
        #expect(item.pdq?.quality ?? 0 >= 50 && item.safeSearch == nil)
        let verdict = try #require(try await store.events(of: "bob/holiday").last { $0.toStatus == .blocked })
        #expect(verdict.stage == "match" && verdict.detail == "\(item.reason ?? ""), bank hash \(blockedHash.hex)")
        #expect(root.exists("quarantine/bob/holiday.jpg") && !root.exists("approved/bob/holiday.jpg"))
        // The copy's hash joined the bank too (it was blocked).
        #expect(try await store.banks().first?.size == 2)

        // Erasing alice keeps her removed image's hash in the bank (it keeps the content out) without her item id.
        _ = try await services.erasure.eraseUser("alice", by: "ops", reason: "request", at: Date())
        let entries = try await store.bankEntries(bank: "removed", after: 0, limit: 10)
        #expect(entries.count == 2 && entries.allSatisfy { $0.itemId != "alice/beach" })
        #expect(entries.contains { $0.hash == blockedHash && $0.itemId == nil && $0.note == "from an erased item" })
    }

    /// An allow bank overrides block matches (the image is classified as usual); a hash under quality 50 never
    /// acts; a disabled bank does not match.
    @Test func allowBanksLowQualityAndDisabledBanksNeverBlock() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let services = try await Self.services(root, clean)
        let banks = HashBanks(store: services.store, matcher: nil)
        let coins = try Data(contentsOf: TestEnvironment.fixture("images/photos/coins.png"))
        let flat = try PDQHashTests.solidPNG(width: 300, height: 200)
        _ = try await banks.create("known", action: .block)
        _ = try await banks.add([try Self.fingerprint(coins).hash, try Self.fingerprint(flat).hash], to: "known")

        try root.drop(coins, user: "u", name: "one.png")
        try root.drop(flat, user: "u", name: "flat.png")
        let store = try await runOnce(root, server: clean)
        #expect(try await store.item("u/one")?.status == .blocked)
        let flatItem = try #require(try await store.item("u/flat"))
        #expect(flatItem.status == .approved, "quality \(flatItem.pdq?.quality ?? -1) hashes never act")
        #expect(flatItem.match?.acted == false && flatItem.match?.note?.contains("quality 0") == true)
        #expect(clean.received.count == 1, "only the flat image went to the provider")

        _ = try await banks.create("cleared", action: .allow, threshold: 10)
        _ = try await banks.add([try Self.fingerprint(coins).hash], to: "cleared")
        try root.drop(coins, user: "u", name: "two.png")
        try await runOnce(root, server: clean)
        let allowed = try #require(try await store.item("u/two"))
        #expect(allowed.status == .approved && allowed.safeSearch == cleanResult)
        #expect(allowed.match?.bank == "cleared" && allowed.match?.action == .allow && allowed.match?.note?.contains("overrides bank known") == true)

        try await banks.remove("cleared")
        try await banks.setEnabled("known", false)
        try root.drop(coins, user: "u", name: "three.png")
        try await runOnce(root, server: clean)
        let unmatched = try #require(try await store.item("u/three"))
        #expect(unmatched.status == .approved && unmatched.match == nil)
        #expect(clean.received.count == 3)
    }

    /// One bank hash matching more uploads than `banks.flood.maxMatches` in the window stops acting (the rest are
    /// classified), is recorded as quarantined, and acts again once a person confirms it.
    @Test func aFloodOfMatchesQuarantinesTheHashUntilConfirmed() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let flood: (inout PipelineConfig) -> Void = { $0.banks.flood.maxMatches = 2 }
        let services = try await Self.services(root, clean, edit: flood)
        let banks = HashBanks(store: services.store, matcher: nil)
        let coins = try Data(contentsOf: TestEnvironment.fixture("images/photos/coins.png"))
        let hash = try Self.fingerprint(coins).hash
        _ = try await banks.create("known", action: .block)
        _ = try await banks.add([hash], to: "known")
        for n in 1...4 { try root.drop(coins, user: "u\(n)", name: "c.png") }
        let store = try await runOnce(root, server: clean, edit: flood)
        let items = try await store.items(kind: .image)
        #expect(items.filter { $0.status == .blocked }.count == 2)
        let passed = items.filter { $0.status == .approved }
        #expect(passed.count == 2 && passed.allSatisfy { $0.match?.acted == false && $0.match?.note?.contains("quarantined") == true })
        #expect(clean.received.count == 2)
        let state = try await store.bankState()
        #expect(state.standings.map(\.state) == [.quarantined] && state.standings.first?.hash == hash)

        try await banks.confirm(hash, in: "known", by: "dana")
        try root.drop(coins, user: "u5", name: "c.png")
        try await runOnce(root, server: clean, edit: flood)
        #expect(try await store.item("u5/c")?.status == .blocked)
        #expect(try await store.bankState().standings.map(\.state) == [.confirmed])
    }

    /// `vision.reuseWithinDistance`: a near-identical copy of an approved image takes over its classification
    /// (no provider call) and says which item it came from; off by default.
    @Test func nearIdenticalUploadsReuseAnApprovedClassification() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let source = TestEnvironment.fixture("images/photos/chelsea.png")
        try root.drop(source, user: "a", name: "cat.png")
        try await runOnce(root, server: clean)
        #expect(clean.received.count == 1)

        let work = FileManager.default.temporaryDirectory.appendingPathComponent("reuse-\(UUID().uuidString).jpg")
        defer { try? FileManager.default.removeItem(at: work) }
        #expect(try await shell(URL(fileURLWithPath: "/usr/bin/vips"), ["copy", source.path, work.path + "[Q=85]"]).status == 0)
        try root.drop(work, user: "b", name: "cat.jpg")
        try await runOnce(root, server: clean)
        #expect(clean.received.count == 2, "off by default")

        try root.drop(work, user: "c", name: "cat.jpg")
        let store = try await runOnce(root, server: clean) { $0.vision.reuseWithinDistance = 10 }
        #expect(clean.received.count == 2, "the classification was reused")
        let reused = try #require(try await store.item("c/cat"))
        #expect(reused.status == .approved && reused.safeSearch == cleanResult)
        #expect(["a/cat", "b/cat"].contains(reused.reused?.item ?? "") && (reused.reused?.distance ?? 99) <= 10)
        #expect(root.exists("approved/c/cat.jpg"))
        let event = try #require(try await store.events(of: "c/cat").last { $0.type == "verdict" })
        if let from = reused.reused?.item {
            _ = try await Services.live(config: root.config(endpoint: clean.endpoint), environment: [:], logger: quietLogger).erasure
                .eraseUser(String(from.prefix { $0 != "/" }), by: "ops", reason: "request", at: Date())
            #expect(try await store.item("c/cat")?.reused?.item == "erased")
        }
        #expect(event.detail == "classification reused from \(reused.reused?.item ?? "") (distance \(reused.reused?.distance ?? -1))")
    }

    /// A list imported today finds old uploads: `sluice reprocess --stages match` blocks the approved image whose
    /// hash (from `sluice pdq`) was imported as HMA CSV, and moves its files.
    @Test func reprocessingAgainstANewListFindsOldUploads() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let source = TestEnvironment.fixture("images/orientation/Portrait_1.jpg")
        try root.drop(source, user: "old", name: "photo.jpg")
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "old", name: "coffee.png")
        let store = try await runOnce(root, server: clean)
        #expect(try await store.item("old/photo")?.status == .approved)
        let config = try root.writeConfigFile(endpoint: clean.endpoint)
        let sluice = TestEnvironment.sluiceBinary

        let pdq = try await shell(sluice, ["pdq", "--json", source.path, "--config", config.path])
        #expect(pdq.status == 0, "\(pdq.stderr)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(pdq.stdout.utf8)) as? [String: Any])
        let hash = try #require(line["pdq"] as? String)
        #expect(line["file"] as? String == source.path && (line["quality"] as? Int ?? 0) >= 50)
        let list = root.url.appendingPathComponent("list.csv")
        try Data("hash,category\n\(hash),known-bad\n".utf8).writeClosingOnExec(to: list)
        #expect(try await shell(sluice, ["banks", "add", "today", "--action", "block", "--config", config.path]).status == 0)
        let imported = try await shell(sluice, ["banks", "import", "today", list.path, "--config", config.path])
        #expect(imported.stdout.contains("1 added"), "\(imported.stdout)\(imported.stderr)")

        let run = try await shell(sluice, ["reprocess", "--stages", "match", "--json", "--config", config.path])
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(summary["moves"] as? [String: Int] == ["approved → blocked": 1], "\(run.stdout)")
        let item = try #require(try await store.item("old/photo"))
        #expect(item.status == .blocked && item.match?.bank == "today" && item.reason?.hasPrefix("matched bank today (distance ") == true)
        #expect(!root.exists("approved/old/photo.jpg") && root.exists("quarantine/old/photo.jpg"))
        #expect(try await store.item("old/coffee")?.status == .approved)
        #expect(clean.received.count == 2, "matching calls no provider")

        let explain = try await shell(sluice, ["banks", "explain", "old/photo", "--config", config.path])
        #expect(explain.stdout.contains("recorded match: bank today, distance") && explain.stdout.contains(hash), "\(explain.stdout)")
        let export = try await shell(sluice, ["banks", "export", "today", "--config", config.path])
        #expect(export.stdout == "\(hash)\n")
    }

    /// A running daemon (another process) sees a bank made and filled by the CLI within `banks.refreshMilliseconds`:
    /// the upload that arrives afterwards is blocked with no provider call.
    @Test func aRunningDaemonSeesBanksChangedByTheCLI() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let config = try root.writeConfigFile(endpoint: clean.endpoint, extra: #""daemon": {"rescanSeconds": 600}, "banks": {"refreshMilliseconds": 200}"#)
        let sluice = TestEnvironment.sluiceBinary
        let daemon = Process()
        daemon.executableURL = sluice
        daemon.arguments = ["run", "--config", config.path, "--log-level", "error"]
        try daemon.run()
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        let coins = TestEnvironment.fixture("images/photos/coins.png")
        try root.drop(coins, user: "early", name: "coins.png")
        var status: ItemStatus?
        for _ in 0..<200 where status != .approved {
            try await Task.sleep(nanoseconds: 50_000_000)
            status = try? await root.storeWhenReady()?.item("early/coins")?.status
        }
        #expect(status == .approved, "before the bank exists the provider decides")

        let pdq = try await shell(sluice, ["pdq", coins.path, "--config", config.path])
        let hash = try #require(pdq.stdout.split(separator: " ").first.map(String.init))
        #expect(try await shell(sluice, ["banks", "add", "known", "--action", "block", "--config", config.path]).status == 0)
        let list = root.url.appendingPathComponent("known.txt")
        try Data("\(hash)\n".utf8).writeClosingOnExec(to: list)
        #expect(try await shell(sluice, ["banks", "import", "known", list.path, "--config", config.path]).status == 0)
        try await Task.sleep(nanoseconds: 500_000_000)
        try root.drop(coins, user: "late", name: "coins.png")
        status = nil
        for _ in 0..<200 where status != .blocked {
            try await Task.sleep(nanoseconds: 50_000_000)
            status = try? await root.storeWhenReady()?.item("late/coins")?.status
        }
        #expect(status == .blocked)
        #expect(clean.received.count == 1, "only the upload before the bank was classified")
        kill(daemon.processIdentifier, SIGTERM)
        #expect(await waitForExit(daemon, seconds: 60))
        #expect(daemon.terminationStatus == 0)
    }

    /// Bad input is named: a list with a line that is not a hash imports nothing and names the line; a bad bank
    /// name, an unknown bank, and a file that is not an image (the others are still hashed).
    @Test func badListsNamesAndFilesAreNamed() async throws {
        #expect(throws: BankHashList.Problem.self) { try BankHashList.parse("# list\n\(String(repeating: "a", count: 64))\nnot-a-hash\n") }
        do {
            _ = try BankHashList.parse("\(String(repeating: "a", count: 64))\nnot-a-hash\n\(String(repeating: "b", count: 63))\n")
        } catch {
            #expect(error.lines.map(\.line) == [2, 3] && error.description.contains("line 2: \"not-a-hash\""))
        }
        let parsed = try BankHashList.parse("hash,bank\r\n\(String(repeating: "A", count: 64)),x\r\n\(String(repeating: "a", count: 64)),dup\n\n")
        #expect(parsed.count == 1)

        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let config = try root.writeConfigFile(endpoint: clean.endpoint)
        let sluice = TestEnvironment.sluiceBinary
        let badName = try await shell(sluice, ["banks", "add", "Bad Name!", "--action", "block", "--config", config.path])
        #expect(badName.status != 0 && badName.stderr.contains("must be 1–64 characters"), "\(badName.stderr)")
        let badAction = try await shell(sluice, ["banks", "add", "x", "--action", "delete", "--config", config.path])
        #expect(badAction.status != 0 && badAction.stderr.contains("block, review or allow"))
        #expect(try await shell(sluice, ["banks", "add", "x", "--action", "review", "--config", config.path]).status == 0)
        let list = root.url.appendingPathComponent("bad.txt")
        try Data("\(String(repeating: "a", count: 64))\nzz\n".utf8).writeClosingOnExec(to: list)
        let bad = try await shell(sluice, ["banks", "import", "x", list.path, "--config", config.path])
        #expect(bad.status != 0 && bad.stderr.contains("line 2: \"zz\" is not a PDQ hash"), "\(bad.stderr)")
        let unknown = try await shell(sluice, ["banks", "import", "nope", list.path, "--config", config.path])
        #expect(unknown.status != 0 && unknown.stderr.contains("line 2"), "a bad list is named before the bank is looked up")
        #expect(try await shell(sluice, ["banks", "list", "--config", config.path]).stdout.contains("x\treview\twithin 31\t0 hashes\tenabled"))

        let notImage = root.url.appendingPathComponent("notes.txt")
        try Data("hello".utf8).writeClosingOnExec(to: notImage)
        let good = TestEnvironment.fixture("images/photos/coffee.png")
        let pdq = try await shell(sluice, ["pdq", notImage.path, good.path, "--config", config.path])
        #expect(pdq.status == 1)
        #expect(pdq.stderr.contains("notes.txt") && pdq.stdout.hasSuffix(" 100 \(good.path)\n"), "\(pdq.stdout) \(pdq.stderr)")
    }

    /// `POST /v1/banks/{name}/hashes` for backends, and `pdq`/`match` on `GET /v1/items/…`.
    @Test func backendsAddHashesAndItemsShowTheirHash() async throws {
        let root = try TemporaryDataRoot()
        let services = try await APITests().makeServices(root)
        _ = try await HashBanks(store: services.store, matcher: nil).create("partner-list", action: .review)
        let app = APITests().app(services)
        let token: HTTPFields = [.authorization: "Bearer app-1"]
        let hash = String(repeating: "0f", count: 32)
        try await app.test(.router) { client in
            let body = #"{"hashes": ["\#(hash)"], "note": "from partner"}"#
            try await client.execute(uri: "/v1/banks/partner-list/hashes", method: .post, headers: token, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"added":1,"bank":"partner-list","existing":0}"# || String(buffer: response.body).contains("\"added\":1"))
            }
            try await client.execute(uri: "/v1/banks/partner-list/hashes", method: .post, headers: token, body: ByteBuffer(string: body)) { response in
                #expect(String(buffer: response.body).contains("\"existing\":1"))
            }
            try await client.execute(uri: "/v1/banks/partner-list/hashes", method: .post, headers: token,
                                     body: ByteBuffer(string: #"{"hashes": ["\#(hash)", "abc"]}"#)) { response in
                #expect(response.status == .badRequest)
                #expect(APITests.envelope(response.body).message?.contains("hashes[1] \"abc\" is not a PDQ hash") == true)
            }
            // A NUL would be stored cut short (SQLite) or refused (PostgreSQL): refused, named.
            try await client.execute(uri: "/v1/banks/partner-list/hashes", method: .post, headers: token,
                                     body: ByteBuffer(string: #"{"hashes": ["\#(String(repeating: "1e", count: 32))"], "note": "abc\u0000def"}"#)) { response in
                #expect(response.status == .badRequest)
                #expect(APITests.envelope(response.body).message == "note may not contain a NUL character (\\u0000)")
            }
            try await client.execute(uri: "/v1/banks/nope/hashes", method: .post, headers: token, body: ByteBuffer(string: body)) { response in
                #expect(response.status == .notFound)
            }
            let alice = APITests.jwt(sub: "alice", exp: Date().timeIntervalSince1970 + 600)
            try await client.execute(uri: "/v1/banks/partner-list/hashes", method: .post, headers: [.authorization: "Bearer \(alice)"],
                                     body: ByteBuffer(string: body)) { response in
                #expect(response.status == .forbidden)
            }
            try await client.execute(uri: "/v1/banks", method: .get, headers: token) { response in
                #expect(String(buffer: response.body).contains(#""name":"partner-list""#) && String(buffer: response.body).contains(#""size":1"#))
            }
            try await client.execute(uri: "/v1/items/alice/a", method: .get, headers: token) { response in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                let pdq = try #require(object["pdq"] as? [String: Any])
                #expect((pdq["hash"] as? String)?.count == 64 && pdq["quality"] as? Int == 100)
                #expect(object["match"] == nil)
            }
        }
        let status = try await shell(TestEnvironment.sluiceBinary, ["status", "alice/a", "--json", "--config",
                                                                    try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1").path])
        #expect(status.stdout.contains("\"pdq\"") && status.stdout.contains("\"quality\""), "\(status.stdout)\(status.stderr)")
    }
}
