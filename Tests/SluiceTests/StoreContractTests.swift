import Foundation
import GRDB
import SluiceCore
@testable import SluiceStore
import SluiceTesting
import Testing

/// The `StatusStore` contract, run against every backend: what callers rely on, so implementations cannot drift.
@Suite struct StoreContractTests {
    /// Dates as stores keep them (whole milliseconds).
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000.125)

    static func image(_ id: ItemID, status: ItemStatus = .approved, at date: Date = t0) -> Item {
        Item(id: id, kind: .image, userId: id.image?.userId ?? "u", status: status, reason: status == .approved ? nil : "because",
             provider: "google-vision",
             safeSearch: SafeSearch(adult: .veryUnlikely, spoof: .unlikely, medical: .possible, violence: .likely, racy: .veryLikely),
             exif: ExifFindings(hadGPS: true, make: "Canon", model: "EOS", orientation: 6),
             outputs: status == .approved ? ItemOutputs(approved: "approved/\(id).jpg", thumbnail: "thumbnails/\(id).jpg",
                                                        approvedBytes: 1234, thumbnailBytes: 56) : ItemOutputs(),
             original: status == .approved ? nil : "quarantine/\(id).jpg", format: "jpeg", width: 640, height: 427,
             sourceBytes: 99_999, contentHash: "hash-\(id)", timings: StageTimings(decodeMs: 1.5, classifyMs: 2.25, writeMs: 3, totalMs: 7),
             attempts: 1, createdAt: date, updatedAt: date,
             caption: CaptionOutcome(caption: Caption(caption: "A rocket.", provider: "openai-compatible", model: "llava",
                                                      usage: CaptionUsage(inputTokens: 10, outputTokens: 3), processingTimeMs: 12.5)))
    }

    static func text(_ id: ItemID, text: String = "hello there", status: ItemStatus = .approved, at date: Date = t0) -> Item {
        Item(id: id, kind: .text, userId: "writer", status: status, reason: status == .blocked ? "Content contains prohibited terms: x" : nil,
             contentHash: "text-\(id)", attempts: 1, createdAt: date, updatedAt: date,
             content: TextContent(text: text, context: "chat", kind: "message", source: "queues/text/a.jsonl:1"),
             textVerdict: TextVerdict(allowed: status != .blocked, reason: nil,
                                      matches: [TextMatch(term: "x", category: "insult", severity: .strong, start: 0, end: 1)], censored: "*"),
             priority: PriorityVerdict(urgencyScore: 75, reason: "urgent words", urgencyIndicators: ["urgent"], engine: "rules"))
    }

    @Test(arguments: StoreBackend.available)
    func everyFieldOfAnItemRoundTrips(backend: StoreBackend) async throws {
        let store = try await backend.open()
        var decided = Self.image("u/decided", status: .blocked)
        decided.decision = HumanDecision(by: "dana", at: Self.t0, note: "no", decision: .blocked)
        for item in [Self.image("u/a"), Self.image("u/b", status: .review), Self.text("t1"), decided] {
            try await store.recordVerdict(item, stage: "policy", detail: nil)
            #expect(try await store.item(item.id) == item, "\(item.id)")
        }
        #expect(try await store.item("nobody/here") == nil)
        #expect(Set(try await store.items(["u/a", "t1", "missing"]).map(\.id)) == ["u/a", "t1"])
    }

    /// The batch path (text queues) writes the same rows as the single-item path: every field reads back, dates at
    /// any millisecond, and a line judged twice in one batch counts two attempts.
    @Test(arguments: StoreBackend.available)
    func everyFieldOfAnItemRoundTripsThroughABatch(backend: StoreBackend) async throws {
        let store = try await backend.open()
        var decided = Self.image("u/decided", status: .blocked, at: Date(timeIntervalSince1970: 1_799_999_999.875))
        decided.decision = HumanDecision(by: "dana", at: Date(timeIntervalSince1970: 86_399.25), note: "no", decision: .blocked)
        decided.pdq = PDQFingerprint(hash: try #require(PDQHash(hex: String(repeating: "0f", count: 32))), quality: 87)
        var threaded = Self.text("t2", at: Date(timeIntervalSince1970: 951_782_400.5))
        threaded.content?.recipientId = "bob"
        threaded.content?.conversationId = "c-1"
        threaded.content?.sentAt = Date(timeIntervalSince1970: 1_700_000_000.375)
        threaded.content?.members = ["writer", "bob"]
        threaded.textVerdict?.classifier = TextClassification(provider: "local-text", scores: [.threat: 0.91, .harassment: 0.2],
                                                              policy: TextClassifierConfig.standardPolicy)
        threaded.conversation = ConversationVerdict(outcome: .review, signals: ["spam.flood"])
        let items = [Self.image("u/a"), Self.image("u/b", status: .review), Self.text("t1"), decided, threaded]
        #expect(try await store.recordVerdicts(items, stage: "text") == items.count)
        for item in items {
            #expect(try await store.item(item.id) == item, "\(item.id)")
        }
        var twice = Self.text("t3", status: .blocked)
        twice.attempts = 1
        var again = Self.text("t3", text: "changed", at: Self.t0.addingTimeInterval(1))
        again.attempts = 1
        try await store.recordVerdicts([twice, again], stage: "text")
        let stored = try #require(try await store.item("t3"))
        #expect(stored.attempts == 2 && stored.createdAt == Self.t0 && stored.content?.text == "changed" && stored.status == .approved)
        let events = try await store.events(of: "t3")
        #expect(events.map(\.fromStatus) == [nil, .blocked] && events.map(\.toStatus) == [.blocked, .approved])
    }

    /// The batch path formats dates itself; they must be GRDB's own text, or rows would sort and compare wrongly.
    @Test func batchDatesAreGRDBsStorageText() {
        var generator = SystemRandomNumberGenerator()
        let fixed: [Double] = [0, -1, -0.0005, 86_399.9999, 951_782_400, 1_700_000_000.0427, 4_102_444_799.999, -2_208_988_800.123]
        for seconds in fixed + (0..<2000).map({ _ in Double.random(in: -3_000_000_000...6_000_000_000, using: &generator) }) {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(StorageDate.string(date) == String.fromDatabaseValue(date.databaseValue), "\(seconds)")
        }
    }

    @Test(arguments: StoreBackend.available)
    func receivingCountsAttemptsAndReopensFinalItems(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let first = try await store.markReceived("u/x", kind: .image, userId: "u", contentHash: "h1", sourceBytes: 10, at: Self.t0)
        #expect(first.status == .pending && first.attempts == 1 && first.createdAt == Self.t0)
        var judged = Self.image("u/x")
        judged.contentHash = "h1"
        try await store.recordVerdict(judged, stage: "policy", detail: nil)
        let again = try await store.markReceived("u/x", kind: .image, userId: "u", contentHash: "h2", sourceBytes: 12,
                                                 at: Self.t0.addingTimeInterval(5))
        #expect(again.status == .pending && again.reason == nil && again.attempts == 2 && again.contentHash == "h2")
        #expect(again.createdAt == Self.t0, "a re-upload keeps its first createdAt")
        let events = try await store.events(of: "u/x")
        #expect(events.map(\.type) == ["received", "verdict", "received"])
        #expect(events.last?.fromStatus == .approved && events.last?.toStatus == .pending && events.last?.detail == "attempt 2")
    }

    @Test(arguments: StoreBackend.available)
    func verdictsKeepCreatedAtAndAppendEvents(backend: StoreBackend) async throws {
        let store = try await backend.open()
        try await store.recordVerdict(Self.image("u/v"), stage: "policy", detail: nil)
        var later = Self.image("u/v", status: .blocked, at: Self.t0.addingTimeInterval(60))
        later.attempts = 0
        try await store.recordVerdict(later, stage: "classify", detail: "why")
        let stored = try #require(try await store.item("u/v"))
        #expect(stored.createdAt == Self.t0 && stored.updatedAt == Self.t0.addingTimeInterval(60) && stored.attempts == 1)
        let events = try await store.events(of: "u/v")
        #expect(events.map(\.type) == ["verdict", "verdict"])
        #expect(events[1].fromStatus == .approved && events[1].toStatus == .blocked && events[1].stage == "classify" && events[1].detail == "why")
        #expect(events[0].detail == nil && events[0].fromStatus == nil)

        // Batches (text queues): each counts an attempt and gets a verdict event.
        let written = try await store.recordVerdicts([Self.text("m1"), Self.text("m2", status: .blocked), Self.text("u/v")], stage: "text")
        #expect(written == 3)
        #expect(try await store.item("m2")?.status == .blocked)
        let rejudged = try await store.item("u/v")
        #expect(rejudged?.attempts == 2 && rejudged?.createdAt == Self.t0)
        #expect(try await store.events(of: "m1").map(\.stage) == ["text"])
        try await store.appendEvent(ItemEvent(itemId: "m1", at: Self.t0, type: "finalized", toStatus: .approved, detail: "done"))
        #expect(try await store.events(of: "m1").map(\.type) == ["verdict", "finalized"])
    }

    @Test(arguments: StoreBackend.available)
    func listsAndFilters(backend: StoreBackend) async throws {
        let store = try await backend.open()
        try await store.recordVerdict(Self.image("a/1", at: Self.t0), stage: nil, detail: nil)
        try await store.recordVerdict(Self.image("b/2", status: .blocked, at: Self.t0.addingTimeInterval(10)), stage: nil, detail: nil)
        try await store.recordVerdict(Self.text("t3", at: Self.t0.addingTimeInterval(20)), stage: nil, detail: nil)
        try await store.recordVerdict(Self.image("a/4", status: .review, at: Self.t0.addingTimeInterval(30)), stage: nil, detail: nil)
        #expect(try await store.items(status: nil, kind: nil, limit: nil).map(\.id) == ["a/4", "t3", "b/2", "a/1"], "newest first")
        #expect(try await store.items(status: nil, kind: .image, limit: 2).map(\.id) == ["a/4", "b/2"])
        #expect(try await store.items(status: .blocked, kind: nil, limit: nil).map(\.id) == ["b/2"])
        #expect(try await store.items(matching: ItemFilter(kind: .image)).map(\.id) == ["a/1", "a/4", "b/2"], "by id")
        #expect(try await store.items(matching: ItemFilter(statuses: [.approved, .review])).map(\.id) == ["a/1", "a/4", "t3"])
        #expect(try await store.items(matching: ItemFilter(userId: "a")).map(\.id) == ["a/1", "a/4"])
        let window = ItemFilter(since: Self.t0.addingTimeInterval(10), until: Self.t0.addingTimeInterval(30))
        #expect(try await store.itemIDs(matching: window) == ["b/2", "t3"], "since is inclusive, until exclusive")
        #expect(try await store.countsByStatus() == [.approved: 2, .blocked: 1, .review: 1])
        let counts = try await store.countsByKindAndStatus()
        #expect(counts == [ItemCount(kind: .image, status: .approved, count: 1), ItemCount(kind: .image, status: .blocked, count: 1),
                           ItemCount(kind: .image, status: .review, count: 1), ItemCount(kind: .text, status: .approved, count: 1)])
        let hashes = try await store.contentHashes(["a/1", "t3", "none"])
        #expect(hashes == ["a/1": StoredHash(hash: "hash-a/1", status: .approved), "t3": StoredHash(hash: "text-t3", status: .approved)])
        #expect(try await store.contentHashes([]).isEmpty)
    }

    @Test(arguments: StoreBackend.available)
    func decisionsAreFinalAndLeaveAReviewEvent(backend: StoreBackend) async throws {
        let store = try await backend.open()
        try await store.recordVerdict(Self.image("u/r", status: .review), stage: "policy", detail: nil)
        var decided = Self.image("u/r", status: .blocked, at: Self.t0.addingTimeInterval(1))
        decided.reason = "blocked by dana: no"
        decided.decision = HumanDecision(by: "dana", at: Self.t0.addingTimeInterval(1), note: "no", decision: .blocked)
        try await store.recordDecision(decided, from: .review)
        let stored = try #require(try await store.item("u/r"))
        #expect(stored.decision == decided.decision && stored.decidedStatus == .blocked)
        let event = try #require(try await store.events(of: "u/r").last)
        #expect(event.type == "review" && event.fromStatus == .review && event.toStatus == .blocked && event.detail == "by dana: no")
        #expect(try await store.textSnapshots(["u/r"]).first?.humanDecided == true)
    }

    @Test(arguments: StoreBackend.available)
    func reprocessRunsResumeAndFinish(backend: StoreBackend) async throws {
        let store = try await backend.open()
        for id in ["t1", "t2", "t3"] { try await store.recordVerdict(Self.text(ItemID(id)), stage: nil, detail: nil) }
        try await store.recordVerdict(Self.image("u/i"), stage: nil, detail: nil)
        let filter = ItemFilter(kind: .text)
        let first = try await store.beginReprocess(runKey: "k", arguments: "args", filter: filter)
        #expect(first == ReprocessRunState(runKey: "k", resumed: false, total: 3, done: 0))
        #expect(try await store.pendingReprocessItems(runKey: "k") == ["t1", "t2", "t3"])

        let blocked = TextVerdict(allowed: false, reason: "Content contains prohibited terms: hello", matches: [], censored: "*****")
        try await store.commitTextReprocess(runKey: "k", updates: [
            TextUpdate(id: "t1", from: .approved, status: .blocked, reason: blocked.reason, verdict: blocked, priority: nil,
                       stage: "text", why: "approved → blocked"),
        ], done: ["t1", "t2"])
        let resumed = try await store.beginReprocess(runKey: "k", arguments: "args", filter: filter)
        #expect(resumed == ReprocessRunState(runKey: "k", resumed: true, total: 3, done: 2))
        #expect(try await store.pendingReprocessItems(runKey: "k") == ["t3"])
        #expect(try await store.doneReprocessItems(runKey: "k") == ["t1", "t2"])
        let t1 = try #require(try await store.item("t1"))
        #expect(t1.status == .blocked && t1.textVerdict == blocked && t1.priority == Self.text("t1").priority, "only the changed columns")
        #expect(try await store.events(of: "t1").last?.type == "reprocess")
        let snapshot = try #require(try await store.textSnapshots(["t1"]).first)
        #expect(snapshot.text == "hello there" && snapshot.context == "chat" && snapshot.status == .blocked && !snapshot.humanDecided)
        #expect(blocked.matches(storedJSON: snapshot.verdictJSON))

        var changed = Self.image("u/i", status: .blocked, at: Self.t0.addingTimeInterval(9))
        changed.reason = "blocked by policy"
        try await store.commitReprocess(runKey: "k", changes: [ReprocessChange(item: changed, from: .approved, stage: "classify", why: "x")],
                                        done: ["t3"])
        #expect(try await store.item("u/i")?.status == .blocked)
        #expect(try await store.events(of: "u/i").last?.detail == "x")
        try await store.finishReprocess(runKey: "k")
        let again = try await store.beginReprocess(runKey: "k", arguments: "args", filter: filter)
        #expect(again.resumed == false && again.total == 3, "a finished run starts over")
    }

    @Test(arguments: StoreBackend.available)
    func reportsRateLimitsAndMetrics(backend: StoreBackend) async throws {
        let store = try await backend.open()
        try await store.recordReport(Report(reportId: "r1", messageId: "m", category: "spam", description: nil, reporterUserId: "a", createdAt: Self.t0))
        try await store.recordReport(Report(reportId: "r2", messageId: "m", category: "other", description: "d", reporterUserId: nil,
                                            createdAt: Self.t0.addingTimeInterval(1)))
        #expect(try await store.reports().map(\.reportId) == ["r2", "r1"], "newest first")
        #expect(try await store.reports().first?.description == "d")

        let now = Date(timeIntervalSince1970: 1_800_000_030)
        for expected in 1...3 {
            let state = try await store.consumeRateLimit(key: "k", limit: 3, windowSeconds: 60, now: now)
            #expect(state.allowed && state.current == expected && state.remaining == 3 - expected)
        }
        let over = try await store.consumeRateLimit(key: "k", limit: 3, windowSeconds: 60, now: now)
        #expect(!over.allowed && over.current == 3 && over.resetAt == Date(timeIntervalSince1970: 1_800_000_060))
        #expect(try await store.rateLimit(key: "k", limit: 3, windowSeconds: 60, now: now).current == 3, "refused requests are not counted")
        let next = try await store.consumeRateLimit(key: "k", limit: 3, windowSeconds: 60, now: now.addingTimeInterval(60))
        #expect(next.allowed && next.current == 1, "a new window starts from zero")
        #expect(try await store.rateLimit(key: "other", limit: 3, windowSeconds: 60, now: now).current == 0)

        try await store.publishMetrics(source: "daemon", body: "a 1", at: Self.t0)
        try await store.publishMetrics(source: "daemon", body: "a 2", at: Self.t0.addingTimeInterval(1))
        try await store.publishMetrics(source: "serve", body: "b 1", at: Self.t0)
        #expect(try await store.metricsSnapshots() == [MetricsSnapshot(source: "daemon", body: "a 2", updatedAt: Self.t0.addingTimeInterval(1)),
                                                       MetricsSnapshot(source: "serve", body: "b 1", updatedAt: Self.t0)])
    }

    @Test(arguments: StoreBackend.available)
    func conversationCountsAddUpAcrossWritersAndRelationChangesAreFed(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let flood = CounterSlot(key: "spam.flood:ann", windowStart: 1_800_000_000)
        let recipients = CounterSlot(key: "spam.duplicates:ann:abc", windowStart: 1_800_000_000)
        let request = MessageTally.Request(sender: "ann", recipient: "bob", itemId: "m1")
        let first = try await store.recordMessageTally(MessageTally(requests: [request], amounts: [flood: 3], members: [recipients: ["bob", "cy"]]),
                                                       now: Self.t0)
        #expect(first == [flood: 3, recipients: 2])
        // A second writer (another daemon) adds to the same windows; a request written twice counts once.
        let second = try await store.recordMessageTally(MessageTally(requests: [request], amounts: [flood: 2], members: [recipients: ["cy", "dee"]]),
                                                        now: Self.t0)
        #expect(second == [flood: 5, recipients: 3])
        #expect(try await store.recordMessageTally(MessageTally(), now: Self.t0).isEmpty)
        let other = CounterSlot(key: "spam.flood:ann", windowStart: 1_800_000_060)
        let state = try await store.conversationState(sender: "ann", recipient: "bob", facts: true, counted: [flood, other], distinct: [recipients])
        #expect(state.facts?.requestsSent == 1)
        #expect(state.totals == [flood: 5], "a window nobody counted in is absent")
        #expect(state.members == [recipients: ["bob", "cy", "dee"]])
        #expect(try await store.conversationState(sender: "ann", recipient: "bob", facts: false, counted: [], distinct: []).facts == nil)

        // A text sent once (a singleton) is written only where another writer has members in its window; its total
        // comes back either way (0: nobody else has one).
        let once = CounterSlot(key: "spam.duplicates:ann:def", windowStart: 1_800_000_000)
        let asked = try await store.recordMessageTally(MessageTally(singletons: [once: "bob", recipients: "eve"]), now: Self.t0)
        #expect(asked == [once: 0, recipients: 4])
        let read = try await store.conversationState(sender: "ann", recipient: "bob", facts: false, counted: [], distinct: [once, recipients])
        #expect(read.members == [once: [], recipients: ["bob", "cy", "dee", "eve"]])

        // The relation history as a feed: nil reads where it stands; then the users named by later changes.
        let start = try await store.relationChanges(after: nil)
        #expect(start.users.isEmpty && start.complete)
        #expect(try await store.applyRelationChange(RelationChange(kind: .block, actor: "bob", subject: "ann", at: Self.t0), profile: nil))
        #expect(try await store.applyRelationChange(RelationChange(kind: .follow, actor: "cy", subject: "dee", at: Self.t0), profile: nil))
        let changed = try await store.relationChanges(after: start.last)
        #expect(changed.users == ["bob", "ann", "cy", "dee"] && changed.complete && changed.last > start.last)
        #expect(try await store.relationChanges(after: changed.last) == RelationChangeFeed(users: [], last: changed.last, complete: true))
        #expect(try await store.relationFacts(sender: "ann", recipient: "bob").recipientBlockedSender)
    }

    /// Erasing a user leaves one row in the relation feed, which names them as erased and is in nobody's history;
    /// counts written with a point of the feed before it leave out everything naming them (their counters, their
    /// membership in others' texts, requests to or from them), counts written with a later point do not.
    @Test(arguments: StoreBackend.available)
    func anErasureIsInTheRelationFeedAndKeepsCountsMadeBeforeItOut(backend: StoreBackend) async throws {
        let store = try await backend.open()
        func slot(_ key: String) -> CounterSlot { CounterSlot(key: key, windowStart: 1_800_000_000) }
        #expect(try await store.applyRelationChange(RelationChange(kind: .follow, actor: "ann", subject: "bob", at: Self.t0), profile: nil))
        let before = try await store.relationChanges(after: nil)
        try await store.eraseRelations(of: "ann")
        let feed = try await store.relationChanges(after: before.last)
        #expect(feed.erased == ["ann"] && feed.users == ["ann"] && feed.complete && feed.last > before.last, "\(feed)")
        #expect(try await store.relationHistory("ann").isEmpty)
        #expect(try await store.relationChanges(after: feed.last).erased.isEmpty)

        var tally = MessageTally(
            requests: [.init(sender: "ann", recipient: "bob", itemId: "m1"), .init(sender: "cy", recipient: "ann", itemId: "m2"),
                       .init(sender: "cy", recipient: "dee", itemId: "m3")],
            amounts: [slot("spam.flood:ann"): 2, slot("spam.flood:cy"): 3],
            members: [slot("spam.duplicates:ann:aaa"): ["bob", "cy"], slot("spam.duplicates:cy:bbb"): ["ann", "dee"]],
            singletons: [slot("spam.duplicates:ann:ccc"): "bob", slot("spam.duplicates:cy:ddd"): "ann"])
        tally.erasuresSeenUpTo = before.last
        #expect(try await store.recordMessageTally(tally, now: Self.t0) == [slot("spam.flood:cy"): 3, slot("spam.duplicates:cy:bbb"): 1])
        let state = try await store.conversationState(sender: "ann", recipient: "bob", facts: true, counted: [slot("spam.flood:ann"), slot("spam.flood:cy")],
                                                      distinct: [slot("spam.duplicates:ann:aaa"), slot("spam.duplicates:cy:bbb")])
        #expect(state.facts?.requestsSent == 0)
        #expect(state.totals == [slot("spam.flood:cy"): 3])
        #expect(state.members[slot("spam.duplicates:ann:aaa")] ?? [] == [])
        #expect(state.members[slot("spam.duplicates:cy:bbb")] == ["dee"])
        #expect(try await store.relationFacts(sender: "cy", recipient: "ann").requestsSent == 0)
        #expect(try await store.relationFacts(sender: "cy", recipient: "dee").requestsSent == 1)

        // Counts made once the erasure was read (ann writing again) are written.
        tally.erasuresSeenUpTo = feed.last
        let again = try await store.recordMessageTally(tally, now: Self.t0)
        #expect(again[slot("spam.flood:ann")] == 2 && again[slot("spam.duplicates:ann:aaa")] == 2 && again[slot("spam.flood:cy")] == 6)
        #expect(try await store.relationFacts(sender: "ann", recipient: "bob").requestsSent == 1)

        // More changes since than one read returns: the feed says to forget everything, and still names the erased.
        try await store.eraseRelations(of: "eve")
        for index in 0..<4 {
            _ = try await store.applyRelationChange(RelationChange(kind: index.isMultiple(of: 2) ? .follow : .unfollow, actor: "cy", subject: "dee",
                                                                   at: Self.t0), profile: nil)
        }
        let all = try await store.relationChanges(after: feed.last)
        #expect(all.complete && all.erased == ["eve"] && all.users == ["eve", "cy", "dee"])
        let many = try await store.relationChanges(after: feed.last, limit: 3)
        #expect(!many.complete && many.users.isEmpty && many.erased == ["eve"] && many.last == all.last, "\(many.last)")
    }

    /// Erasing a user deletes the spam counters naming them (as the sender a key ends with, inside a key, or as a
    /// member) and no other user's: not one whose id differs in case (`Ann` and `ann` are two users), or ends or
    /// starts with theirs.
    @Test(arguments: StoreBackend.available)
    func anErasureDeletesExactlyTheUsersCounters(backend: StoreBackend) async throws {
        let store = try await backend.open()
        func slot(_ key: String) -> CounterSlot { CounterSlot(key: key, windowStart: 1_800_000_000) }
        let counted = ["spam.flood:ann", "spam.flood:Ann", "spam.flood:xann", "spam.flood:ann_", "spam.flood:a_n"].map(slot)
        let members: [CounterSlot: Set<String>] = [
            slot("spam.duplicates:ann:aaa"): ["bob"], slot("spam.duplicates:Ann:aaa"): ["bob"], slot("spam.duplicates:bob:bbb"): ["ann", "Ann"],
            slot("spam.duplicates:anna:ccc"): ["bob"], slot("spam.duplicates:a_n:ddd"): ["bob"],
        ]
        _ = try await store.recordMessageTally(MessageTally(amounts: Dictionary(uniqueKeysWithValues: counted.map { ($0, 1) }), members: members),
                                               now: Self.t0)
        try await store.eraseRelations(of: "ann")
        let state = try await store.conversationState(sender: "bob", recipient: "cy", facts: false, counted: counted, distinct: Array(members.keys))
        #expect(state.totals == Dictionary(uniqueKeysWithValues: counted.dropFirst().map { ($0, 1) }), "\(state.totals)")
        #expect(state.members == [slot("spam.duplicates:ann:aaa"): [], slot("spam.duplicates:Ann:aaa"): ["bob"], slot("spam.duplicates:bob:bbb"): ["Ann"],
                                  slot("spam.duplicates:anna:ccc"): ["bob"], slot("spam.duplicates:a_n:ddd"): ["bob"]], "\(state.members)")
    }

    /// Erasing a user deletes their rate-limit windows (exactly their keys: not another counter's that ends with the
    /// same name, nor a user whose name differs in case or length), and an exchange stamped with a point of the feed
    /// before the erasure writes none of their counts, names them, and returns the point to give next time.
    @Test(arguments: StoreBackend.available)
    func anErasureDeletesTheUsersRateLimitWindowsAndKeepsCountsMadeBeforeItOut(backend: StoreBackend) async throws {
        let store = try await backend.open()
        func slot(_ key: String) -> CounterSlot { CounterSlot(key: key, windowStart: 1_800_000_000) }
        let keys = ["text_message:ann", "image_upload:ann", "threads:ann", "text_message:Ann", "text_message:anna",
                    "caption:ann", "bank-match:ann", "text_message:bob"]
        let start = try await store.exchangeRateLimitCounts(Dictionary(uniqueKeysWithValues: keys.map { (slot($0), 2) }), erasuresSeenUpTo: nil)
        #expect(start.totals.count == keys.count && start.totals.values.allSatisfy { $0 == 2 } && start.erased.isEmpty)
        try await store.eraseRelations(of: "ann")
        let left = try await store.rateLimitTotals(keys.map(slot))
        #expect(left == Dictionary(uniqueKeysWithValues: keys.map { (slot($0), ["text_message:ann", "image_upload:ann", "threads:ann"].contains($0) ? 0 : 2) }),
                "\(left)")

        // Counts made before the erasure was heard of: ann's windows are left out (total 0), the others are written.
        let exchanged = try await store.exchangeRateLimitCounts([slot("text_message:ann"): 1, slot("detect_priority:ann"): 0,
                                                                 slot("text_message:bob"): 1, slot("caption:ann"): 1],
                                                                erasuresSeenUpTo: start.erasuresSeenUpTo)
        #expect(exchanged.erased == ["ann"] && exchanged.erasuresSeenUpTo > start.erasuresSeenUpTo)
        #expect(exchanged.totals == [slot("text_message:ann"): 0, slot("detect_priority:ann"): 0, slot("text_message:bob"): 3,
                                     slot("caption:ann"): 3], "\(exchanged.totals)")
        #expect(try await store.rateLimitTotals([slot("text_message:ann")]) == [slot("text_message:ann"): 0])
        // Once the erasure was heard of, ann's new counts are written; with nothing to write only the point is read.
        let later = try await store.exchangeRateLimitCounts([slot("text_message:ann"): 1], erasuresSeenUpTo: exchanged.erasuresSeenUpTo)
        #expect(later == RateLimitExchange(totals: [slot("text_message:ann"): 1], erasuresSeenUpTo: exchanged.erasuresSeenUpTo))
        let point = try await store.exchangeRateLimitCounts([:], erasuresSeenUpTo: start.erasuresSeenUpTo)
        #expect(point == RateLimitExchange(totals: [:], erased: ["ann"], erasuresSeenUpTo: exchanged.erasuresSeenUpTo))
        // From the point 0 (what an API process whose first read of the point failed gives): every user ever erased
        // is left out, ann's count made since her erasure too.
        let fromZero = try await store.exchangeRateLimitCounts([slot("text_message:ann"): 1, slot("text_message:bob"): 1], erasuresSeenUpTo: 0)
        #expect(fromZero == RateLimitExchange(totals: [slot("text_message:ann"): 0, slot("text_message:bob"): 4], erased: ["ann"],
                                              erasuresSeenUpTo: exchanged.erasuresSeenUpTo), "\(fromZero)")
        #expect(try await store.rateLimitTotals([slot("text_message:ann")]) == [slot("text_message:ann"): 1])
        // `recordRateLimitCounts` (counters that name no user: `bank-match:`) leaves nothing out, whatever the key looks like.
        #expect(try await store.recordRateLimitCounts([slot("image_upload:ann"): 1]) == [slot("image_upload:ann"): 1])
    }

    /// A counter family (a sender's duplicate texts, one key per text) is read in one go: every key `{family}:…` of
    /// that window with its members, and nothing of another window, another family, or a family whose name only
    /// starts the same way.
    @Test(arguments: StoreBackend.available)
    func aCounterFamilyIsReadInOneGo(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let window = 1_800_000_000
        func slot(_ key: String, _ start: Int = window) -> CounterSlot { CounterSlot(key: key, windowStart: start) }
        let members: [CounterSlot: Set<String>] = [
            slot("spam.duplicates:ann:aaa"): ["bob", "cy"], slot("spam.duplicates:ann:bbb"): ["dee"],
            slot("spam.duplicates:ann:aaa", window + 3600): ["eve"], slot("spam.duplicates:anna:ccc"): ["bob"],
            slot("spam.duplicates:an:ddd"): ["bob"], slot("spam.duplicates:ann"): ["zed"],
        ]
        _ = try await store.recordMessageTally(MessageTally(members: members), now: Date(timeIntervalSince1970: Double(window)))
        let state = try await store.conversationState(sender: "ann", recipient: "bob", facts: false, counted: [], distinct: [],
                                                      families: [slot("spam.duplicates:ann")])
        #expect(state.members == [slot("spam.duplicates:ann:aaa"): ["bob", "cy"], slot("spam.duplicates:ann:bbb"): ["dee"]])
        let none = try await store.conversationState(sender: "ann", recipient: "bob", facts: false, counted: [], distinct: [],
                                                     families: [slot("spam.duplicates:ann", window + 60)])
        #expect(none.members.isEmpty)
    }

    /// Hundreds of windows in one write or read (a busy minute's flood counters, a window turning for every sender):
    /// every one comes back with its own total or members, whatever their number, over two windows at once, with the
    /// windows nobody counted in absent and a text sent once written only beside another writer's member.
    @Test(arguments: StoreBackend.available)
    func hundredsOfWindowsAreWrittenAndReadInOneGo(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let window = 1_800_000_000
        let now = Date(timeIntervalSince1970: Double(window))
        func slot(_ key: String, _ start: Int = window) -> CounterSlot { CounterSlot(key: key, windowStart: start) }
        // 150 counters in this window and 37 in the next: amounts 1...187, written twice (a second writer adds as much).
        let counted = (0..<187).map { slot("spam.flood:u\($0)", $0 < 150 ? window : window + 60) }
        let amounts = Dictionary(uniqueKeysWithValues: counted.enumerated().map { ($1, $0 + 1) })
        #expect(try await store.recordMessageTally(MessageTally(amounts: amounts), now: now) == amounts)
        let doubled = amounts.mapValues { $0 * 2 }
        #expect(try await store.recordMessageTally(MessageTally(amounts: amounts), now: now) == doubled)
        // 130 texts with members (one or two), of 65 senders; 70 more texts sent once, half of them beside another writer's member.
        let distinct = (0..<130).map { slot("spam.duplicates:s\($0 % 65):t\($0)") }
        let members = Dictionary(uniqueKeysWithValues: distinct.enumerated().map { ($1, $0 % 2 == 0 ? Set(["r\($0)"]) : ["r\($0)", "x"]) })
        _ = try await store.recordMessageTally(MessageTally(members: members), now: now)
        let once = (0..<70).map { slot("spam.duplicates:s\($0 % 65):once\($0)") }
        _ = try await store.recordMessageTally(MessageTally(members: Dictionary(uniqueKeysWithValues: once.prefix(35).map { ($0, ["other"]) })), now: now)
        let asked = try await store.recordMessageTally(MessageTally(singletons: Dictionary(uniqueKeysWithValues: once.map { ($0, "mine") })), now: now)
        #expect(asked == Dictionary(uniqueKeysWithValues: once.enumerated().map { ($1, $0 < 35 ? 2 : 0) }))

        let unknown = (0..<20).map { slot("spam.flood:nobody\($0)") }
        let state = try await store.conversationState(sender: "s0", recipient: "r0", facts: false, counted: counted + unknown,
                                                      distinct: distinct + [slot("spam.duplicates:s0:none")])
        #expect(state.totals == doubled)
        var expected = members
        expected[slot("spam.duplicates:s0:none")] = []
        #expect(state.members == expected)
        // Every sender's family at once: its texts with members, and a sent-once text only where the other writer had one.
        let families = (0..<65).map { slot("spam.duplicates:s\($0)") } + [slot("spam.duplicates:s0", window + 600)]
        let read = try await store.conversationState(sender: "s0", recipient: "r0", facts: false, counted: [], distinct: [], families: families)
        var all = members
        for (index, text) in once.enumerated() where index < 35 { all[text] = ["other", "mine"] }
        #expect(read.members == all)
    }

    /// Counts written with a message dated far ahead of this host's clock (an app's `sentAt`) never sweep away the
    /// windows being counted now: the stores sweep ended windows now and then (1 write in 64), and a sweep by such a
    /// date took every current counter with it, so the next count started from zero. 400 writes: without the guard
    /// the current windows go with a probability of 99.8%.
    @Test(arguments: StoreBackend.available)
    func countersDatedAheadDoNotSweepCurrentWindows(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let current = Int(Date().timeIntervalSince1970) / 60 * 60
        let flood = CounterSlot(key: "spam.flood:ann", windowStart: current)
        let recipients = CounterSlot(key: "spam.duplicates:ann:abc", windowStart: current)
        _ = try await store.recordMessageTally(MessageTally(amounts: [flood: 3], members: [recipients: ["bob"]]), now: Date())
        let nextYear = Date().addingTimeInterval(365 * 86_400)
        for index in 0..<400 {
            let ahead = CounterSlot(key: "spam.flood:zed\(index)", windowStart: Int(nextYear.timeIntervalSince1970) / 60 * 60)
            _ = try await store.recordMessageTally(MessageTally(amounts: [ahead: 1]), now: nextYear)
        }
        let state = try await store.conversationState(sender: "ann", recipient: "bob", facts: false, counted: [flood], distinct: [recipients])
        #expect(state.totals == [flood: 3])
        #expect(state.members == [recipients: ["bob"]])
    }

    @Test(arguments: StoreBackend.available)
    func rateLimitCountsFromSeveralProcessesAddUp(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let now = CounterSlot(key: "text_message:ann", windowStart: 1_800_000_000)
        let before = CounterSlot(key: "text_message:ann", windowStart: 1_799_999_940)
        #expect(try await store.rateLimitTotals([now, before]) == [now: 0, before: 0])
        #expect(try await store.recordRateLimitCounts([before: 4]) == [before: 4])
        #expect(try await store.recordRateLimitCounts([now: 3]) == [now: 3], "and the ended window of the key goes")
        #expect(try await store.recordRateLimitCounts([now: 2]) == [now: 5])
        #expect(try await store.recordRateLimitCounts([now: 0]) == [now: 5], "0 only reads")
        #expect(try await store.rateLimitTotals([now, before]) == [now: 5, before: 0])
        let state = try await store.rateLimit(key: "text_message:ann", limit: 5, windowSeconds: 60, now: Date(timeIntervalSince1970: 1_800_000_010))
        #expect(state.current == 5 && !state.allowed)
        #expect(try await store.recordRateLimitCounts([:]).isEmpty)
    }

    /// An exchange of a busy API process: hundreds of windows at once (more than one statement's worth), new and
    /// known ones, counts and reads mixed, of keys with an ended window. Every total is the sum of what was sent,
    /// and each key's ended window goes when its new one starts.
    @Test(arguments: StoreBackend.available)
    func rateLimitExchangesOfManyWindowsAddUp(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let users = (0..<250).map { "text_message:user\($0)" }
        let ended = Dictionary(uniqueKeysWithValues: users.enumerated().filter { $0.offset % 3 == 0 }
            .map { (CounterSlot(key: $0.element, windowStart: 1_799_999_940), $0.offset + 1) })
        #expect(try await store.recordRateLimitCounts(ended) == ended)
        let current = users.map { CounterSlot(key: $0, windowStart: 1_800_000_000) }
        var expected: [CounterSlot: Int] = [:]
        for round in 1...3 {
            // Each round counts for most windows and only reads the others (0), as an exchange does.
            let amounts = Dictionary(uniqueKeysWithValues: current.enumerated().map { ($0.element, ($0.offset + round) % 4) })
            for (slot, amount) in amounts { expected[slot, default: 0] += amount }
            #expect(try await store.recordRateLimitCounts(amounts) == expected, "round \(round)")
        }
        #expect(try await store.rateLimitTotals(current) == expected)
        let endedTotals = try await store.rateLimitTotals(Array(ended.keys))
        for (slot, total) in endedTotals {
            let started = (expected[CounterSlot(key: slot.key, windowStart: 1_800_000_000)] ?? 0) > 0
            #expect(total == (started ? 0 : ended[slot]), "\(slot): an ended window goes once its key counts in a new one")
        }
    }
}

/// Every `StatusStore` implementation the contract runs against.
extension StoreContractTests {
    /// Work leases: one holder at a time, renewed by its heartbeat, taken over only once expired, free on release.
    @Test(arguments: StoreBackend.available)
    func workLeasesHaveOneHolderAndExpire(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let t0 = Self.t0
        #expect(try await store.claimWork("upload:u/a", owner: "host-a:1", until: t0.addingTimeInterval(30), now: t0))
        #expect(try await !store.claimWork("upload:u/a", owner: "host-b:2", until: t0.addingTimeInterval(31), now: t0.addingTimeInterval(1)))
        #expect(try await store.claimWork("upload:u/a", owner: "host-a:1", until: t0.addingTimeInterval(32), now: t0.addingTimeInterval(2)),
                "the holder may claim again")
        #expect(try await store.claimWork("text:q.jsonl", owner: "host-a:1", until: t0.addingTimeInterval(30), now: t0))
        #expect(try await store.claimWork("text:left.jsonl", owner: "host-a:1", until: t0.addingTimeInterval(30), now: t0))
        // Only the units named (the ones the daemon still holds): a lease it let go of but could not release expires.
        #expect(try await store.renewWork(["upload:u/a", "text:q.jsonl", "text:other.jsonl"], owner: "host-a:1", until: t0.addingTimeInterval(60)) == 2)
        #expect(try await store.renewWork([], owner: "host-a:1", until: t0.addingTimeInterval(60)) == 0)
        #expect(try await store.claimWork("text:left.jsonl", owner: "host-b:2", until: t0.addingTimeInterval(90), now: t0.addingTimeInterval(31)),
                "not renewed: expired, taken over")
        #expect(try await !store.claimWork("upload:u/a", owner: "host-b:2", until: t0.addingTimeInterval(90), now: t0.addingTimeInterval(45)),
                "renewed: still held")
        #expect(try await store.workLeases(now: t0.addingTimeInterval(45)) == ["upload:u/a": "host-a:1", "text:q.jsonl": "host-a:1",
                                                                         "text:left.jsonl": "host-b:2"])
        try await store.releaseWork("text:left.jsonl", owner: "host-b:2")
        // host-a died: nothing renews, and after expiry host-b takes the work over.
        #expect(try await store.claimWork("upload:u/a", owner: "host-b:2", until: t0.addingTimeInterval(120), now: t0.addingTimeInterval(61)))
        #expect(try await store.workLeases(now: t0.addingTimeInterval(61)) == ["upload:u/a": "host-b:2"])
        try await store.releaseWork("upload:u/a", owner: "host-a:1")
        #expect(try await store.workLeases(now: t0.addingTimeInterval(61)) == ["upload:u/a": "host-b:2"], "only the holder releases")
        try await store.releaseWork("upload:u/a", owner: "host-b:2")
        #expect(try await store.claimWork("upload:u/a", owner: "host-c:3", until: t0.addingTimeInterval(150), now: t0.addingTimeInterval(62)))
    }

    /// A batch committed with a claim on its file: written, and the lease extended, only while no other daemon holds
    /// the file; otherwise nothing of it is written.
    @Test(arguments: StoreBackend.available)
    func aBatchCommitsOnlyWhileItsClaimHolds(backend: StoreBackend) async throws {
        let store = try await backend.open()
        let t0 = Self.t0
        #expect(try await store.claimWork("text:q.jsonl", owner: "host-b:2", until: t0.addingTimeInterval(30), now: t0))
        let first = store.prepareChangedVerdicts([Self.text("m1"), Self.text("m2")], lineIDs: ["q.jsonl:1:ab", "q.jsonl:2:ab"], stage: "text")
        let held = WorkClaim(unit: "text:q.jsonl", owner: "host-a:1", until: t0.addingTimeInterval(40), now: t0.addingTimeInterval(10))
        #expect(try await store.recordChangedVerdicts(first, claiming: held) == nil, "host-b holds the file")
        #expect(try await store.item("m1") == nil)
        #expect(try await store.item("m2") == nil)
        #expect(try await store.workLeases(now: t0.addingTimeInterval(10)) == ["text:q.jsonl": "host-b:2"], "the lease is not taken")
        // host-b's lease ended: host-a's commit takes the file over and writes the batch in the same transaction.
        let expired = WorkClaim(unit: "text:q.jsonl", owner: "host-a:1", until: t0.addingTimeInterval(70), now: t0.addingTimeInterval(31))
        #expect(try await store.recordChangedVerdicts(first, claiming: expired) == RecordedVerdicts(written: 2))
        #expect(try await store.item("m1")?.status == .approved)
        #expect(try await store.workLeases(now: t0.addingTimeInterval(69)) == ["text:q.jsonl": "host-a:1"], "extended to the claim's end")
        // Its own claim again: the same lines are unchanged, an empty batch only extends the lease.
        let again = WorkClaim(unit: "text:q.jsonl", owner: "host-a:1", until: t0.addingTimeInterval(100), now: t0.addingTimeInterval(40))
        #expect(try await store.recordChangedVerdicts(first, claiming: again) == RecordedVerdicts(written: 0))
        let empty = store.prepareChangedVerdicts([], lineIDs: [], stage: "text")
        let later = WorkClaim(unit: "text:q.jsonl", owner: "host-a:1", until: t0.addingTimeInterval(130), now: t0.addingTimeInterval(50))
        #expect(try await store.recordChangedVerdicts(empty, claiming: later) == RecordedVerdicts(written: 0))
        #expect(try await store.workLeases(now: t0.addingTimeInterval(129)) == ["text:q.jsonl": "host-a:1"])
        #expect(try await !store.claimWork("text:q.jsonl", owner: "host-b:2", until: t0.addingTimeInterval(150), now: t0.addingTimeInterval(120)))
    }

    /// Queue lines read before a user was erased and written after (a daemon mid-file): the batch, stamped with the
    /// relation history's point read before the file was, leaves out the erased user's items and counts them, with or
    /// without a claim; the others are written. A batch whose point is after the erasure (a file read later, so
    /// blanked first: the user's new messages) is written whole.
    @Test(arguments: StoreBackend.available)
    func aBatchReadBeforeAnErasureLeavesTheErasedUsersItemsOut(backend: StoreBackend) async throws {
        let store = try await backend.open()
        func line(_ id: ItemID, _ user: String) -> Item {
            var item = Self.text(id)
            item.userId = user
            return item
        }
        let before = try await store.relationChanges(after: nil, limit: 0).last
        var batch = store.prepareChangedVerdicts([line("a-1", "ann"), line("b-1", "bob"), line("a-2", "ann"), line("ann-bob", "Ann")],
                                                 lineIDs: ["q.jsonl:1:ab", "q.jsonl:2:ab", "q.jsonl:3:ab", "q.jsonl:4:ab"], stage: "text")
        batch.erasuresSeenUpTo = before
        try await store.eraseRelations(of: "ann")
        #expect(try await store.recordChangedVerdicts(batch) == RecordedVerdicts(written: 2, erased: 2))
        #expect(try await store.item("a-1") == nil)
        #expect(try await store.item("a-2") == nil)
        #expect(try await store.item("b-1")?.userId == "bob", "another user's line is written")
        #expect(try await store.item("ann-bob")?.userId == "Ann", "a user whose name differs in case is not the one erased")
        #expect(try await store.events(of: "a-1").isEmpty)

        var claimed = store.prepareChangedVerdicts([line("a-3", "ann"), line("b-2", "bob")], lineIDs: ["r.jsonl:1:cd", "r.jsonl:2:cd"], stage: "text")
        claimed.erasuresSeenUpTo = before
        let claim = WorkClaim(unit: "text:r.jsonl", owner: "host-a:1", until: Self.t0.addingTimeInterval(30), now: Self.t0)
        #expect(try await store.recordChangedVerdicts(claimed, claiming: claim) == RecordedVerdicts(written: 1, erased: 1))
        #expect(try await store.item("a-3") == nil)
        #expect(try await store.item("b-2") != nil)

        // Read after the erasure: ann's new message is hers to keep.
        var later = store.prepareChangedVerdicts([line("a-4", "ann")], lineIDs: ["s.jsonl:1:ef"], stage: "text")
        later.erasuresSeenUpTo = try await store.relationChanges(after: nil, limit: 0).last
        #expect(try await store.recordChangedVerdicts(later) == RecordedVerdicts(written: 1))
        #expect(try await store.item("a-4")?.userId == "ann")
        // No point: no check (what every other writer does).
        #expect(try await store.recordChangedVerdicts(store.prepareChangedVerdicts([line("a-5", "ann")], lineIDs: ["t.jsonl:1:ab"], stage: "text"))
                == RecordedVerdicts(written: 1))
    }

    /// Many claimers of one unit at the same moment: exactly one wins.
    @Test(arguments: StoreBackend.available)
    func concurrentClaimsHaveOneWinner(backend: StoreBackend) async throws {
        let store = try await backend.open()
        for round in 0..<5 {
            let wins = try await withThrowingTaskGroup(of: Bool.self, returning: Int.self) { group in
                for claimer in 0..<8 {
                    group.addTask {
                        try await store.claimWork("upload:u/\(round)", owner: "daemon-\(claimer)", until: Self.t0.addingTimeInterval(30), now: Self.t0)
                    }
                }
                var wins = 0
                for try await won in group where won { wins += 1 }
                return wins
            }
            #expect(wins == 1, "round \(round): \(wins) winners")
        }
    }
}

enum StoreBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite
    case sqliteInMemory
    /// A new schema in the PostgreSQL database named by `SLUICE_TEST_POSTGRES_URL` (`.ci/run` starts one).
    case postgres

    var testDescription: String { rawValue }

    /// The backends this run can reach: PostgreSQL only when `SLUICE_TEST_POSTGRES_URL` is set (CI must set it:
    /// `postgresIsReachableInCI` fails otherwise).
    static var available: [StoreBackend] {
        postgresURL == nil ? [.sqlite, .sqliteInMemory] : allCases
    }

    static var postgresURL: String? {
        ProcessInfo.processInfo.environment["SLUICE_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    func open() async throws -> any StatusStore {
        switch self {
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-store-\(UUID().uuidString)")
            return try SQLiteStore(path: folder.appendingPathComponent("sluice.sqlite"))
        case .sqliteInMemory:
            return try SQLiteStore.inMemory()
        case .postgres:
            return try await Self.postgresStore()
        }
    }

    /// A store in a schema of its own, so tests running at once never see each other's rows.
    static func postgresStore() async throws -> PostgresStore {
        let url = try #require(postgresURL, "SLUICE_TEST_POSTGRES_URL is not set")
        var location = try PostgresLocation(url: url)
        location.schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        location.maxConnections = 4
        return try await PostgresStore(location, password: ProcessInfo.processInfo.environment["SLUICE_TEST_POSTGRES_PASSWORD"])
    }
}
