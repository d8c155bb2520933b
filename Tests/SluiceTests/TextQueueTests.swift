#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SluiceAPI
import SluiceCore
import SluiceServices
import SluiceStore
import SluiceTesting
import Testing

/// `queues/text/*.jsonl` through the daemon: every line ends as an item, bad lines name file and line.
@Suite(.serialized) struct TextQueueTests {
    func writeQueue(_ root: TemporaryDataRoot, _ name: String, _ lines: [String]) throws {
        try root.writeQueue(name, lines)
    }

    /// The id a line without a usable id of its own is recorded under (README): its file's name and its line number,
    /// then the first 8 hex digits of the file's SHA-256 (read from where the file went in `done/`).
    func lineID(_ root: TemporaryDataRoot, _ name: String, line: Int, done: String? = nil) throws -> ItemID {
        let bytes = try Data(contentsOf: root.file("queues/text/done/\(done ?? name)"))
        return ItemID("\(name):\(line):\(ContentHash.sha256(bytes).prefix(8))")
    }

    @Test func everyLineBecomesAnItemAndTheFileMovesToDone() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "chat.jsonl", [
            #"{"id": "m1", "userId": "alice", "text": "see you at the cocktail bar in Scunthorpe", "kind": "message"}"#,
            #"{"id": "m2", "userId": "bob", "text": "what the f.u.c.k", "context": "reply to m1"}"#,
            #"{"id": "m3", "userId": "carol", "text": "damn that was close", "kind": "post"}"#,
            #"not json at all"#,
            #"{"id": "m5", "userId": "dave"}"#,
            #"{"id": "bad id!", "userId": "erin", "text": "hi"}"#,
            #"{"id": "m7", "userId": "frank", "text": "hi", "kind": "tweet"}"#,
            #"{"id": "m8", "userId": "gina", "text": ""}"#,
            "{\"id\": \"m9\", \"userId\": \"hal\", \"text\": \"" + String(repeating: "a", count: 10_001) + "\"}",
            #"{"id": "m10", "userId": "ivy", "text": 42}"#,
            "",
            #"{"id": "m11", "userId": "bad user", "text": "hi"}"#,
            #"{"id": "m12", "userId": "jo", "text": "hi", "sentAt": "2026-02-30T10:00:00Z"}"#,
            #"{"id": "m13", "userId": "kim", "text": "hi", "recipientId": "no one"}"#,
            #"{"id": "m14", "userId": "kim", "text": "hi", "recipientId": "lee", "conversationId": 7}"#,
            #"{"id": "m15", "userId": "kim", "text": "hi", "recipientId": "x/y", "conversationId": "a b"}"#,
            #"{"id": "m16", "userId": "kim", "text": "hi", "recipientId": null, "conversationId": "c1", "colour": "red", "backup": 1}"#,
        ])
        let store = try await runOnce(root, server: server)
        #expect(root.exists("queues/text/done/chat.jsonl"))
        #expect(!root.exists("queues/text/chat.jsonl"))

        let m1 = try #require(try await store.item("m1"))
        #expect(m1.kind == .text && m1.status == .approved && m1.userId == "alice")
        #expect(m1.textVerdict?.allowed == true && m1.textVerdict?.matches.isEmpty == true)
        #expect(m1.content?.kind == "message")
        #expect(m1.content?.source == "queues/text/chat.jsonl:1")
        let m2 = try #require(try await store.item("m2"))
        #expect(m2.status == .blocked)
        #expect(m2.reason == "Content contains prohibited terms: fuck")
        #expect(m2.textVerdict?.censored == "what the *******")
        #expect(m2.content?.context == "reply to m1")
        #expect(try await store.item("m3")?.status == .approved, "mild is allowed but marked")
        #expect(try await store.item("m3")?.textVerdict?.matches.first?.severity == .mild)

        let expectations: [(ItemID, String)] = [
            (try lineID(root, "chat.jsonl", line: 4), "queues/text/chat.jsonl:4: not valid JSON (Invalid value around character 1)"),
            ("m5", "queues/text/chat.jsonl:5: missing field \"text\""),
            (try lineID(root, "chat.jsonl", line: 6), "queues/text/chat.jsonl:6: bad id \"bad id!\": must match [A-Za-z0-9_.:-]{1,128}"),
            ("m7", "queues/text/chat.jsonl:7: field \"kind\" must be one of message, post, comment"),
            ("m8", "queues/text/chat.jsonl:8: text is empty"),
            ("m9", "queues/text/chat.jsonl:9: text is 10001 characters long, over the 10000 limit (text.maxLength)"),
            ("m10", "queues/text/chat.jsonl:10: field \"text\" must be a string"),
            ("m11", "queues/text/chat.jsonl:12: bad userId \"bad user\": must match [A-Za-z0-9_-]{1,128}"),
            ("m12", "queues/text/chat.jsonl:13: field \"sentAt\" must be an ISO 8601 date-time that exists"),
            ("m13", "queues/text/chat.jsonl:14: bad recipientId \"no one\": must match [A-Za-z0-9_-]{1,128}"),
            ("m14", "queues/text/chat.jsonl:15: bad conversationId (a number): must match [A-Za-z0-9_-]{1,128}"),
            // Both bad: the recipient is named first.
            ("m15", "queues/text/chat.jsonl:16: bad recipientId \"x/y\": must match [A-Za-z0-9_-]{1,128}"),
            // Unknown fields: the first in sorted order is named.
            ("m16", "queues/text/chat.jsonl:17: unknown field \"backup\""),
        ]
        for (id, reason) in expectations {
            let item = try #require(try await store.item(id), "\(id) missing")
            #expect(item.status == .rejected, "\(id)")
            #expect(item.reason == reason)
        }
        #expect(try await store.items(kind: .text).count == 16)
    }

    /// Lines are split by `\n` (a `\r` before it dropped), blank and whitespace-only lines are skipped but counted, and
    /// the last line needs no newline — over more than one of the ingestor's 4,096-line reads.
    @Test func lineNumbersHoldAcrossCRLFBlankLinesAndLongFiles() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        var text = ""
        for number in 1...5_000 {
            switch number {
            case 4_096: text += "\r\n"
            case 4_097: text += " \t \r\n"
            case 4_098: text += "\n"
            case 4_100: text += "{\"id\": \"w4100\", \"userId\": \"u\"}\r\n"
            case 5_000: text += #"{"id": "w5000", "userId": "u", "text": "last, no newline"}"#
            default: text += "{\"id\": \"w\(number)\", \"userId\": \"u\", \"text\": \"line \(number)\"}\r\n"
            }
        }
        let folder = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(text.utf8).writeClosingOnExec(to: folder.appendingPathComponent("long.jsonl"))
        let store = try await runOnce(root, server: server)
        // The CR-only and whitespace-and-CR lines are blank (skipped, counted): 5,000 - 3 blank.
        #expect(try await store.items(kind: .text).count == 4_997)
        #expect(try await store.item("w4095")?.content?.source == "queues/text/long.jsonl:4095")
        #expect(try await store.item("w4099")?.content?.source == "queues/text/long.jsonl:4099")
        #expect(try await store.item("w4100")?.reason == "queues/text/long.jsonl:4100: missing field \"text\"")
        #expect(try await store.item("w5000")?.content?.source == "queues/text/long.jsonl:5000")
        #expect(try await store.item("w5000")?.content?.text == "last, no newline")
    }

    /// Items are stamped in line order, within a batch and across batches: threads without `sentAt` are ordered by
    /// `createdAt`, listings by `updatedAt`.
    @Test func itemsAreStampedInLineOrder() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "order.jsonl", (1...4_500).map { #"{"id": "o\#($0)", "userId": "u", "text": "message \#($0)"}"# })
        let store = try await runOnce(root, server: server)
        let items = try await store.items(kind: .text)
        #expect(items.count == 4_500)
        let byLine = items.sorted { Int($0.id.rawValue.dropFirst()) ?? 0 < Int($1.id.rawValue.dropFirst()) ?? 0 }
        let first = try #require(byLine.first?.createdAt)
        let last = try #require(byLine.last?.createdAt)
        #expect(first < last, "a 4,500-line file takes more than a millisecond")
        for (earlier, later) in zip(byLine, byLine.dropFirst()) where later.createdAt < earlier.createdAt {
            Issue.record("\(later.id) is stamped before \(earlier.id)")
            break
        }
    }

    /// A NUL would be cut off by SQLite's text (and is refused by PostgreSQL's): the line is rejected, named, rather
    /// than stored shorter than the text that was judged (which a later `reprocess` would judge again, and approve).
    @Test func aNulCharacterInTheTextIsRejectedNamed() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "nul.jsonl", [#"{"id": "n1", "userId": "u", "text": "hello\u0000you are a fucking idiot"}"#,
                                           #"{"id": "n2", "userId": "u", "text": "fine", "context": "earlier\u0000message"}"#])
        let store = try await runOnce(root, server: server)
        #expect(try await store.item("n1")?.status == .rejected)
        #expect(try await store.item("n1")?.reason == #"queues/text/nul.jsonl:1: field "text" contains a NUL character (\u0000)"#)
        #expect(try await store.item("n2")?.reason == #"queues/text/nul.jsonl:2: field "context" contains a NUL character (\u0000)"#)
    }

    /// A line that is not a JSON object is rejected with what is wrong with it: the parser's account of broken JSON
    /// (where it stopped; a `\u` escape that is half of a UTF-16 surrogate pair, which no UTF-8 text can hold), or
    /// which JSON value it is instead of an object.
    @Test func aLineThatIsNotAnObjectSaysWhatItIs() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "odd.jsonl", [#"{"id": "s1", "userId": "u", "text": "\ud800 x"}"#, #"["s2", "u", "hi"]"#,
                                           #""just a string""#, #"{"id": "s4", "userId": "u", "text": "hi""#, "null"])
        let store = try await runOnce(root, server: server)
        let expected = [
            1: "queues/text/odd.jsonl:1: not valid JSON (Unexpected end of file during string parse (expected low-surrogate code point but did not find one))",
            2: "queues/text/odd.jsonl:2: not a JSON object (an array)",
            3: "queues/text/odd.jsonl:3: not a JSON object (a string)",
            4: "queues/text/odd.jsonl:4: not valid JSON (Unexpected end of file during JSON parse)",
            5: "queues/text/odd.jsonl:5: not a JSON object (null)",
        ]
        for (line, reason) in expected {
            let id = try lineID(root, "odd.jsonl", line: line)
            let item = try #require(try await store.item(id), "\(id) missing")
            #expect(item.status == .rejected && item.reason == reason, "\(item.reason ?? "nil")")
        }
    }

    /// An id twice in one batch: the last line is the one recorded, the earlier one is counted as superseded (so a
    /// replay records nothing again: "unchanged" compares a line with what is stored).
    @Test func anIdTwiceInOneBatchKeepsItsLastLineAndAReplayRecordsNothing() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let lines = [#"{"id": "d1", "userId": "u", "text": "first version"}"#,
                     #"{"id": "d2", "userId": "u", "text": "same both times"}"#,
                     #"{"id": "d1", "userId": "u", "text": "you are a fucking idiot"}"#,
                     #"{"id": "d2", "userId": "u", "text": "same both times"}"#]
        try writeQueue(root, "twice.jsonl", lines)
        let store = try await runOnce(root, server: server)
        #expect(try await store.events(of: "d1").filter { $0.type == "verdict" }.map(\.toStatus) == [.blocked])
        #expect(try await store.item("d1")?.content?.source == "queues/text/twice.jsonl:3")
        #expect(try await store.item("d2")?.content?.source == "queues/text/twice.jsonl:4")
        let config = try root.writeConfigFile(endpoint: server.endpoint)
        try writeQueue(root, "again.jsonl", lines)
        let replay = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "info"])
        #expect(replay.stderr.contains("recorded=0") && replay.stderr.contains("superseded=2") && replay.stderr.contains("unchanged=2"),
                "\(replay.stderr)")
        #expect(try await store.events(of: "d1").filter { $0.type == "verdict" }.count == 1)
        #expect(try await store.events(of: "d2").filter { $0.type == "verdict" }.count == 1)
    }

    /// Writers reuse file names (`chat.jsonl` every hour): a later file's rejected line 2 becomes an item of its own
    /// beside the earlier file's line 2 instead of being written over it (the ids differ in the files' fingerprints),
    /// and the same file dropped again records nothing.
    @Test func aReusedFileNameKeepsEveryRejectedLine() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "hourly.jsonl", [#"{"id": "h1", "userId": "u", "text": "hi"}"#, "not json"])
        let store = try await runOnce(root, server: server)
        let later = [#"{"id": "h2", "userId": "u", "text": "hello"}"#, #"[1, 2]"#]
        try writeQueue(root, "hourly.jsonl", later)
        _ = try await runOnce(root, server: server)
        #expect(root.exists("queues/text/done/hourly.2.jsonl"))
        let first = try lineID(root, "hourly.jsonl", line: 2)
        let second = try lineID(root, "hourly.jsonl", line: 2, done: "hourly.2.jsonl")
        #expect(first != second)
        #expect(try await store.item(first)?.reason == "queues/text/hourly.jsonl:2: not valid JSON (Invalid value around character 1)")
        #expect(try await store.item(second)?.reason == "queues/text/hourly.jsonl:2: not a JSON object (an array)")
        #expect(try await store.items(kind: .text).map(\.id.rawValue).sorted() == ["h1", "h2", first.rawValue, second.rawValue].sorted())
        try writeQueue(root, "hourly.jsonl", later)
        _ = try await runOnce(root, server: server)
        #expect(try await store.items(kind: .text).count == 4)
        for id in [first, second] {
            #expect(try await store.events(of: id).filter { $0.type == "verdict" }.count == 1, "\(id)")
        }
    }

    /// A file whose name has characters outside the id alphabet, or is long: its rejected lines still get ids the API
    /// takes (`[A-Za-z0-9_.:-]{1,128}`), and reading one through `GET /v1/items/{id}` finds it.
    @Test func rejectedLinesOfAnOddlyNamedFileGetIdsTheAPITakes() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let long = String(repeating: "x", count: 140) + ".jsonl"
        try writeQueue(root, "chat log (é).jsonl", ["not json"])
        try writeQueue(root, long, ["not json", #"{"id": "ok1", "userId": "u", "text": "hi"}"#])
        let store = try await runOnce(root, server: server)
        let rejected = try await store.items(kind: .text).filter { $0.status == .rejected }
        #expect(rejected.count == 2)
        for item in rejected {
            #expect(Identifiers.isValidTextID(item.id.rawValue), "\(item.id)")
        }
        let odd = try #require(rejected.first { $0.reason?.hasPrefix("queues/text/chat log (é).jsonl:1: ") == true })
        let bytes = try Data(contentsOf: root.file("queues/text/done/chat log (é).jsonl"))
        #expect(odd.id.rawValue == "chat_log____.jsonl:1:\(ContentHash.sha256(bytes).prefix(8))")
        let cut = try #require(rejected.first { $0.reason?.hasPrefix("queues/text/\(long):1: ") == true })
        #expect(cut.id.rawValue.utf8.count == 128 && cut.id.rawValue.hasPrefix("xxxxxxxx") && cut.id.rawValue.contains(":1:"))

        let services = try await Services.live(config: root.config(endpoint: server.endpoint), environment: [:], logger: quietLogger).api()
        let app = buildApplication(services: services, environment: ["SLUICE_APP_TOKENS": "app-1"], logger: quietLogger)
        try await app.test(.router) { client in
            for item in [odd, cut] {
                try await client.execute(uri: "/v1/items/\(item.id.rawValue)", method: .get, headers: [HTTPField.Name("X-App-Token")!: "app-1"]) { response in
                    #expect(response.status == .ok, "\(item.id)")
                    let object = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any]
                    #expect(object?["id"] as? String == item.id.rawValue && object?["status"] as? String == "rejected")
                }
            }
        }
    }

    /// Message ids are global: a line that reuses another user's id is rejected under its own line id, in a later
    /// file or later in the same batch, and never takes the first user's message over; a replay records nothing.
    @Test func aLineCannotTakeAnotherUsersMessageIdOver() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "one.jsonl", [#"{"id": "m2", "userId": "alice", "text": "you are a fucking idiot"}"#,
                                           #"{"id": "m5", "text": "no user"}"#])
        _ = try await runOnce(root, server: server)
        // A line rejected without a user id claims no id: its corrected resend is recorded under it.
        try writeQueue(root, "fixed.jsonl", [#"{"id": "m5", "userId": "erin", "text": "no user"}"#])
        let fixed = try await runOnce(root, server: server)
        let m5 = try await fixed.item("m5")
        #expect(m5?.userId == "erin" && m5?.status == .approved, "\(String(describing: m5))")
        let twice = [#"{"id": "m2", "userId": "bob", "text": "hello"}"#,
                     #"{"id": "m9", "userId": "carol", "text": "first"}"#, #"{"id": "m9", "userId": "dave", "text": "second"}"#]
        try writeQueue(root, "two.jsonl", twice)
        let store = try await runOnce(root, server: server)
        let m2 = try #require(try await store.item("m2"))
        #expect(m2.userId == "alice" && m2.status == .blocked && m2.content?.text == "you are a fucking idiot")
        #expect(try await store.events(of: "m2").filter { $0.type == "verdict" }.count == 1)
        let refused = try #require(try await store.item(try lineID(root, "two.jsonl", line: 1)))
        #expect(refused.userId == "bob" && refused.status == .rejected && refused.reason?.contains("id \"m2\" is another user's message") == true,
                "\(refused)")
        #expect(try await store.item("m9")?.userId == "carol")
        #expect(try await store.item(try lineID(root, "two.jsonl", line: 3))?.status == .rejected)
        // Replayed (the same lines again): nothing is recorded twice.
        try writeQueue(root, "two.jsonl", twice)
        _ = try await runOnce(root, server: server)
        #expect(try await store.events(of: try lineID(root, "two.jsonl", line: 1)).filter { $0.type == "verdict" }.count == 1)
        #expect(try await store.events(of: "m2").filter { $0.type == "verdict" }.count == 1)
    }

    /// Files written in place instead of renamed in: while their writer holds them open they are left alone (a text
    /// file's later lines would otherwise move to done/ unread, an image be rejected as truncated); once closed they
    /// are read whole.
    @Test func filesStillOpenForWritingWaitForTheirWriter() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let folder = root.file("queues/text")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let queueFile = folder.appendingPathComponent("live.jsonl")
        let text = try FileHandle.creatingClosingOnExec(queueFile)
        try text.write(contentsOf: Data("{\"id\": \"l1\", \"userId\": \"u\", \"text\": \"one\"}\n".utf8))
        let photo = try read(TestEnvironment.fixture("images/photos/rocket.jpg"))
        try FileManager.default.createDirectory(at: root.file("pending/u"), withIntermediateDirectories: true)
        let image = try FileHandle.creatingClosingOnExec(root.file("pending/u/p.jpg"))
        try image.write(contentsOf: photo.prefix(photo.count / 2))
        let store = try await runOnce(root, server: server)
        #expect(FileType(at: queueFile) == .regular && root.exists("pending/u/p.jpg"), "files still being written were taken")
        let (early, earlyImage) = (try await store.item("l1"), try await store.item("u/p"))
        #expect(early == nil && earlyImage == nil)
        // The operator's `run --once` says what it left behind.
        let config = try root.writeConfigFile(endpoint: server.endpoint)
        let once = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "warning"])
        #expect(once.status == 0 && once.stderr.contains("uploads left in pending/ for a later run") && once.stderr.contains("u/p"), "\(once.stderr)")
        try text.write(contentsOf: Data("{\"id\": \"l2\", \"userId\": \"u\", \"text\": \"two\"}\n".utf8))
        try text.close()
        try image.write(contentsOf: photo.suffix(from: photo.count / 2))
        try image.close()
        _ = try await runOnce(root, server: server)
        let (first, second, picture) = (try await store.item("l1"), try await store.item("l2"), try await store.item("u/p"))
        #expect(first?.status == .approved && second?.status == .approved)
        #expect(picture?.status == .approved)
        #expect(root.exists("queues/text/done/live.jsonl"))
    }

    /// What the queue folder holds but never reads (a link, a folder, another extension) is named in the log.
    @Test func entriesThatAreNeverReadAreNamed() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "real.jsonl", [#"{"id": "r1", "userId": "u", "text": "hi"}"#])
        let folder = root.file("queues/text")
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("link.jsonl"), withDestinationURL: folder.appendingPathComponent("real.jsonl"))
        try Data("{}".utf8).writeClosingOnExec(to: folder.appendingPathComponent("UP.JSONL"))
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        let config = try root.writeConfigFile(endpoint: server.endpoint)
        let run = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "warning"])
        #expect(run.status == 0)
        for (name, why) in [("link.jsonl", "symbolic link"), ("UP.JSONL", "does not end in .jsonl"), ("sub", "is a folder")] {
            #expect(run.stderr.contains("text queue entry ignored") && run.stderr.contains("file=\(name)") && run.stderr.contains(why), "\(name): \(run.stderr)")
        }
        #expect(!run.stderr.contains("file=done"))
    }

    /// A writer that reuses a file name: every finished file is kept in done/, none replaced.
    @Test func aReusedFileNameKeepsEveryFinishedFile() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        for (index, id) in ["r1", "r2", "r3"].enumerated() {
            try writeQueue(root, "z.jsonl", ["{\"id\": \"\(id)\", \"userId\": \"u\", \"text\": \"file \(index + 1)\"}"])
            try await runOnce(root, server: server)
        }
        let kept = try ["z.jsonl", "z.2.jsonl", "z.3.jsonl"].map { try String(contentsOf: root.file("queues/text/done/\($0)"), encoding: .utf8) }
        #expect(kept.map { $0.contains("file 1") } == [true, false, false])
        #expect(kept.map { $0.contains("file 2") } == [false, true, false])
        #expect(kept.map { $0.contains("file 3") } == [false, false, true])
        // Moved, not copied: the queue folder no longer holds the name.
        #expect(FileType(at: root.file("queues/text/z.jsonl")) == .missing)
    }

    /// The daemon stores the whole priority answer, seed 004's optional fields included, as `sluice priority` and the
    /// callable API give it.
    @Test func theStoredPriorityKeepsSeed004sOptionalFields() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "p.jsonl", [#"{"id": "p1", "userId": "u", "text": "can you send me the invoice by friday?"}"#])
        let store = try await runOnce(root, server: server)
        let priority = try #require(try await store.item("p1")?.priority)
        #expect(priority.priority == "medium")
        #expect(priority.confidence != nil && priority.timeframe != nil && priority.category != nil && priority.recommendedAction != nil,
                "\(priority)")
        #expect(try JSONDecoder().decode(PriorityVerdict.self, from: Data(priority.canonicalJSON.utf8)) == priority, "the canonical JSON keeps every field")
    }

    @Test func sameTextIsANoOpAndChangedTextIsJudgedAgain() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "a.jsonl", [#"{"id": "x1", "userId": "u", "text": "hello there"}"#])
        try await runOnce(root, server: server)
        try writeQueue(root, "b.jsonl", [#"{"id": "x1", "userId": "u", "text": "hello there"}"#])
        try await runOnce(root, server: server)
        let store = try await root.store()
        #expect(try await store.events(of: "x1").filter { $0.type == "verdict" }.count == 1)
        try writeQueue(root, "c.jsonl", [#"{"id": "x1", "userId": "u", "text": "hello sh1thead"}"#])
        try await runOnce(root, server: server)
        let verdicts = try await store.events(of: "x1").filter { $0.type == "verdict" }
        #expect(verdicts.map(\.toStatus) == [.approved, .blocked])
        #expect(root.exists("queues/text/done/a.jsonl") && root.exists("queues/text/done/b.jsonl") && root.exists("queues/text/done/c.jsonl"))
    }

    @Test func killNineMidQueueLosesNoLineAndCountsNoneTwice() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let count = 30_000
        var lines: [String] = []
        for index in 0..<count {
            let text = index % 7 == 0 ? "you are a b!tch number \(index)" : "ordinary message number \(index) about class and grass"
            lines.append(#"{"id": "q\#(index)", "userId": "u\#(index % 50)", "text": "\#(text)"}"#)
        }
        try writeQueue(root, "big.jsonl", lines)
        let config = try root.writeConfigFile(endpoint: server.endpoint)
        let daemon = Process()
        daemon.executableURL = TestEnvironment.sluiceBinary
        daemon.arguments = ["run", "--config", config.path, "--log-level", "error"]
        try daemon.run()
        var recorded = 0
        for _ in 0..<400 {
            try await Task.sleep(nanoseconds: 25_000_000)
            if let store = await root.storeWhenReady() { recorded = (try? await store.items(status: nil, kind: .text, limit: 2000).count) ?? 0 }
            if recorded >= 1000 { break }
        }
        kill(daemon.processIdentifier, SIGKILL)
        await waitForExit(daemon)
        let rerun = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let store = try await root.store()
        let items = try await store.items(kind: .text)
        #expect(items.count == count)
        #expect(items.filter { $0.status == .blocked }.count == (0..<count).filter { $0 % 7 == 0 }.count)
        for id in ["q0", "q1", "q14999", "q29999"] {
            #expect(try await store.events(of: id).filter { $0.type == "verdict" }.count == 1, "\(id)")
        }
        #expect(root.exists("queues/text/done/big.jsonl"))
    }

    @Test func statusJSONShowsTheTextVerdict() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try writeQueue(root, "s.jsonl", [#"{"id": "s1", "userId": "u", "text": "total sh1t"}"#])
        let config = try root.writeConfigFile(endpoint: server.endpoint)
        #expect(try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"]).status == 0)
        let status = try await shell(TestEnvironment.sluiceBinary, ["status", "s1", "--json", "--config", config.path])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "text")
        #expect(object["status"] as? String == "blocked")
        let text = try #require(object["text"] as? [String: Any])
        #expect(text["allowed"] as? Bool == false)
        #expect(text["reason"] as? String == "Content contains prohibited terms: shit")
        #expect(text["censored"] as? String == "total ****")
        let match = try #require((text["matches"] as? [[String: Any]])?.first)
        #expect(match["term"] as? String == "shit" && match["start"] as? Int == 6 && match["end"] as? Int == 10)
        #expect(match["severity"] as? String == "strong")
        // README "JSON fields": every documented field is present, null when unknown, inside the objects too.
        let message = try #require(object["message"] as? [String: Any])
        #expect(Set(message.keys) == ["text", "context", "kind", "source"] && message["context"] is NSNull && message["kind"] is NSNull,
                "\(message)")
        #expect(Set((object["timings"] as? [String: Any] ?? [:]).keys) == ["decodeMs", "classifyMs", "writeMs", "totalMs"])
        #expect(Set((object["outputs"] as? [String: Any] ?? [:]).keys) == ["approved", "thumbnail", "approvedBytes", "thumbnailBytes"])
        for event in object["history"] as? [[String: Any]] ?? [] {
            #expect(Set(event.keys) == ["itemId", "at", "type", "fromStatus", "toStatus", "stage", "detail"], "\(event)")
        }
        #expect((object["history"] as? [Any])?.isEmpty == false)
    }

    @Test func checkTextCLI() async throws {
        let root = try TemporaryDataRoot()
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let single = try await shell(TestEnvironment.sluiceBinary, ["check-text", "nice cocktail, f u c k", "--json", "--config", config.path])
        #expect(single.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(single.stdout.utf8)) as? [String: Any])
        #expect(object["allowed"] as? Bool == false)
        let file = root.url.appendingPathComponent("lines.txt")
        var bytes = Data("hello\nsh1t happens\n".utf8)
        bytes.append(contentsOf: [0x62, 0xFF, 0x0A])
        bytes.append(Data("\nScunthorpe\n".utf8))
        try bytes.writeClosingOnExec(to: file)
        let many = try await shell(TestEnvironment.sluiceBinary, ["check-text", "--file", file.path, "--json", "--config", config.path])
        #expect(many.status == 0)
        let lines = many.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        let parsed = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(parsed[0]["allowed"] as? Bool == true)
        #expect(parsed[1]["allowed"] as? Bool == false)
        #expect(parsed[2]["error"] as? String == "text is not valid UTF-8" && parsed[2]["line"] as? Int == 3)
        #expect(parsed[3]["error"] as? String == "text is empty")
        #expect(parsed[4]["allowed"] as? Bool == true)
        let usage = try await shell(TestEnvironment.sluiceBinary, ["check-text", "--config", config.path])
        #expect(usage.status != 0)
        let missing = try await shell(TestEnvironment.sluiceBinary, ["check-text", "--file", "/nonexistent", "--config", config.path])
        #expect(missing.status != 0 && missing.stderr.contains("cannot read /nonexistent"))
    }
}
