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

/// Whether a message may be delivered, as an app sees it: relations set through the callables and REST, message
/// lines through the daemon's text queue, verdicts in the store.
@Suite(.serialized) struct ConversationRulesTests {
    static func application(_ root: TemporaryDataRoot, edit: (inout PipelineConfig) -> Void = { _ in }) async throws -> some ApplicationProtocol {
        let config = root.config(endpoint: "http://127.0.0.1:9/v1", edit: edit)
        return buildApplication(services: try await Services.live(config: config, environment: [:], logger: quietLogger).api(),
                                environment: SeedClientTests.environment, logger: quietLogger)
    }

    static func call(_ client: some TestClientProtocol, _ name: String, as user: String, _ data: String) async throws -> Any? {
        try await client.execute(uri: "/v1/functions/\(name)", method: .post, headers: SeedClientTests.user(user),
                                 body: ByteBuffer(string: #"{"data": \#(data)}"#)) { response in
            #expect(response.status == .ok, "\(name) \(data): \(String(buffer: response.body))")
            return SeedClientTests.json(response.body)["result"]
        }
    }

    /// Writes message lines into the text queue (a new file each time) and runs the daemon once.
    static func send(_ root: TemporaryDataRoot, _ lines: [[String: Any]], edit: @escaping (inout PipelineConfig) -> Void = { _ in }) async throws -> any StatusStore {
        let queue = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        let text = try lines.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }.joined(separator: "\n")
        try Data(text.utf8).writeClosingOnExec(to: queue.appendingPathComponent("m-\(UUID().uuidString).jsonl"))
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        return try await runOnce(root, server: vision, edit: edit)
    }

    // MARK: Seed 003: who may message whom

    struct Scenario: CustomStringConvertible, Sendable {
        var senderFollows: Bool
        var recipientFollows: Bool
        var privacy: MessagePrivacy
        var priorMessages: Int
        var block: String  // none, recipient, sender

        var description: String {
            "sender follows \(senderFollows), recipient follows \(recipientFollows), \(privacy.rawValue), \(priorMessages) sent, block \(block)"
        }

        /// Seed 003 (and issue 16's reading of it) as a table, written out independently of the implementation.
        var expected: (allowed: Bool, remaining: Int?) {
            if block != "none" { return (false, 0) }
            if privacy == .anyone { return (true, nil) }
            if recipientFollows { return (true, nil) }  // mutual, or the recipient follows the sender
            return priorMessages == 0 ? (true, 1) : (false, 0)
        }
    }

    static let scenarios: [Scenario] = {
        var all: [Scenario] = []
        for senderFollows in [false, true] {
            for recipientFollows in [false, true] {
                for privacy in MessagePrivacy.allCases {
                    for prior in [0, 1] {
                        for block in ["none", "recipient", "sender"] {
                            all.append(Scenario(senderFollows: senderFollows, recipientFollows: recipientFollows, privacy: privacy,
                                                priorMessages: prior, block: block))
                        }
                    }
                }
            }
        }
        return all
    }()

    @Test func seed003RulesForEveryFollowPrivacyHistoryAndBlock() async throws {
        let root = try TemporaryDataRoot()
        // The relations, set the way an app does: callables with each user's token.
        try await Self.application(root).test(.router) { client in
            for (index, scenario) in Self.scenarios.enumerated() {
                let (sender, recipient) = ("s\(index)", "r\(index)")
                if scenario.senderFollows { _ = try await Self.call(client, "follow", as: sender, #"{"userId": "\#(recipient)"}"#) }
                if scenario.recipientFollows { _ = try await Self.call(client, "follow", as: recipient, #"{"userId": "\#(sender)"}"#) }
                _ = try await Self.call(client, "setMessagePrivacy", as: recipient, #"{"messagePrivacy": "\#(scenario.privacy.rawValue)"}"#)
            }
        }
        // Earlier messages go through the daemon (a message request is counted when it is delivered as one).
        var earlier: [[String: Any]] = []
        for (index, scenario) in Self.scenarios.enumerated() where scenario.priorMessages > 0 {
            earlier.append(["id": "prior-\(index)", "userId": "s\(index)", "recipientId": "r\(index)", "text": "hi there"])
        }
        _ = try await Self.send(root, earlier)
        try await Self.application(root).test(.router) { client in
            for (index, scenario) in Self.scenarios.enumerated() where scenario.block != "none" {
                let (blocker, blocked) = scenario.block == "recipient" ? ("r\(index)", "s\(index)") : ("s\(index)", "r\(index)")
                _ = try await Self.call(client, "blockUser", as: blocker, #"{"userId": "\#(blocked)"}"#)
            }
            for (index, scenario) in Self.scenarios.enumerated() {
                let result = try #require(try await Self.call(client, "canMessage", as: "s\(index)", #"{"recipientId": "r\#(index)"}"#) as? [String: Any])
                let expected = scenario.expected
                #expect(result["allowed"] as? Bool == expected.allowed, "\(scenario): \(result)")
                #expect((result["requestsRemaining"] as? Int) == expected.remaining, "\(scenario): \(result)")
                #expect(result["reason"] is String && result.keys.contains("requestsRemaining"))
            }
        }
        // And the rules stage agrees with canMessage: one message per scenario now.
        let store = try await Self.send(root, Self.scenarios.indices.map { ["id": "now-\($0)", "userId": "s\($0)", "recipientId": "r\($0)", "text": "hello again"] })
        for (index, scenario) in Self.scenarios.enumerated() {
            let item = try #require(try await store.item("now-\(index)"))
            #expect(item.status == (scenario.expected.allowed ? .approved : .blocked), "\(scenario): \(item.status) \(item.reason ?? "")")
            if scenario.block == "recipient" {
                #expect(item.reason == "recipient has blocked the sender" && item.conversation?.autoReply == "This user has blocked you")
            } else if !scenario.expected.allowed && scenario.block == "none" {
                #expect(item.reason?.hasPrefix("message request limit:") == true, "\(item.reason ?? "")")
            }
        }
    }

    // MARK: Seed 004: block → blocked message with auto-reply → unblock → delivered

    /// A message request counted before a crash (its counts are written before its verdict) is that message's own
    /// request when the line is read again: not "already sent", which blocked the message by itself.
    @Test func aReplayedRequestIsNotBlockedByItsOwnRequest() async throws {
        let root = try TemporaryDataRoot()
        let store = try await root.store()
        // What a daemon killed between the rules' write and the verdicts' leaves: the request, no item.
        _ = try await store.recordMessageTally(MessageTally(requests: [.init(sender: "sam", recipient: "tia", itemId: "r1")]), now: Date())
        let after = try await Self.send(root, [["id": "r1", "userId": "sam", "recipientId": "tia", "text": "hi, saw your stall today"],
                                              ["id": "r2", "userId": "sam", "recipientId": "tia", "text": "hello again"]])
        let r1 = try #require(try await after.item("r1"))
        #expect(r1.status == .approved, "\(r1.reason ?? "")")
        let r2 = try #require(try await after.item("r2"))
        #expect(r2.status == .blocked && r2.reason?.contains("Message request already sent") == true, "a second message is still refused: \(r2.reason ?? "")")
        // Its id sent again with other words after the recipient blocked the sender: the block applies.
        let services = try await Services.live(config: root.config(endpoint: "http://127.0.0.1:9/v1"), environment: [:], logger: quietLogger)
        _ = try await services.relations.block("tia", "sam", on: true, at: Date())
        let again = try await Self.send(root, [["id": "r1", "userId": "sam", "recipientId": "tia", "text": "why did you block me"]])
        let edited = try #require(try await again.item("r1"))
        #expect(edited.status == .blocked && edited.reason?.contains(MessagingPermission.recipientBlockedSender) == true, "\(edited.reason ?? "")")
    }

    /// A queue file read again (after a crash, or dropped again) counts none of its recorded messages again: 15 in a
    /// minute, read twice, and one more are 16 for the flood limit (20), not 31.
    @Test func aFileReadAgainIsNotCountedTwiceBySpamCounters() async throws {
        let root = try TemporaryDataRoot()
        let lines: [[String: Any]] = (0..<15).map { ["id": "a\($0)", "userId": "xia", "recipientId": "yan", "text": "note \($0)", "sentAt": Self.at($0)] }
        try await Self.readTwice(root, "a.jsonl", lines)
        let store = try await Self.send(root, [["id": "a15", "userId": "xia", "recipientId": "yan", "text": "one more", "sentAt": Self.at(15)]])
        let last = try #require(try await store.item("a15"))
        #expect(last.status == .approved, "\(last.reason ?? "")")
        #expect(try await store.items(kind: .text).filter { $0.status != .approved }.isEmpty)
    }

    /// The same when the file starts with lines whose ids are not valid (recorded under their line ids): the check
    /// for a file read before looks their line ids up, as they are stored, not the ids as written.
    @Test func aFileStartingWithBadIdsReadAgainIsNotCountedTwice() async throws {
        let root = try TemporaryDataRoot()
        let bad: [[String: Any]] = (0..<16).map { ["id": "bad id \($0)", "userId": "xia", "recipientId": "yan", "text": "hello"] }
        let lines = bad + (0..<15).map { ["id": "b\($0)", "userId": "xia", "recipientId": "yan", "text": "note \($0)", "sentAt": Self.at($0)] }
        try await Self.readTwice(root, "b.jsonl", lines)
        let store = try await Self.send(root, [["id": "b15", "userId": "xia", "recipientId": "yan", "text": "one more", "sentAt": Self.at(15)]])
        #expect(try await store.items(kind: .text).filter { $0.status == .rejected }.count == 16, "the bad lines are rejected, once each")
        let last = try #require(try await store.item("b15"))
        #expect(last.status == .approved, "\(last.reason ?? "")")
        #expect(try await store.items(kind: .text).filter { $0.status != .approved && $0.status != .rejected }.isEmpty)
    }

    /// A text sent once is held by the daemon's rules rather than written, and written when the daemon stops: the
    /// same text to five more recipients in the next run is the sixth recipient in ten minutes, over the limit of five.
    @Test func aTextSentOnceInOneRunCountsInTheNext() async throws {
        let root = try TemporaryDataRoot()
        let services = try await Services.live(config: root.config(endpoint: "http://127.0.0.1:9/v1"), environment: [:], logger: quietLogger)
        for index in 0..<6 { try await services.relations.setProfile(RelationUser(userId: "r\(index)", messagePrivacy: .anyone)) }
        func line(_ index: Int) -> [String: Any] {
            ["id": "d\(index)", "userId": "zed", "recipientId": "r\(index)", "text": "cheap watches today", "sentAt": Self.at(index)]
        }
        _ = try await Self.send(root, [line(0)])
        let store = try await Self.send(root, (1..<6).map(line))
        var statuses: [ItemStatus?] = []
        for index in 0..<6 { statuses.append(try await store.item(ItemID("d\(index)"))?.status) }
        #expect(statuses == [.approved, .approved, .approved, .approved, .approved, .review], "\(statuses)")
        let sixth = try #require(try await store.item("d5"))
        #expect(sixth.reason?.contains("spam.duplicates: the same text to 6 recipients") == true, "\(sixth.reason ?? "")")
    }

    /// `lines` as queue file `name`, read twice (as after a crash, or dropped again), with "yan" taking messages from
    /// anyone.
    static func readTwice(_ root: TemporaryDataRoot, _ name: String, _ lines: [[String: Any]]) async throws {
        let services = try await Services.live(config: root.config(endpoint: "http://127.0.0.1:9/v1"), environment: [:], logger: quietLogger)
        try await services.relations.setProfile(RelationUser(userId: "yan", messagePrivacy: .anyone))
        let text = try lines.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }.joined(separator: "\n")
        let queue = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        for _ in 0..<2 {
            try Data(text.utf8).writeClosingOnExec(to: queue.appendingPathComponent(name))
            _ = try await send(root, [])
        }
    }

    @Test func seed004BlockFlowEndToEnd() async throws {
        let root = try TemporaryDataRoot()
        try await Self.application(root).test(.router) { client in
            _ = try await Self.call(client, "follow", as: "rita", #"{"userId": "mallory"}"#)
            _ = try await Self.call(client, "follow", as: "mallory", #"{"userId": "rita"}"#)
            let blocked = try await Self.call(client, "blockUser", as: "rita", #"{"blockerID": "rita", "blockedID": "mallory", "conversationID": "c1"}"#)
            #expect((blocked as? [String: Any])?["success"] as? Bool == true)
            #expect(try await Self.call(client, "isBlocked", as: "rita", #"{"blockerID": "rita", "blockedID": "mallory"}"#) as? Bool == true)
            #expect(try await Self.call(client, "isBlocked", as: "mallory", #"{"userId": "rita"}"#) as? Bool == false)
            // Users act for themselves only.
            try await client.execute(uri: "/v1/functions/blockUser", method: .post, headers: SeedClientTests.user("mallory"),
                                     body: ByteBuffer(string: #"{"data": {"blockerID": "rita", "blockedID": "x"}}"#)) { response in
                #expect(response.status == .forbidden)
            }
            // A backend acting for one user (X-User-Id) cannot name another as the actor: which one acts is not guessed.
            var acting: HTTPFields = [HTTPField.Name("X-App-Token")!: "app-1", .contentType: "application/json"]
            acting[HTTPField.Name("X-User-Id")!] = "u1"
            for (name, data, field) in [("blockUser", #"{"blockerID": "u3", "blockedID": "u4"}"#, "blockerID"),
                                        ("reportUser", #"{"reporterID": "u3", "reportedID": "u4", "reason": "rude"}"#, "reporterID")] {
                try await client.execute(uri: "/v1/functions/\(name)", method: .post, headers: acting, body: ByteBuffer(string: #"{"data": \#(data)}"#)) { response in
                    #expect(response.status == .forbidden && String(buffer: response.body).contains("X-User-Id (u1) and data.\(field) (u3) name different users"),
                            "\(name): \(String(buffer: response.body))")
                }
            }
            #expect(try await Self.call(client, "isBlocked", as: "u3", #"{"blockerID": "u3", "blockedID": "u4"}"#) as? Bool == false)
            try await client.execute(uri: "/v1/functions/blockUser", method: .post, headers: SeedClientTests.user("rita"),
                                     body: ByteBuffer(string: #"{"data": {"userId": "rita"}}"#)) { response in
                #expect(response.status == .conflict && String(buffer: response.body).contains("cannot block themselves"))
            }
            try await client.execute(uri: "/v1/functions/blockUser", method: .post, headers: SeedClientTests.user("rita"),
                                     body: ByteBuffer(string: #"{"data": {"userId": "../x"}}"#)) { response in
                #expect(response.status == .badRequest)
            }
        }
        var store = try await Self.send(root, [["id": "m1", "senderId": "mallory", "recipientId": "rita", "conversationId": "c1", "text": "hey, you there?"]])
        let stopped = try #require(try await store.item("m1"))
        #expect(stopped.status == .blocked && stopped.reason == "recipient has blocked the sender")
        #expect(stopped.conversation?.autoReply == "This user has blocked you")
        #expect(stopped.content?.recipientId == "rita" && stopped.content?.conversationId == "c1")
        let status = try await shell(TestEnvironment.sluiceBinary, ["status", "m1", "--json", "--config", try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1").path])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect((json["conversation"] as? [String: Any])?["autoReply"] as? String == "This user has blocked you", "\(status.stdout)")
        #expect((json["message"] as? [String: Any])?["recipientId"] as? String == "rita")

        try await Self.application(root).test(.router) { client in
            // The sender's app reads the auto-reply over HTTP too.
            try await client.execute(uri: "/v1/items/m1", method: .get, headers: SeedClientTests.user("mallory")) { response in
                #expect(response.status == .ok && SeedClientTests.json(response.body)["autoReply"] as? String == "This user has blocked you",
                        "\(String(buffer: response.body))")
            }
            _ = try await Self.call(client, "unblockUser", as: "rita", #"{"blockerID": "rita", "blockedID": "mallory"}"#)
        }
        store = try await Self.send(root, [["id": "m2", "senderId": "mallory", "recipientId": "rita", "conversationId": "c1", "text": "sorry about earlier"]])
        #expect(try await store.item("m2")?.status == .approved)
        // The blocked message stays blocked when the backlog is reprocessed with the filter.
        let reprocess = try await shell(TestEnvironment.sluiceBinary, ["reprocess", "--kind", "text", "--json", "--config",
                                                                      root.url.appendingPathComponent("pipeline.json").path])
        #expect(reprocess.status == 0, "\(reprocess.stderr)")
        #expect(try await store.item("m1")?.status == .blocked)

        // Backends mirror relations over REST; history is kept.
        try await Self.application(root).test(.router) { client in
            try await client.execute(uri: "/v1/users/rita/blocks/mallory", method: .put, headers: SeedClientTests.app) { response in
                #expect(response.status == .ok && SeedClientTests.json(response.body)["changed"] as? Bool == true)
            }
            try await client.execute(uri: "/v1/users/rita/blocks/mallory", method: .get, headers: SeedClientTests.app) { response in
                #expect(SeedClientTests.json(response.body)["blocked"] as? Bool == true)
            }
            try await client.execute(uri: "/v1/users/mallory/can-message/rita", method: .get, headers: SeedClientTests.app) { response in
                let body = SeedClientTests.json(response.body)
                #expect(body["allowed"] as? Bool == false && body["reason"] as? String == "recipient has blocked the sender")
            }
            try await client.execute(uri: "/v1/users/rita/blocks/mallory", method: .put, headers: SeedClientTests.user("rita")) { response in
                #expect(response.status == .forbidden, "REST relations are for backends")
            }
            try await client.execute(uri: "/v1/users/rita/profile", method: .put, headers: SeedClientTests.app,
                                     body: ByteBuffer(string: #"{"messagePrivacy": "everyone"}"#)) { response in
                #expect(response.status == .badRequest)
            }
            try await client.execute(uri: "/v1/users/rita/profile", method: .put, headers: SeedClientTests.app,
                                     body: ByteBuffer(string: #"{"trustd": true}"#)) { response in
                #expect(response.status == .badRequest && String(buffer: response.body).contains(#"unknown field \"trustd\""#),
                        "\(String(buffer: response.body))")
            }
        }
        let history = try await store.relationHistory("rita").map { "\($0.actor) \($0.kind.rawValue) \($0.subject)" }
        #expect(history == ["rita follow mallory", "mallory follow rita", "rita block mallory", "rita unblock mallory", "rita block mallory"], "\(history)")
    }

    // MARK: Spam signals, each with its negative

    static func at(_ seconds: Int) -> String {
        Date(timeIntervalSince1970: 1_800_000_000 + Double(seconds)).formatted(.iso8601)
    }

    @Test func eachSpamSignalNamesItselfAndABusyCleanChatIsNotFlagged() async throws {
        let root = try TemporaryDataRoot()
        let now = Date()
        let services = try await Services.live(config: root.config(endpoint: "http://127.0.0.1:9/v1"), environment: [:], logger: quietLogger)
        let relations = services.relations
        // Everyone allows messages from anyone, so the request limit stays out of the way; ages are set per test.
        for user in ["flooder", "dup", "newbie", "oldtimer", "repeater", "linker", "mentioner", "a", "b"] {
            try await relations.setProfile(RelationUser(userId: user, messagePrivacy: .anyone, createdAt: now.addingTimeInterval(-400 * 86_400)))
        }
        for index in 0..<10 { try await relations.setProfile(RelationUser(userId: "to\(index)", messagePrivacy: .anyone)) }
        try await relations.setProfile(RelationUser(userId: "newbie", messagePrivacy: .anyone, createdAt: now.addingTimeInterval(-600)))
        var lines: [[String: Any]] = []
        // flood: 23 messages in one minute (limit 20); a second sender with 20 is fine.
        for index in 0..<23 { lines.append(["id": "flood-\(index)", "userId": "flooder", "recipientId": "to1", "text": "msg \(index)", "sentAt": Self.at(index)]) }
        for index in 0..<20 { lines.append(["id": "calm-\(index)", "userId": "a", "recipientId": "to1", "text": "msg \(index)", "sentAt": Self.at(index)]) }
        // duplicates: the same text (up to case and punctuation) to 8 recipients (limit 5).
        for index in 0..<8 {
            lines.append(["id": "dup-\(index)", "userId": "dup", "recipientId": "to\(index)", "text": index % 2 == 0 ? "Win a FREE phone now" : "win a free phone, now!",
                          "sentAt": Self.at(100 + index)])
        }
        // links: from a 10-minute-old account → review; from an old one → nothing; to a blocked domain → blocked.
        lines.append(["id": "link-new", "userId": "newbie", "recipientId": "to2", "text": "look https://deals.example.com/x", "sentAt": now.formatted(.iso8601)])
        lines.append(["id": "link-old", "userId": "oldtimer", "recipientId": "to2", "text": "look https://deals.example.com/x", "sentAt": Self.at(300)])
        lines.append(["id": "link-bad", "userId": "linker", "recipientId": "to2", "text": "go to www.spam-pills.test/buy", "sentAt": Self.at(301)])
        // repeats: a 40-character run is marked (delivered, annotated); a normal "soooo" is not.
        lines.append(["id": "rep-long", "userId": "repeater", "recipientId": "to3", "text": "no" + String(repeating: "o", count: 40), "sentAt": Self.at(400)])
        lines.append(["id": "rep-emoji", "userId": "repeater", "recipientId": "to3", "text": String(repeating: "😂", count: 25), "sentAt": Self.at(401)])
        lines.append(["id": "rep-ok", "userId": "b", "recipientId": "to3", "text": "soooo good 😂😂", "sentAt": Self.at(402)])
        // new-account velocity (on by default, mark): the 10-minute-old account's 32nd message.
        for index in 0..<31 {
            lines.append(["id": "velo-\(index)", "userId": "newbie", "recipientId": "to\(4 + index % 5)", "text": "hello number \(index)",
                          "sentAt": now.addingTimeInterval(Double(index * 5)).formatted(.iso8601)])
        }
        // an operator's counter: more than 3 mentions in one message.
        lines.append(["id": "mention-many", "userId": "mentioner", "recipientId": "to5", "text": "@a @b @c @d look", "sentAt": Self.at(600)])
        lines.append(["id": "mention-few", "userId": "mentioner", "recipientId": "to5", "text": "@a @b look", "sentAt": Self.at(601)])
        let edit: (inout PipelineConfig) -> Void = { config in
            config.spam.links.blockedDomains = ["spam-pills.test"]
            var rule = SpamConfig.CounterRule(name: "mentions", counter: .mentions, threshold: 3)
            rule.windowSeconds = 0
            config.spam.counters = [rule]
        }
        let store = try await Self.send(root, lines, edit: edit)
        func item(_ id: String) async throws -> Item { try #require(try await store.item(ItemID(id)), "\(id)") }

        let calmSoFar = try await item("flood-19")
        #expect(calmSoFar.status == .approved && calmSoFar.conversation == nil)
        let flood = try await item("flood-22")
        #expect(flood.status == .review && flood.reason?.hasPrefix("spam.flood: 23 messages") == true, "\(flood.reason ?? "")")
        #expect(try await item("calm-19").status == .approved)

        #expect(try await item("dup-4").status == .approved)
        let duplicate = try await item("dup-7")
        #expect(duplicate.status == .review && duplicate.reason?.hasPrefix("spam.duplicates: the same text to 8 recipients") == true, "\(duplicate.reason ?? "")")

        let young = try await item("link-new")
        #expect(young.status == .review && young.reason?.hasPrefix("spam.links: a link from an account") == true, "\(young.reason ?? "")")
        #expect(try await item("link-old").status == .approved)
        let bad = try await item("link-bad")
        #expect(bad.status == .blocked && bad.reason == "spam.links: link to blocked domain www.spam-pills.test", "\(bad.reason ?? "")")

        let repeated = try await item("rep-long")
        #expect(repeated.status == .approved && repeated.conversation?.outcome == .mark)
        #expect(repeated.conversation?.signals.first?.hasPrefix("spam.repeats: 41 repeated characters") == true, "\(repeated.conversation?.signals ?? [])")
        #expect(try await item("rep-emoji").conversation?.outcome == .mark)
        #expect(try await item("rep-ok").conversation == nil)

        let underLimit = try await item("velo-28")
        #expect(underLimit.conversation == nil, "\(underLimit.conversation?.signals ?? [])")
        let velocity = try await item("velo-30")
        #expect(velocity.status == .approved && velocity.conversation?.outcome == .mark
                && velocity.conversation?.signals.contains { $0.hasPrefix("spam.newAccount: 32 messages") } == true, "\(velocity.conversation?.signals ?? [])")

        let mentions = try await item("mention-many")
        #expect(mentions.status == .review && mentions.reason == "spam.counters.mentions: mentions 4 (over 3 in one message)", "\(mentions.reason ?? "")")
        #expect(try await item("mention-few").status == .approved)

        // The negative: a realistic busy chat corpus (three conversations, bursts, emoji, links) flags nothing.
        let chatRoot = try TemporaryDataRoot()
        let chatServices = try await Services.live(config: chatRoot.config(endpoint: "http://127.0.0.1:9/v1"), environment: [:], logger: quietLogger)
        let corpus = try String(contentsOf: TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Fixtures/chat/clean-chat.jsonl"), encoding: .utf8)
        let chat = corpus.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        try #require(chat.count > 200)
        let members = [["mum", "dan", "ella"], ["priya", "tom", "lena"], ["sam", "noor", "kai"]]
        for group in members {
            for user in group {
                // Accounts made long before the corpus's messages (2026-11-01..03), whatever day the test runs.
                try await chatServices.relations.setProfile(RelationUser(userId: user, createdAt: Date(timeIntervalSince1970: 1_767_225_600)))
                for other in group where other != user { try await chatServices.relations.follow(user, other, on: true) }
            }
        }
        let chatStore = try await Self.send(chatRoot, chat)
        let items = try await chatStore.items(matching: ItemFilter(kind: .text))
        #expect(items.count == chat.count)
        let flagged = items.filter { $0.conversation != nil || $0.status != .approved }
        #expect(flagged.isEmpty, "\(flagged.map { "\($0.id): \($0.status) \($0.reason ?? "") \($0.conversation?.signals ?? [])" })")
    }

    @Test func relationsImportFromTheCLI() async throws {
        let root = try TemporaryDataRoot()
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let file = root.url.appendingPathComponent("relations.jsonl")
        try Data("""
        {"type": "user", "userId": "ann", "messagePrivacy": "anyone", "createdAt": "2024-01-01T00:00:00Z", "trusted": true}
        {"type": "follow", "from": "bob", "to": "ann"}
        {"type": "block", "from": "ann", "to": "eve"}
        {"type": "block", "from": "ann", "to": "eve"}
        {"type": "friend", "from": "ann", "to": "bob"}
        {"type": "follow", "from": "bob"}
        not json
        {"type": "user", "userId": "x", "messagePrivacy": "all"}
        {"type": "user", "userId": "cai", "createdAt": 1700000000}
        {"type": "follow", "from": "cai", "to": "ann", "extra": 1}
        {"type": "user", "userId": "dee", "createdAt": true}

        """.utf8).writeClosingOnExec(to: file)
        let result = try await shell(TestEnvironment.sluiceBinary, ["relations", "import", file.path, "--json", "--config", config.path])
        #expect(result.status == 2, "bad lines make a non-zero exit: \(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(summary["applied"] as? Int == 4 && summary["unchanged"] as? Int == 1, "\(summary)")
        #expect(summary["rejected"] as? [String] == [
            "relations.jsonl:5: \"type\" must be user, follow or block", "relations.jsonl:6: a follow needs \"from\" and \"to\" user ids",
            "relations.jsonl:7: not valid JSON (Invalid value around character 1)", "relations.jsonl:8: \"messagePrivacy\" must be anyone or followers",
            "relations.jsonl:10: unknown field \"extra\"; allowed: from, to, type",
            "relations.jsonl:11: \"createdAt\" must be an ISO 8601 date-time or Unix seconds",
        ], "\(summary)")
        let store = try await Services.store(config: root.config(endpoint: "http://127.0.0.1:9/v1"))
        #expect(try await store.relationUser("ann") == RelationUser(userId: "ann", messagePrivacy: .anyone,
                                                                     createdAt: Date(timeIntervalSince1970: 1_704_067_200), trusted: true))
        #expect(try await store.isBlocked(blocker: "ann", blocked: "eve"))
        #expect(try await store.relationUser("cai")?.createdAt == Date(timeIntervalSince1970: 1_700_000_000), "Unix seconds, as the REST profile")
        let show = try await shell(TestEnvironment.sluiceBinary, ["relations", "show", "ann", "--config", config.path])
        #expect(show.stdout.contains("ann: messagePrivacy anyone") && show.stdout.contains("ann block eve") && show.stdout.contains("bob follow ann"),
                "\(show.stdout)")
        // A later backfill naming only createdAt keeps ann's other fields; dates the REST profile refuses are refused;
        // the same line again changes nothing.
        let later = root.url.appendingPathComponent("later.jsonl")
        try Data("""
        {"type": "user", "userId": "ann", "createdAt": 1600000000}
        {"type": "user", "userId": "ann", "createdAt": 1600000000}
        {"type": "user", "userId": "fut", "createdAt": 99999999999}
        {"type": "user", "userId": "neg", "createdAt": -1}

        """.utf8).writeClosingOnExec(to: later)
        let second = try await shell(TestEnvironment.sluiceBinary, ["relations", "import", later.path, "--json", "--config", config.path])
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any])
        #expect(counts["applied"] as? Int == 1 && counts["unchanged"] as? Int == 1 && (counts["rejected"] as? [String])?.count == 2, "\(counts)")
        #expect(try await store.relationUser("ann") == RelationUser(userId: "ann", messagePrivacy: .anyone,
                                                                     createdAt: Date(timeIntervalSince1970: 1_600_000_000), trusted: true))
        let (future, negative) = (try await store.relationUser("fut"), try await store.relationUser("neg"))
        #expect(future == nil && negative == nil)
    }
}

/// Reports and blocks that point at people: trusted reporters weigh more, and users many people report or block
/// are flagged in the console.
@Suite(.serialized) struct ReportWeightTests {
    @Test func trustedReportersCountMoreAndFlaggedUsersShowInTheConsole() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "owner", name: "pic.jpg")
        let store = try await runOnce(root, server: clean)
        let services = try await Services.live(config: root.config(endpoint: "http://127.0.0.1:9/v1"), environment: [:], logger: quietLogger)
        try await services.relations.setProfile(RelationUser(userId: "judge", trusted: true))
        for blocker in ["b1", "b2", "b3"] { try await services.relations.block(blocker, "pest", on: true) }
        try await services.relations.block("b1", "meh", on: true)
        _ = try await ReviewerAccounts(store: store, cost: 4).add("rita", role: .reviewer, password: ConsoleTests.password)
        try await ConversationRulesTests.application(root).test(.router) { client in
            // One ordinary reporter and one trusted (weight 2): 3 reach report.autoReviewAfter.
            for reporter in ["plain", "judge"] {
                try await client.execute(uri: "/v1/functions/submit_report", method: .post, headers: SeedClientTests.user(reporter),
                                         body: ByteBuffer(string: #"{"data": {"messageId": "owner/pic", "category": "spam"}}"#)) { response in
                    #expect(response.status == .ok)
                }
                if reporter == "plain" { #expect(try await store.item("owner/pic")?.status == .approved) }
            }
            let item = try #require(try await store.item("owner/pic"))
            #expect(item.status == .review && item.reason == "reported by 2 users", "\(item.reason ?? "")")
            for reporter in ["x1", "x2", "x3"] {
                _ = try await ConversationRulesTests.call(client, "reportUser", as: reporter, #"{"reporterID": "\#(reporter)", "reportedID": "troll", "reason": "rude"}"#)
            }
            let browser = ConsoleTests.Browser()
            _ = try await ConsoleTests.signIn(client, browser, as: "rita")
            try await client.execute(uri: "/console/reports", method: .get, headers: browser.headers()) { response in
                let html = String(buffer: response.body)
                #expect(html.contains("Flagged users"))
                #expect(html.contains("data-user-id=\"pest\"") && html.contains("blocked by 3 users in 24 h"), "\(html)")
                #expect(html.contains("data-user-id=\"troll\"") && html.contains("3 open reports"))
                #expect(!html.contains("data-user-id=\"meh\""), "one block is not a pattern")
            }
        }
    }
}
