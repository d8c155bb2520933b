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
/// with several processes over by no more than what the others admitted since the last exchange (the README's bound).
@Suite struct RateLimitExchangeTests {
    /// An API process over `root` whose `validate_text` limit is 10 an hour; the processes share the store file. Their
    /// clock stands still at one instant of the test's (so no run crosses the hour and starts a new window).
    static func process(_ root: TemporaryDataRoot, exchangeMilliseconds: Int, at instant: Date) async throws -> some ApplicationProtocol {
        try await SeedClientTests.application(root, now: { instant }) { config in
            config.limits.rate.textMessage = RateLimitRule(limit: 10, windowSeconds: 3600)
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

    /// Waits (up to 60 s) until `get_rate_limits` shows the user's `text_message` count at `count` or more: the
    /// process has read the stored count in the background.
    static func waitForCount(_ client: some TestClientProtocol, as user: String, atLeast count: Int) async throws {
        let read = try await waitUntil(every: 20) {
            let current = try await client.execute(uri: "/v1/functions/get_rate_limits", method: .post, headers: SeedClientTests.user(user),
                                                   body: ByteBuffer(string: #"{"data": {}}"#)) { response -> Int in
                let json = SeedClientTests.json(response.body)
                return ((json["result"] as? [String: Any])?["text_message"] as? [String: Any])?["current"] as? Int ?? 0
            }
            return current >= count
        }
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

    @Test func processesThatExchangeOnEveryRequestAgreeExactly() async throws {
        let root = try TemporaryDataRoot()
        let instant = Date()
        let first = try await Self.process(root, exchangeMilliseconds: 0, at: instant)
        let second = try await Self.process(root, exchangeMilliseconds: 0, at: instant)
        let outcomes = try await first.test(.router) { one -> [Bool] in
            try await second.test(.router) { two -> [Bool] in
                var outcomes: [Bool] = []
                for index in 0..<16 {
                    outcomes.append(index % 2 == 0 ? try await Self.validate(one, as: "cy") : try await Self.validate(two, as: "cy"))
                }
                return outcomes
            }
        }
        #expect(outcomes.filter { $0 }.count == 10, "\(outcomes)")
        #expect(outcomes.prefix(10).allSatisfy { $0 } && outcomes.suffix(6).allSatisfy { !$0 }, "\(outcomes)")
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
