import Foundation
import GRDB
import SluiceCore
import SluicePipeline
import SluiceStore
import SluiceTesting
import Testing

/// The rules' memory (`ConversationLedger`) against the store's truth: daemons that share a store agree on counters,
/// a daemon that starts again goes on counting where the store stands, and relation changes reach a running daemon.
@Suite struct ConversationLedgerTests {
    static let minute = Date(timeIntervalSince1970: 1_800_000_000)  // a minute's start: 24 seconds stay in one flood window

    /// Two processes' stores over one SQLite file (each daemon opens its own).
    static func sharedStores() throws -> (any StatusStore, any StatusStore) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-ledger-\(UUID().uuidString)/sluice.sqlite")
        return (try SQLiteStore(path: path), try SQLiteStore(path: path))
    }

    static func rules(_ store: any StatusStore, timing: ConversationLedger.Timing = ConversationLedger.Timing()) -> ConversationRules {
        ConversationRules(store: store, conversation: ConversationConfig(), spam: SpamConfig(), timing: timing)
    }

    static func message(_ id: String, from sender: String = "ann", to recipient: String = "bob", _ text: String = "hello", at second: Int = 0) -> ParsedMessage {
        ParsedMessage(id: ItemID(id), userId: sender, content: TextContent(text: "\(text) \(id)", recipientId: recipient),
                      sentAt: minute.addingTimeInterval(Double(second)))
    }

    static func everyoneMayMessage(_ store: any StatusStore, _ users: [String]) async throws {
        let relations = Relations(store: store, conversation: ConversationConfig())
        for user in users {
            _ = try await relations.setProfile(RelationUser(userId: user, messagePrivacy: .anyone, createdAt: minute.addingTimeInterval(-400 * 86_400)))
        }
    }

    @Test func daemonsSharingAStoreAgreeOnAFlood() async throws {
        let (first, second) = try Self.sharedStores()
        try await Self.everyoneMayMessage(first, ["ann", "bob"])
        let one = Self.rules(first), two = Self.rules(second)
        // Twelve messages through one daemon, written with its verdict batch…
        for index in 0..<12 {
            let verdict = try await one.judge(Self.message("a\(index)", at: index), now: Self.minute.addingTimeInterval(Double(index)))
            #expect(verdict.outcome == .none)
        }
        try await one.ledger.flush()
        // …then the same sender through the other daemon in the same minute: the 21st message is a flood.
        var outcomes: [ConversationVerdict.Outcome] = []
        for index in 12..<24 {
            outcomes.append(try await two.judge(Self.message("b\(index)", at: index), now: Self.minute.addingTimeInterval(Double(index))).outcome)
        }
        #expect(outcomes.prefix(8).allSatisfy { $0 == .none }, "\(outcomes)")
        #expect(outcomes.suffix(4).allSatisfy { $0 == .review }, "\(outcomes)")
        try await two.ledger.flush()
        let state = try await first.conversationState(sender: "ann", recipient: "bob", facts: false,
                                                      counted: [CounterSlot(key: "spam.flood:ann", windowStart: 1_800_000_000)], distinct: [])
        #expect(state.totals.values.first == 24, "every message counted once in the store")
    }

    /// The judging does not wait for the store's writer (a text queue's writer is committing the batch before): with
    /// another connection holding the store's write lock, a daemon whose counts are due to be written after every
    /// message judges on, and once the lock is free every message is counted once.
    @Test func theJudgingGoesOnWhileTheStoresWriterIsBusy() async throws {
        let (store, rules, other) = try await Self.storeWritingEveryMessage(["ann", "bob"])
        // Another process's connection in a write transaction, left open across accesses.
        try await Self.whileLocked(by: other) {
            for index in 0..<5 {
                let verdict = try await rules.judge(Self.message("w\(index)", at: index), now: Self.minute.addingTimeInterval(Double(index)))
                #expect(verdict.outcome == .none)
            }
        }
        try await rules.ledger.flush()
        let state = try await store.conversationState(sender: "ann", recipient: "bob", facts: false,
                                                      counted: [CounterSlot(key: "spam.flood:ann", windowStart: 1_800_000_000)], distinct: [])
        #expect(state.totals.values.first == 5, "every message counted once")
    }

    /// A sender's texts are counted under one key each, read from the store as one family per window: a daemon that
    /// has read the family counts a new text without a read, and learns what another daemon counted in it with its
    /// next write; a daemon that starts reads the family and goes on from every text's count.
    @Test func aSendersDistinctTextsAreReadAsOneFamily() async throws {
        let (first, second) = try Self.sharedStores()
        try await Self.everyoneMayMessage(first, ["ann"] + (0..<12).map { "r\($0)" })
        let one = Self.rules(first), two = Self.rules(second)
        // Daemon one reads ann's family with her first text, then daemon two sends "win a free phone" to five people.
        // (A message's text ends with its id, whose digits the fingerprint leaves out: "m0" to "m7" are one text.)
        #expect(try await one.judge(Self.message("x0", to: "r0", "see you later", at: 0), now: Self.minute).outcome == .none)
        for index in 0..<5 {
            #expect(try await two.judge(Self.message("m\(index)", to: "r\(index)", "win a free phone", at: index), now: Self.minute).outcome == .none)
        }
        try await two.ledger.flush()
        // Daemon one's first message of that text is judged on its own count (it read the family before the text was
        // counted); its write brings back daemon two's five, so the next one is the seventh recipient: a duplicate.
        #expect(try await one.judge(Self.message("m5", to: "r5", "win a free phone", at: 6), now: Self.minute).outcome == .none)
        try await one.ledger.flush()
        let seventh = try await one.judge(Self.message("m6", to: "r6", "win a free phone", at: 7), now: Self.minute)
        #expect(seventh.reason?.hasPrefix("spam.duplicates: the same text to 7 recipients") == true, "\(seventh)")
        try await one.ledger.flush()
        // A daemon that starts now reads the family with its first message: the eighth recipient.
        let three = Self.rules(first)
        let eighth = try await three.judge(Self.message("m7", to: "r7", "win a free phone", at: 8), now: Self.minute)
        #expect(eighth.reason?.hasPrefix("spam.duplicates: the same text to 8 recipients") == true, "\(eighth)")
    }

    @Test func aRestartedDaemonGoesOnCountingDistinctRecipients() async throws {
        let (store, _) = try Self.sharedStores()
        try await Self.everyoneMayMessage(store, ["ann"] + (0..<8).map { "r\($0)" })
        let before = Self.rules(store)
        for index in 0..<4 {
            _ = try await before.judge(Self.message("d\(index)", to: "r\(index)", "win a free phone", at: index), now: Self.minute)
        }
        try await before.ledger.flush()
        let after = Self.rules(store)
        // The same recipient again is not a new one; the sixth distinct recipient is over the limit of five.
        #expect(try await after.judge(Self.message("d4", to: "r3", "win a free phone", at: 4), now: Self.minute).outcome == .none)
        #expect(try await after.judge(Self.message("d5", to: "r4", "win a free phone", at: 5), now: Self.minute).outcome == .none)
        let sixth = try await after.judge(Self.message("d6", to: "r5", "win a free phone", at: 6), now: Self.minute)
        #expect(sixth.outcome == .review && sixth.reason?.hasPrefix("spam.duplicates: the same text to 6 recipients") == true, "\(sixth)")
    }

    /// A text sent to one recipient is not written to the store (most texts are sent once, and each was a row): it is
    /// written with its second recipient, or when the daemon stops. A daemon killed without stopping loses the ones it
    /// held, so a daemon after it counts that text one recipient short, as README says.
    @Test func aTextSentOnceIsWrittenWithItsSecondRecipientOrWhenTheDaemonStops() async throws {
        let (store, _) = try Self.sharedStores()
        try await Self.everyoneMayMessage(store, ["ann"] + (0..<16).map { "r\($0)" })
        func members(_ text: String) async throws -> Set<String> { try await Self.duplicateMembers(store, text) }
        let one = Self.rules(store)
        _ = try await one.judge(Self.message("m0", to: "r0", "lunch at noon", at: 0), now: Self.minute)
        _ = try await one.judge(Self.message("m1", to: "r1", "see the slides", at: 1), now: Self.minute)
        try await one.ledger.flush()
        #expect(try await members("lunch at noon") == [], "held, not written")
        #expect(try await members("see the slides") == [], "held, not written")
        _ = try await one.judge(Self.message("m2", to: "r2", "lunch at noon", at: 2), now: Self.minute)
        try await one.ledger.flush()
        #expect(try await members("lunch at noon") == ["r0", "r2"], "written with its second recipient")
        #expect(try await members("see the slides") == [])
        try await one.ledger.flush(final: true)
        #expect(try await members("see the slides") == ["r1"], "written when the daemon stops")

        // The next daemon counts the held recipient: five more are six in all, the sixth over the limit of five.
        let two = Self.rules(store)
        var outcomes: [ConversationVerdict.Outcome] = []
        for index in 2..<7 {
            outcomes.append(try await two.judge(Self.message("m\(index + 1)", to: "r\(index)", "see the slides", at: index), now: Self.minute).outcome)
        }
        #expect(outcomes == [.none, .none, .none, .none, .review], "\(outcomes)")

        // A daemon that never stops (kill -9) loses its held text: the daemon after it counts one recipient short.
        let killed = Self.rules(store)
        _ = try await killed.judge(Self.message("m9", to: "r9", "call me back", at: 9), now: Self.minute)
        try await killed.ledger.flush()
        let after = Self.rules(store)
        outcomes = []
        for index in 10..<16 {
            outcomes.append(try await after.judge(Self.message("m\(index)", to: "r\(index)", "call me back", at: index), now: Self.minute).outcome)
        }
        #expect(outcomes == [.none, .none, .none, .none, .none, .review], "the seventh recipient in all, the sixth it counted: \(outcomes)")
    }

    /// The recipients the store has for ann's text in the ten minutes `window` seconds from `minute` (a message's text
    /// ends with its id, "m0", whose letter the fingerprint keeps).
    static func duplicateMembers(_ store: any StatusStore, _ text: String, id letter: String = "m", window: Int = 0) async throws -> Set<String> {
        let slot = duplicates(text, id: letter, window: window)
        return try await store.conversationState(sender: "ann", recipient: "r0", facts: false, counted: [], distinct: [slot]).members[slot] ?? []
    }

    /// ann's duplicates window of `text` sent under an id starting with `letter`.
    static func duplicates(_ text: String, id letter: String = "m", window: Int = 0) -> CounterSlot {
        CounterSlot(key: "spam.duplicates:ann:\(MessageSignals.fingerprint("\(text) \(letter)"))", windowStart: 1_800_000_000 + window)
    }

    /// A store file whose rules write after every message, and another process's connection to it that may leave a
    /// transaction open across accesses (`whileLocked`).
    static func storeWritingEveryMessage(_ users: [String]) async throws -> (store: SQLiteStore, rules: ConversationRules, other: DatabaseQueue) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-ledger-\(UUID().uuidString)/sluice.sqlite")
        let store = try SQLiteStore(path: path)
        try await everyoneMayMessage(store, users)
        var timing = ConversationLedger.Timing()
        timing.flushSize = 1
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        return (store, rules(store, timing: timing), try DatabaseQueue(path: path.path, configuration: configuration))
    }

    /// Runs `body` while `other` holds the store's write lock, then lets it go.
    static func whileLocked(by other: DatabaseQueue, _ body: () async throws -> Void) async throws {
        try await other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        try await body()
        try await other.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
    }

    /// A text's second recipient counted while the write asking about its first is still under way (the store's writer
    /// busy with another connection's transaction) is written with the first: neither is left held.
    @Test func aSecondRecipientCountedWhileTheFirstIsBeingAskedAboutIsWrittenWithIt() async throws {
        let (store, rules, other) = try await Self.storeWritingEveryMessage(["ann", "r0", "r1"])
        try await Self.whileLocked(by: other) {
            // The first recipient starts a write (every message does here), which waits for the lock…
            _ = try await rules.judge(Self.message("m0", to: "r0", "minutes of the meeting", at: 0), now: Self.minute)
            // …and the second is counted meanwhile.
            _ = try await rules.judge(Self.message("m1", to: "r1", "minutes of the meeting", at: 1), now: Self.minute.addingTimeInterval(1))
        }
        try await rules.ledger.flush()
        #expect(try await Self.duplicateMembers(store, "minutes of the meeting") == ["r0", "r1"], "both written before the daemon stops")
    }

    /// A write that fails loses nothing: a text's first recipient, asked about in the failed write, and its second,
    /// counted meanwhile, are both written by the next write, and every message is counted once.
    @Test func aFailedWriteKeepsATextsRecipientsForTheNext() async throws {
        let (store, rules, other) = try await Self.storeWritingEveryMessage(["ann", "r0", "r1"])
        // The first write (ann's flood counter at 1) fails; the next (at 2) does not.
        try await other.write { db in
            try db.execute(sql: """
                CREATE TRIGGER failFirstCount BEFORE INSERT ON spamCounter WHEN NEW.key = 'spam.flood:ann' AND NEW.count = 1
                BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                """)
        }
        try await Self.whileLocked(by: other) {
            _ = try await rules.judge(Self.message("m0", to: "r0", "agenda for friday", at: 0), now: Self.minute)
            _ = try await rules.judge(Self.message("m1", to: "r1", "agenda for friday", at: 1), now: Self.minute.addingTimeInterval(1))
        }
        try await rules.ledger.flush()
        let flood = CounterSlot(key: "spam.flood:ann", windowStart: 1_800_000_000)
        let text = Self.duplicates("agenda for friday")
        let state = try await store.conversationState(sender: "ann", recipient: "r0", facts: false, counted: [flood], distinct: [text])
        #expect(state.totals[flood] == 2, "each message counted once")
        #expect(state.members[text] == ["r0", "r1"])
    }

    /// A line of an earlier window read after a newer one (files are read one after another, and `sentAt` is the
    /// app's word) still counts with a text held in it: a held text is kept a window's length after its window ends.
    @Test func aHeldTextStillCountsALineALittleOutOfOrder() async throws {
        let (store, _) = try Self.sharedStores()
        try await Self.everyoneMayMessage(store, ["ann"] + (0..<4).map { "r\($0)" })
        let one = Self.rules(store)
        _ = try await one.judge(Self.message("m0", to: "r0", "board meeting notes", at: 0), now: Self.minute)
        // The next ten minutes begin (another text), and the counts are written: the first text stays held.
        _ = try await one.judge(Self.message("x1", to: "r1", "something else", at: 700), now: Self.minute.addingTimeInterval(700))
        try await one.ledger.flush()
        #expect(try await Self.duplicateMembers(store, "board meeting notes") == [])
        // A line of the first ten minutes read after them: its text's held recipient is written with it.
        _ = try await one.judge(Self.message("m1", to: "r2", "board meeting notes", at: 5), now: Self.minute.addingTimeInterval(5))
        try await one.ledger.flush()
        #expect(try await Self.duplicateMembers(store, "board meeting notes") == ["r0", "r2"])
    }

    /// Lines of a window already far behind the newest (an older file read after a newer one) are not held at all, but
    /// written: a text sent to one recipient per write still reaches the duplicates signal at its sixth recipient.
    @Test func aTextOfAWindowFarBehindIsWrittenNotHeld() async throws {
        let (store, _) = try Self.sharedStores()
        try await Self.everyoneMayMessage(store, ["ann"] + (0..<6).map { "r\($0)" })
        let one = Self.rules(store)
        _ = try await one.judge(Self.message("n0", to: "r0", "newer file", at: 1_300), now: Self.minute.addingTimeInterval(1_300))
        try await one.ledger.flush()
        var outcomes: [ConversationVerdict.Outcome] = []
        for index in 0..<6 {
            let message = Self.message("m\(index)", to: "r\(index)", "old announcement", at: 5)
            outcomes.append(try await one.judge(message, now: Self.minute.addingTimeInterval(5)).outcome)
            try await one.ledger.flush()
        }
        #expect(outcomes == [.none, .none, .none, .none, .none, .review], "\(outcomes)")
    }

    /// A held text is dropped, never written, a window's length after its window ends (a line dated that far behind
    /// the newest counts that text one recipient short, as README says), even when a text of a later window was held
    /// after it; that later text stays held and is written when the daemon stops.
    @Test func aHeldTextIsDroppedAWindowsLengthAfterItsWindowEnds() async throws {
        let (store, _) = try Self.sharedStores()
        try await Self.everyoneMayMessage(store, ["ann"] + (0..<6).map { "r\($0)" })
        let one = Self.rules(store)
        func send(_ id: String, to recipient: String, _ text: String, at second: Int) async throws {
            _ = try await one.judge(Self.message(id, to: recipient, text, at: second), now: Self.minute.addingTimeInterval(Double(second)))
            try await one.ledger.flush()
        }
        try await send("m0", to: "r0", "board meeting notes", at: 0)      // the first ten minutes: held until 20:00
        try await send("l1", to: "r2", "lunch plans", at: 100)            // held until 20:00 too
        try await send("q1", to: "r1", "quarterly numbers", at: 700)      // the next ten, held last: until 30:00
        try await send("s2", to: "r3", "something else", at: 1_300)       // 21:40: the first ten minutes' texts go
        try await one.ledger.flush(final: true)
        #expect(try await Self.duplicateMembers(store, "board meeting notes", id: "m", window: 0) == [], "dropped, never written")
        #expect(try await Self.duplicateMembers(store, "lunch plans", id: "l", window: 0) == [], "dropped, never written")
        #expect(try await Self.duplicateMembers(store, "quarterly numbers", id: "q", window: 600) == ["r1"], "still held, written at the stop")
        #expect(try await Self.duplicateMembers(store, "something else", id: "s", window: 1_200) == ["r3"])
    }

    /// Erasing a user while a daemon runs: nothing of theirs that the daemon held or had not written yet reaches the
    /// store afterwards — their counters, their texts held unwritten, their membership in someone else's text, the
    /// message request they sent — whether the daemon heard of the erasure (a sync: it forgets them) or not (it stops
    /// first: the store leaves them out of the write). Other users' counts are written as before.
    @Test(arguments: [true, false])
    func anErasedUsersUnwrittenCountsAreNotWrittenBack(daemonHearsOfIt: Bool) async throws {
        let (daemonStore, apiStore) = try Self.sharedStores()
        try await Self.everyoneMayMessage(daemonStore, ["ann", "cy", "r0", "r1"])
        var timing = ConversationLedger.Timing()
        timing.syncInterval = daemonHearsOfIt ? .zero : .seconds(3_600)
        let rules = Self.rules(daemonStore, timing: timing)
        func send(_ id: String, from sender: String, to recipient: String, _ text: String, at second: Int) async throws {
            _ = try await rules.judge(Self.message(id, from: sender, to: recipient, text, at: second), now: Self.minute.addingTimeInterval(Double(second)))
        }
        try await send("m0", from: "ann", to: "r0", "see the slides", at: 0)
        try await send("c0", from: "cy", to: "ann", "see you there", at: 1)
        try await rules.ledger.flush()  // both texts held; both senders' floods written
        try await send("m1", from: "ann", to: "r1", "another note", at: 2)
        try await send("m2", from: "ann", to: "zed", "hello zed", at: 3)  // zed follows nobody: a message request
        try await apiStore.eraseRelations(of: "ann")
        if daemonHearsOfIt { try await send("c1", from: "cy", to: "r0", "unrelated", at: 4) }
        try await rules.ledger.flush(final: true)

        let flood = { (user: String) in CounterSlot(key: "spam.flood:\(user)", windowStart: 1_800_000_000) }
        let floods = try await apiStore.conversationState(sender: "cy", recipient: "r0", facts: false, counted: [flood("ann"), flood("cy")], distinct: [])
        #expect(floods.totals[flood("ann")] == nil, "ann's flood counter stays erased")
        #expect(floods.totals[flood("cy")] == (daemonHearsOfIt ? 2 : 1), "cy's counts are written")
        #expect(try await Self.duplicateMembers(apiStore, "see the slides") == [], "ann's held text is not written")
        #expect(try await Self.duplicateMembers(apiStore, "another note") == [])
        let cyText = CounterSlot(key: "spam.duplicates:cy:\(MessageSignals.fingerprint("see you there c0"))", windowStart: 1_800_000_000)
        #expect(try await apiStore.conversationState(sender: "cy", recipient: "r0", facts: false, counted: [], distinct: [cyText]).members[cyText] == [],
                "ann is not written back as the recipient of cy's text")
        #expect(try await apiStore.relationFacts(sender: "ann", recipient: "zed").requestsSent == 0, "ann's message request is not written back")
    }

    @Test func aBlockReachesARunningDaemonAndRequestsAreWrittenOnce() async throws {
        let (daemonStore, apiStore) = try Self.sharedStores()
        var timing = ConversationLedger.Timing()
        timing.syncInterval = .zero
        let rules = Self.rules(daemonStore, timing: timing)
        // Followers-only privacy (the default) and no follow: one message request, then blocked until a follow back.
        let request = try await rules.judge(Self.message("q1"), now: Self.minute)
        #expect(request.outcome == .none)
        let again = try await rules.judge(Self.message("q2"), now: Self.minute)
        #expect(again.outcome == .block && again.reason?.hasPrefix("message request limit") == true, "\(again)")
        try await rules.ledger.flush()
        try await rules.ledger.flush()
        #expect(try await apiStore.relationFacts(sender: "ann", recipient: "bob").requestsSent == 1)

        // The API (another process) records a follow back, then a block: the running daemon sees each.
        let relations = Relations(store: apiStore, conversation: ConversationConfig())
        _ = try await relations.follow("bob", "ann", on: true)
        #expect(try await rules.judge(Self.message("q3"), now: Self.minute).outcome == .none)
        _ = try await relations.block("bob", "ann", on: true)
        let blocked = try await rules.judge(Self.message("q4"), now: Self.minute)
        #expect(blocked.outcome == .block && blocked.reason == MessagingPermission.recipientBlockedSender)
        #expect(blocked.autoReply == ConversationConfig().autoReply)
    }

    @Test func aNewWindowReadForEveryBusySenderAtOnceStillCountsWhatOthersCounted() async throws {
        let (first, second) = try Self.sharedStores()
        try await Self.everyoneMayMessage(first, ["xan", "yve", "bob"])
        let one = Self.rules(first), two = Self.rules(second)
        // Minute 0: the second daemon hears from both senders, so both are busy there.
        _ = try await two.judge(Self.message("x0", from: "xan", at: 0), now: Self.minute)
        _ = try await two.judge(Self.message("y0", from: "yve", at: 1), now: Self.minute.addingTimeInterval(1))
        // Minute 1: fifteen messages of xan's go through the first daemon and are written.
        let next = Self.minute.addingTimeInterval(60)
        for index in 0..<15 { _ = try await one.judge(Self.message("x1-\(index)", from: "xan", at: 60 + index), now: next) }
        try await one.ledger.flush()
        // yve's first message of minute 1 reads xan's minute 1 along; xan's 21st message of that minute is a flood.
        _ = try await two.judge(Self.message("y1", from: "yve", at: 61), now: next)
        var outcomes: [ConversationVerdict.Outcome] = []
        for index in 15..<21 { outcomes.append(try await two.judge(Self.message("x1-\(index)", from: "xan", at: 60 + index), now: next).outcome) }
        #expect(outcomes == [.none, .none, .none, .none, .none, .review], "\(outcomes)")
    }
}
