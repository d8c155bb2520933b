#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOFoundationCompat
import PostgresNIO
import SluiceCore
@testable import SluiceStore
import SluiceTesting
import Testing

/// Several daemons and API servers as separate processes over one shared data root and one PostgreSQL database,
/// one daemon killed with SIGKILL mid-run: every upload and every queue line ends with exactly one verdict, every
/// output is written once, no temp file is left, and both API servers answer alike.
@Suite(.serialized, .enabled(if: StoreBackend.postgresURL != nil, "SLUICE_TEST_POSTGRES_URL is not set"))
struct ScaleOutTests {
    static let uploads = 300
    static let files = 30
    static let linesPerFile = 1_000

    @Test func threeDaemonsAndTwoAPIServersShareOnePostgreSQL() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.start { _, _ in .delayed(seconds: 0.05, then: .safeSearch(cleanResult)) }
        defer { vision.stop() }
        var location = try PostgresLocation(url: try #require(StoreBackend.postgresURL))
        location.schema = "scale_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }
        var daemonLocation = location
        daemonLocation.maxConnections = 4
        let config = try root.writeConfigFile(endpoint: vision.endpoint, extra: """
            "store": {"url": "\(daemonLocation.url)"}, "daemon": {"rescanSeconds": 1, "leaseSeconds": 10}
            """)
        let store = try await PostgresStore(location, password: nil)

        // Half the uploads and every queue file are there before the daemons start (they race for them at once);
        // the other half arrive while they run.
        let photos = ["rocket.jpg", "coins.png", "brick.png"].map { TestEnvironment.fixture("images/photos/\($0)") }
        func dropUploads(_ range: Range<Int>) throws {
            for index in range {
                let photo = photos[index % photos.count]
                try root.drop(photo, user: "user\(index % 20)", name: "img\(index).\(photo.pathExtension)")
            }
        }
        try dropUploads(0..<(Self.uploads / 2))
        for file in 0..<Self.files {
            var lines: [String] = []
            for line in 0..<Self.linesPerFile {
                let index = file * Self.linesPerFile + line
                let text = index % 7 == 0 ? "you are a b!tch number \(index)" : "ordinary message number \(index) about class and grass"
                lines.append(#"{"id": "q\#(index)", "userId": "u\#(index % 50)", "text": "\#(text)"}"#)
            }
            try root.writeQueue("part-\(file).jsonl", lines)
        }

        var environment = ProcessInfo.processInfo.environment
        environment["SLUICE_APP_TOKENS"] = "scale-token"
        environment.removeValue(forKey: "SLUICE_TEST_STORE_URL")
        func start(_ arguments: [String]) throws -> Process {
            let process = Process()
            process.executableURL = TestEnvironment.sluiceBinary
            process.arguments = arguments + ["--config", config.path, "--log-level", "error"]
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            return process
        }
        let ports = [freeLoopbackPort(), freeLoopbackPort()]
        let daemons = try (0..<3).map { _ in try start(["run"]) }
        let servers = try ports.map { try start(["serve", "--port", "\($0)"]) }
        defer {
            for process in daemons + servers where process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }

        func count(_ sql: String) async throws -> Int {
            try await store.rows("count", PostgresQuery(unsafeSQL: sql)).first?.decode(Int.self) ?? 0
        }
        let finalImages = "SELECT COUNT(*) FROM item WHERE kind = 'image' AND status IN ('approved', 'blocked', 'review', 'rejected')"
        let finalTexts = "SELECT COUNT(*) FROM item WHERE kind = 'text' AND status IN ('approved', 'blocked', 'review', 'rejected')"

        // Kill one daemon without warning once it is mid-run.
        var judgedAtKill = 0
        let killDeadline = Date().addingTimeInterval(120)
        while judgedAtKill < 40, Date() < killDeadline {
            try await Task.sleep(nanoseconds: 50_000_000)
            judgedAtKill = try await count(finalImages)
        }
        kill(daemons[0].processIdentifier, SIGKILL)
        await waitForExit(daemons[0])
        #expect(judgedAtKill >= 40 && judgedAtKill < Self.uploads, "killed after \(judgedAtKill) of \(Self.uploads) uploads")
        try dropUploads((Self.uploads / 2)..<Self.uploads)

        let total = Self.files * Self.linesPerFile
        let doneDeadline = Date().addingTimeInterval(300)
        var images = 0
        var texts = 0
        while (images < Self.uploads || texts < total), Date() < doneDeadline {
            try await Task.sleep(nanoseconds: 200_000_000)
            images = try await count(finalImages)
            texts = try await count(finalTexts)
        }
        #expect(images == Self.uploads && texts == total, "\(images) uploads and \(texts) lines judged")
        // The survivors finish what they hold, then stop on SIGTERM.
        for daemon in daemons.dropFirst() {
            kill(daemon.processIdentifier, SIGTERM)
            #expect(await waitForExit(daemon, seconds: 60), "a daemon did not stop on SIGTERM")
        }

        // Exactly one verdict per upload and per line.
        #expect(try await count("SELECT COUNT(*) FROM item WHERE kind = 'image' AND status = 'approved'") == Self.uploads)
        #expect(try await count("SELECT COUNT(*) FROM item WHERE kind = 'text' AND status = 'blocked'")
                == (0..<total).filter { $0 % 7 == 0 }.count)
        #expect(try await count("SELECT COUNT(DISTINCT itemId) FROM event WHERE type = 'verdict'") == Self.uploads + total)
        let twice = try await store.rows("find double verdicts", """
            SELECT itemId, string_agg(stage || ' ' || toStatus || ' ' || to_char(at, 'HH24:MI:SS.MS'), '; ' ORDER BY seq) FROM event
            WHERE type = 'verdict' GROUP BY itemId HAVING COUNT(*) > 1 LIMIT 5
            """).map { try $0.decode((String, String).self) }
        #expect(twice.isEmpty, "judged twice: \(twice)")
        #expect(try await store.workLeases(now: Date()).isEmpty, "every claim was released or taken over")

        // Every output once, nothing left behind.
        let files = root.allFiles()
        #expect(files.filter { $0.hasPrefix("approved/") }.count == Self.uploads)
        #expect(files.filter { $0.hasPrefix("thumbnails/") }.count == Self.uploads)
        #expect(files.filter { $0.hasPrefix("pending/") }.isEmpty, "\(files.filter { $0.hasPrefix("pending/") }.prefix(5))")
        #expect(files.filter { $0.hasPrefix("queues/text/done/") }.count == Self.files)
        #expect(files.filter { $0.contains(FileOps.tempMarker) }.isEmpty, "orphan temp files")
        #expect(vision.problems.isEmpty)

        // Both API servers answer alike (same store).
        func get(_ port: Int, _ path: String) async throws -> (Int, Data) {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
            request.headers.add(name: "X-App-Token", value: "scale-token")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            return (Int(response.status.code), Data(buffer: try await response.body.collect(upTo: 1 << 20)))
        }
        for port in ports {
            var healthy = false
            let deadline = Date().addingTimeInterval(30)
            while !healthy, Date() < deadline {
                healthy = (try? await get(port, "/healthz").0) == 200
                if !healthy { try await Task.sleep(nanoseconds: 100_000_000) }
            }
            try #require(healthy, "sluice serve on \(port) did not answer")
        }
        let paths = (0..<10).map { "/v1/items/user\(($0 * 31) % 20)/img\($0 * 31)" } + (0..<10).map { "/v1/items/q\($0 * 2_999)" }
        for path in paths {
            let (firstCode, first) = try await get(ports[0], path)
            let (secondCode, second) = try await get(ports[1], path)
            #expect(firstCode == 200 && secondCode == 200, "\(path): \(firstCode), \(secondCode)")
            #expect(first == second, "\(path) differs between the API servers")
        }
        for server in servers { kill(server.processIdentifier, SIGTERM) }
        for server in servers { #expect(await waitForExit(server, seconds: 30)) }
        await store.close()
    }

    /// `sluice reprocess` started twice at once with the same arguments splits the run's batches: every image is
    /// re-judged exactly once, both processes do part of it, and the run is closed by the one that finishes last.
    @Test func twoReprocessRunsSplitOneBacklog() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        var location = try PostgresLocation(url: try #require(StoreBackend.postgresURL))
        location.schema = "split_" + UUID().uuidString.lowercased().filter { $0.isLetter || $0.isNumber }
        let storeEntry = #""store": {"url": "\#(location.url)"}"#
        let photos = TestEnvironment.fixtureFiles("images/photos")
        try #require(!photos.isEmpty, "the photo fixtures (../shared/fixtures/images/photos) are missing")
        let total = 60
        for index in 0..<total {
            let photo = photos[index % photos.count]
            try root.drop(photo, user: "s", name: "p\(index).\(photo.pathExtension)")
        }
        let config = try root.writeConfigFile(endpoint: clean.endpoint, extra: storeEntry)
        let judged = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"])
        #expect(judged.status == 0, "\(judged.stderr)")

        // Slow enough (60 × 0.3 s at 2 in flight: ~9 s for one process alone) that the second process, however late
        // a loaded machine starts it, joins the run before the first has finished it.
        let slowBlock = try await FakeVisionServer.start { _, _ in .delayed(seconds: 0.3, then: .safeSearch(BacklogTests.blocked)) }
        defer { slowBlock.stop() }
        let blockConfig = try root.writeConfigFile(endpoint: slowBlock.endpoint, extra: storeEntry)
        let arguments = ["reprocess", "--kind", "image", "--batch-size", "5", "--concurrency", "2", "--json", "--config", blockConfig.path]
        async let first = shell(TestEnvironment.sluiceBinary, arguments)
        async let second = shell(TestEnvironment.sluiceBinary, arguments)
        let runs = try await [first, second]
        var processed: [Int] = []
        for run in runs {
            #expect(run.status == 0, "\(run.stderr)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
            processed.append(summary["processed"] as? Int ?? -1)
        }
        #expect(processed.reduce(0, +) == total && processed.allSatisfy { $0 > 0 }, "each run's share: \(processed)")
        #expect(slowBlock.received.count == total, "each image classified once, not \(slowBlock.received.count) times")

        let store = try await PostgresStore(location, password: nil)
        #expect(try await store.items(kind: .image).allSatisfy { $0.status == .blocked })
        let twice = try await store.rows("find double reprocessing", """
            SELECT itemId FROM event WHERE type = 'reprocess' GROUP BY itemId HAVING COUNT(*) <> 1
            """).map { try $0.decode(String.self) }
        #expect(twice.isEmpty, "re-judged other than once: \(twice)")
        #expect(try await store.rows("read runs", "SELECT state FROM reprocessRun").map { try $0.decode(String.self) } == ["finished"])
        await store.close()
    }
}
