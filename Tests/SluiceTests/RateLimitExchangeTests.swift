import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SluiceAPI
import SluiceCore
import SluiceServices
import SluiceTesting
import Testing

/// Per-user limits counted in each API process's memory and exchanged with the store: exact in one process, and
/// with several processes over by no more than what the others held back and admitted since the last exchange (the
/// README's bound).
@Suite struct RateLimitExchangeTests {
    /// An API process over `root` whose `validate_text` limit is `limit` an hour (10: a hold-back of 0 at the default 5%);
    /// the processes share the store file. Their clock stands still at one instant of the test's (so no run crosses the
    /// hour and starts a new window).
    static func process(_ root: TemporaryDataRoot, exchangeMilliseconds: Int, limit: Int = 10, at instant: Date) async throws -> some ApplicationProtocol {
        try await SeedClientTests.application(root, now: { instant }) { config in
            config.limits.rate.textMessage = RateLimitRule(limit: limit, windowSeconds: 3600)
            config.limits.rate.exchangeMilliseconds = exchangeMilliseconds
        }
    }

    static func validate(_ client: some TestClientProtocol, as user: String) async throws -> Bool {
        try await client.execute(uri: "/v1/functions/validate_text", method: .post, headers: SeedClientTests.user(user),
                                 body: ByteBuffer(string: #"{"data": {"text": "hello there"}}"#)) { response in
            #expect(response.status == .ok || response.status == .tooManyRequests, "\(String(buffer: response.body))")
            return response.status == .ok
        }
    }

    /// The user's `text_message` count as `get_rate_limits` shows it: a process that has not counted for the user in
    /// this window reads it from the store.
    static func count(_ client: some TestClientProtocol, as user: String) async throws -> Int {
        try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post, headers: SeedClientTests.user(user),
                                 body: ByteBuffer(string: #"{"data": {}}"#)) { response -> Int in
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            let json = SeedClientTests.json(response.body)
            return ((json["result"] as? [String: Any])?["text_message"] as? [String: Any])?["current"] as? Int ?? 0
        }
    }

    /// Waits (up to 60 s) until `get_rate_limits` shows the user's `text_message` count at `count` or more: the
    /// process has read the stored count in the background (or, for one that has not counted for the user, the store
    /// holds it).
    static func waitForCount(_ client: some TestClientProtocol, as user: String, atLeast count: Int) async throws {
        let read = try await waitUntil(every: 20) { try await Self.count(client, as: user) >= count }
        if !read { Issue.record("the stored count of \(user) was not read within 60 s") }
    }

    @Test func oneProcessIsExactAndTheWindowSurvivesARestart() async throws {
        let root = try TemporaryDataRoot()
        let instant = Date()
        let first = try await Self.process(root, exchangeMilliseconds: 60_000, at: instant).test(.live) { client -> [Bool] in
            var outcomes: [Bool] = []
            for _ in 0..<11 { outcomes.append(try await Self.validate(client, as: "ann")) }
            return outcomes
        }
        #expect(first == Array(repeating: true, count: 10) + [false], "\(first)")
        // The process stopped gracefully and wrote its counts. The next one answers a user's first request while it
        // reads their count in the background (the documented bound: what it admits in that time), then refuses.
        let after = try await Self.process(root, exchangeMilliseconds: 60_000, at: instant).test(.live) { client -> [Bool] in
            var outcomes = [try await Self.validate(client, as: "ann")]
            try await Self.waitForCount(client, as: "ann", atLeast: 10)
            for _ in 0..<3 { outcomes.append(try await Self.validate(client, as: "ann")) }
            return outcomes
        }
        #expect(after == [true, false, false, false], "\(after)")
    }

    @Test func processesThatHaveNotExchangedGoOverByWhatTheOthersAdmitted() async throws {
        let root = try TemporaryDataRoot()
        let instant = Date()
        let first = try await Self.process(root, exchangeMilliseconds: 60_000, at: instant)
        let second = try await Self.process(root, exchangeMilliseconds: 60_000, at: instant)
        let (a, b) = try await first.test(.router) { one -> (Int, Int) in
            try await second.test(.router) { two -> (Int, Int) in
                var a = 0, b = 0
                for _ in 0..<6 where try await Self.validate(one, as: "bea") { a += 1 }
                // The second process has not heard of those six: it admits up to the limit on its own.
                for _ in 0..<15 where try await Self.validate(two, as: "bea") { b += 1 }
                return (a, b)
            }
        }
        #expect(a == 6 && b == 10)
        #expect(a + b <= 10 + a, "the bound: the limit plus what the other process admitted since the last exchange")
    }

    /// With a limit of 60 the hold-back is 3: a window's first three counts wait in the process, the fourth sends all
    /// four, and a graceful stop writes what was held back.
    @Test func aProcessHoldsBackAFewCountsAndWritesThemWhenItStops() async throws {
        let root = try TemporaryDataRoot()
        let instant = Date()
        let reader = try await Self.process(root, exchangeMilliseconds: 60_000, limit: 60, at: instant)
        try await Self.process(root, exchangeMilliseconds: 10, limit: 60, at: instant).test(.live) { client in
            try await reader.test(.router) { store in
                for _ in 0..<2 { #expect(try await Self.validate(client, as: "dee")) }
                // Thirty exchanges later the two counts are still the process's own.
                try await Task.sleep(for: .milliseconds(300))
                #expect(try await Self.count(store, as: "dee") == 0)
                #expect(try await Self.count(client, as: "dee") == 2)
                for _ in 0..<2 { #expect(try await Self.validate(client, as: "dee")) }
                try await Self.waitForCount(store, as: "dee", atLeast: 4)
                #expect(try await Self.count(store, as: "dee") == 4)
                for _ in 0..<2 { #expect(try await Self.validate(client, as: "dee")) }
            }
        }
        // The process stopped gracefully and wrote the two it held back.
        let counted = try await Self.process(root, exchangeMilliseconds: 60_000, limit: 60, at: instant).test(.router) { client in
            try await Self.count(client, as: "dee")
        }
        #expect(counted == 6)
    }

    /// The bound with a hold-back: a process that has not read the window since its last write admits, on top of the
    /// limit, what it held back and the request that sends it (hold-back + 1), when the user waits for each exchange.
    @Test func processesGoOverByWhatTheOthersHeldBackPlusOne() async throws {
        let root = try TemporaryDataRoot()
        let instant = Date()
        let reader = try await Self.process(root, exchangeMilliseconds: 60_000, limit: 60, at: instant)
        let first = try await Self.process(root, exchangeMilliseconds: 10, limit: 60, at: instant)
        let second = try await Self.process(root, exchangeMilliseconds: 10, limit: 60, at: instant)
        let (early, middle, late) = try await reader.test(.router) { store -> (Int, Int, Int) in
            try await first.test(.live) { one -> (Int, Int, Int) in
                try await second.test(.live) { two -> (Int, Int, Int) in
                    // Four counts on the first process: more than its hold-back, so written.
                    var early = 0
                    for _ in 0..<4 where try await Self.validate(one, as: "eve") { early += 1 }
                    try await Self.waitForCount(store, as: "eve", atLeast: 4)
                    // The second process learns those four, then admits up to the limit.
                    var middle = try await Self.validate(two, as: "eve") ? 1 : 0
                    try await Self.waitForCount(two, as: "eve", atLeast: 5)
                    for _ in 0..<70 where try await Self.validate(two, as: "eve") { middle += 1 }
                    try await Self.waitForCount(store, as: "eve", atLeast: 60)
                    // The first still knows the window at four: it admits three it holds back and a fourth that sends
                    // them, whose exchange tells it the total.
                    var late = 0
                    for _ in 0..<10 where try await Self.validate(one, as: "eve") {
                        late += 1
                        if late == 4 { try await Self.waitForCount(store, as: "eve", atLeast: 64) }
                    }
                    return (early, middle, late)
                }
            }
        }
        #expect(early == 4 && middle == 56 && late == 4, "\(early) \(middle) \(late)")
        #expect(early + middle + late <= 60 + 3 + 1, "the bound: the limit plus the other process's hold-back and one")
    }

    /// Erasing a user (the backend's `DELETE /v1/users/{id}` on another process) deletes their windows, and the process
    /// that counted for them writes none of it back: not one that hears of it at an exchange while it runs (it forgets
    /// the window; the user's next request starts a new one), nor one that stops first (its last write leaves them out).
    @Test(arguments: [10, 60_000])
    func anErasedUsersCountsAreNotWrittenBack(exchangeMilliseconds: Int) async throws {
        let root = try TemporaryDataRoot()
        let instant = Date()
        let hearsOfIt = exchangeMilliseconds < 60_000
        // Three counts written by a process that stopped.
        try await Self.process(root, exchangeMilliseconds: 60_000, limit: 60, at: instant).test(.live) { client async throws -> Void in
            for _ in 0..<3 { #expect(try await Self.validate(client, as: "ann")) }
        }
        let eraser = try await Self.process(root, exchangeMilliseconds: 60_000, limit: 60, at: instant)
        // Two more on a process that holds them back (a hold-back of 3 at a limit of 60): they are in its memory only.
        try await Self.process(root, exchangeMilliseconds: exchangeMilliseconds, limit: 60, at: instant).test(.live) { client async throws -> Void in
            for _ in 0..<2 { #expect(try await Self.validate(client, as: "ann")) }
            try await Self.waitForCount(client, as: "ann", atLeast: 5)
            try await eraser.test(.router) { other async throws -> Void in
                try await other.execute(uri: "/v1/users/ann", method: .delete, headers: SeedClientTests.app) { response in
                    #expect(response.status == .ok, "\(String(buffer: response.body))")
                }
                #expect(try await Self.count(other, as: "ann") == 0, "the erasure deletes the stored window")
            }
            guard hearsOfIt else { return }
            let forgot = try await waitUntil(every: 20) { try await Self.count(client, as: "ann") == 0 }
            #expect(forgot, "the process forgets the window at its next exchange")
            #expect(try await Self.validate(client, as: "ann"))
            #expect(try await Self.count(client, as: "ann") == 1)
        }
        // What is stored once both stopped: nothing of what was counted before the erasure.
        let stored = try await Self.process(root, exchangeMilliseconds: 60_000, limit: 60, at: instant).test(.router) { client in
            try await Self.count(client, as: "ann")
        }
        #expect(stored == (hearsOfIt ? 1 : 0))
    }

    /// With `exchangeMilliseconds: 0`, requests made one after another, alternating between two processes, are judged
    /// on both processes' counts: exactly the limit gets through, whether the ledger's service runs (`.live`: a
    /// server, where requests otherwise leave exchanges to the service) or not (`.router`). Four users, a pair of
    /// processes each.
    @Test(arguments: [TestingSetup.router, .live])
    func processesThatExchangeOnEveryRequestAgreeExactly(setup: TestingSetup) async throws {
        let root = try TemporaryDataRoot()
        let instant = Date()
        for (round, user) in ["cy", "di", "ed", "fa"].enumerated() {
            let first = try await Self.process(root, exchangeMilliseconds: 0, at: instant)
            let second = try await Self.process(root, exchangeMilliseconds: 0, at: instant)
            let outcomes = try await first.test(setup) { one -> [Bool] in
                try await second.test(setup) { two -> [Bool] in
                    var outcomes: [Bool] = []
                    for index in 0..<16 {
                        outcomes.append(index % 2 == 0 ? try await Self.validate(one, as: user) : try await Self.validate(two, as: user))
                    }
                    return outcomes
                }
            }
            #expect(outcomes.filter { $0 }.count == 10, "round \(round): \(outcomes)")
            #expect(outcomes.prefix(10).allSatisfy { $0 } && outcomes.suffix(6).allSatisfy { !$0 }, "round \(round): \(outcomes)")
        }
    }

    /// 600 users exchanged every 200 ms are more windows per exchange than it handles per hold of its lock (256),
    /// so counts made while an exchange goes through its chunks must neither be lost nor sent twice.
    @Test(arguments: [(users: 40, exchangeMilliseconds: 5), (users: 600, exchangeMilliseconds: 200)])
    func concurrentRequestsOfManyNewUsersAreEachCountedExactly(users: Int, exchangeMilliseconds: Int) async throws {
        let root = try TemporaryDataRoot()
        let instant = Date()
        let admitted = try await Self.process(root, exchangeMilliseconds: exchangeMilliseconds, at: instant).test(.router) { client -> [String: Int] in
            try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                for index in 0..<(users * 12) {
                    let user = "user\(index % users)"
                    group.addTask { (user, try await Self.validate(client, as: user)) }
                }
                var admitted: [String: Int] = [:]
                for try await (user, allowed) in group where allowed { admitted[user, default: 0] += 1 }
                return admitted
            }
        }
        #expect(admitted.count == users && admitted.values.allSatisfy { $0 == 10 }, "\(admitted.filter { $0.value != 10 })")
    }
}
