import Foundation
import SluiceCore
import SluiceTesting
import Testing

/// Every fixture the project has (all shared images, the text fixtures, BLNS), through the real binary: the
/// daemon's verdicts and a reprocess with another provider and wordlist must stay exactly what they were
/// when `Tests/Fixtures/verdicts/corpus.json` was recorded. Any refactoring that changes a verdict, a reason,
/// an output's size or where a file went fails here.
///
/// Record anew (only when a change of verdict is intended, and say why in the commit):
/// `SLUICE_RECORD_CORPUS=1 swift test --filter CorpusVerdictTests`.
@Suite(.serialized) struct CorpusVerdictTests {
    static let golden = TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Fixtures/verdicts/corpus.json")

    /// Five classifications chosen by the size of the JPEG the provider receives, so the corpus covers every
    /// policy outcome; `shift` rotates the choice (the "new provider" of the reprocess pass).
    static func provider(shift: Int) -> @Sendable (FakeVisionServer.Received, Int) -> FakeVisionServer.Reply {
        let answers: [SafeSearch] = [
            SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .unlikely, violence: .veryUnlikely, racy: .unlikely),
            SafeSearch(adult: .possible, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .unlikely),
            SafeSearch(adult: .veryLikely, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .veryLikely),
            SafeSearch(adult: .unknown, spoof: .unknown, medical: .unknown, violence: .unknown, racy: .unknown),
            SafeSearch(adult: .unlikely, spoof: .veryLikely, medical: .possible, violence: .likely, racy: .possible),
        ]
        return { received, _ in
            guard let size = received.image.flatMap(JPEGInspector.dimensions) else { return .http(status: 400, body: "no image") }
            return .safeSearch(answers[(size.width * 31 + size.height + shift) % answers.count])
        }
    }

    static func segment(_ raw: String) -> String {
        String(raw.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") ? $0 : "_" }.prefix(100))
    }

    /// Drops every image fixture (as `{folder}/{name_ext}`) and writes the text queue; returns the config file.
    func seed(_ root: TemporaryDataRoot, endpoint: String) throws -> URL {
        var ids = Set<String>()
        let images = TestEnvironment.fixtureFiles("images", recursive: true)
        try #require(images.count > 80, "the shared image fixtures are missing")
        for file in images {
            let user = Self.segment(file.deletingLastPathComponent().lastPathComponent)
            let name = Self.segment(file.lastPathComponent)
            try #require(ids.insert("\(user)/\(name)").inserted, "two fixtures map to \(user)/\(name)")
            try root.drop(file, user: user, name: name)
        }
        var lines: [String] = []
        func add(_ prefix: String, _ texts: [String]) {
            for (index, text) in texts.enumerated() {
                let object: [String: Any] = ["id": "\(prefix)-\(index)", "userId": "t", "text": text]
                if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
                    lines.append(String(decoding: data, as: UTF8.self))
                }
            }
        }
        let fixtures = TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Fixtures/text")
        let evasions = try String(contentsOf: fixtures.appendingPathComponent("evasions.tsv"), encoding: .utf8)
            .split(separator: "\n").compactMap { $0.split(separator: "\t").first.map(String.init) }
        let innocent = try String(contentsOf: fixtures.appendingPathComponent("innocent.txt"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        let blns = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: TestEnvironment.fixture("text/blns.json"))) as? [String])
        try #require(evasions.count > 50 && innocent.count > 100 && blns.count > 400, "text fixtures are missing")
        add("ev", evasions)
        add("in", innocent + ["please frobnicate the widget", "Is the server down? We need it back up by 5pm!!"])
        add("bl", blns)
        lines += [#"{"id": "bad-1", "userId": "t"}"#, "not json", #"{"id": "bad 2", "userId": "t", "text": "x"}"#,
                  #"{"id": "bad-3", "userId": "t", "text": 5}"#, #"{"id": "bad-4", "userId": "t", "text": "x", "extra": 1}"#]
        let queue = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        try Data(lines.joined(separator: "\n").utf8).writeClosingOnExec(to: queue.appendingPathComponent("corpus.jsonl"))
        return try root.writeConfigFile(endpoint: endpoint)
    }

    /// Every stored field that a verdict decides (no timestamps, timings or attempt counts), by item id.
    func verdicts(_ config: URL) async throws -> [String: Any] {
        let list = try await shell(TestEnvironment.sluiceBinary, ["list", "--json", "--config", config.path])
        #expect(list.status == 0, "\(list.stderr)")
        let items = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        var result: [String: Any] = [:]
        for var item in items {
            for volatile in ["createdAt", "updatedAt", "timings", "attempts"] { item[volatile] = nil }
            if var priority = item["priority"] as? [String: Any] {
                priority["fallbackReason"] = priority["fallbackReason"] ?? NSNull()
                item["priority"] = priority
            }
            result[item["id"] as? String ?? "?"] = item
        }
        return result
    }

    @Test func fixtureCorpusVerdictsMatchTheRecording() async throws {
        let root = try TemporaryDataRoot()
        let first = try await FakeVisionServer.start(Self.provider(shift: 0))
        defer { first.stop() }
        let config = try seed(root, endpoint: first.endpoint)
        let run = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(first.problems.isEmpty, "\(first.problems)")
        let daemon = try await verdicts(config)
        let files = root.allFiles().filter { !$0.hasPrefix("sluice.sqlite") && $0 != "pipeline.json" }

        let second = try await FakeVisionServer.start(Self.provider(shift: 2))
        defer { second.stop() }
        let words = root.url.appendingPathComponent("house.tsv")
        try Data("frobnicate\tstrong\tother\tword\n".utf8).writeClosingOnExec(to: words)
        let newConfig = try root.writeConfigFile(endpoint: second.endpoint, extra: """
        "text": {"wordlistsDirectory": "\(TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path)", "wordlists": ["\(words.path)"]}
        """)
        let reprocess = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--json", "--config", newConfig.path])
        #expect(reprocess.status == 0, "\(reprocess.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(reprocess.stdout.utf8)) as? [String: Any])
        let reprocessed = try await verdicts(newConfig)
        let filesAfter = root.allFiles().filter { !$0.hasPrefix("sluice.sqlite") && $0 != "pipeline.json" && $0 != "house.tsv" }

        let recording: [String: Any] = [
            "daemon": daemon, "files": files, "reprocess": reprocessed, "filesAfterReprocess": filesAfter,
            "reprocessMoves": summary["moves"] ?? [:], "reprocessFailures": ((summary["failures"] as? [String]) ?? []).sorted(),
        ]
        let encoded = try JSONSerialization.data(withJSONObject: recording, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        if ProcessInfo.processInfo.environment["SLUICE_RECORD_CORPUS"] == "1" {
            try FileManager.default.createDirectory(at: Self.golden.deletingLastPathComponent(), withIntermediateDirectories: true)
            try encoded.writeClosingOnExec(to: Self.golden)
            return
        }
        let expected = try #require(try? Data(contentsOf: Self.golden), "no recording at \(Self.golden.path)")
        let expectedObject = try #require(try JSONSerialization.jsonObject(with: expected) as? [String: Any])
        for key in recording.keys.sorted() {
            let mine = try JSONSerialization.data(withJSONObject: recording[key] ?? NSNull(), options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes, .fragmentsAllowed])
            let theirs = try JSONSerialization.data(withJSONObject: expectedObject[key] ?? NSNull(), options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes, .fragmentsAllowed])
            if mine != theirs {
                let a = String(decoding: mine, as: UTF8.self).split(separator: "\n")
                let b = String(decoding: theirs, as: UTF8.self).split(separator: "\n")
                let firstDifference = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }
                Issue.record("\(key) differs from the recording; first difference at line \(firstDifference?.offset ?? min(a.count, b.count)): now \(firstDifference.map { String($0.element.0) } ?? "(end)") / recorded \(firstDifference.map { String($0.element.1) } ?? "(end)")")
            }
        }
        #expect((daemon as NSDictionary).count > 700)
    }
}
