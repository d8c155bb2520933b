import Foundation
import SluiceCore
import SluiceDaemon
import SluiceProviders
import SluiceServices
import SluiceTesting
import Synchronization
import Testing

/// Outbound webhooks as a receiving backend sees them: signed bodies it can verify, the same delivery id on every
/// attempt, retries from the store's outbox that survive a restart, and failures an operator can see and resend.
@Suite(.serialized) struct WebhookTests {
    static let secret = "whsec-test-0123456789"

    /// A clock the test moves.
    final class Clock: Sendable {
        private let value: Mutex<Date>
        init(_ start: Date) { value = Mutex(start) }
        var now: Date { value.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    static func hook(_ receiver: FakeJSONServer, events: [WebhookEvent] = WebhookEvent.allCases, maxAttempts: Int = 12) -> WebhookConfig {
        var hook = WebhookConfig(name: "backend", url: receiver.baseURL + "/hooks/sluice")
        hook.secretEnv = "TEST_WEBHOOK_SECRET"
        hook.events = events
        hook.maxAttempts = maxAttempts
        return hook
    }

    static func dispatcher(_ store: any StatusStore, _ hook: WebhookConfig, clock: Clock) -> WebhookDispatcher {
        WebhookDispatcher(webhooks: [hook], store: store, transport: WebhookHTTPTransport(),
                          environment: ["TEST_WEBHOOK_SECRET": secret], now: { clock.now }, logger: quietLogger)
    }

    /// A data root with a clean vision provider, its services, and a registered dispatcher for one webhook whose
    /// receiver answers 503 (so every delivery stays in the outbox to be read).
    static func withUndeliverableWebhook(_ body: (TemporaryDataRoot, FakeVisionServer, Services, WebhookDispatcher) async throws -> Void)
        async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let down = try await FakeJSONServer.start { _, _ in .init(status: 503, body: "") }
        defer { down.stop() }
        let services = try await Services.live(config: root.config(endpoint: vision.endpoint), environment: [:], logger: quietLogger)
        let dispatcher = Self.dispatcher(services.store, Self.hook(down), clock: Clock(Date()))
        try await dispatcher.register()
        try await body(root, vision, services, dispatcher)
    }

    /// Erasing a user leaves no words of theirs in the outbox: deliveries about their items lose their `reason` (which
    /// quoted the message), and keep their event, ids and statuses.
    @Test func erasureRedactsTheReasonsOfUndeliveredWebhooks() async throws {
        try await Self.withUndeliverableWebhook { root, vision, services, dispatcher in
            try root.writeQueue("q.jsonl", [#"{"id": "f1", "userId": "fay", "text": "fuck off"}"#, #"{"id": "g1", "userId": "gil", "text": "shit happens"}"#])
            _ = try await runOnce(root, server: vision)
            _ = await dispatcher.pass()
            let before = try await services.store.webhookDeliveries(state: nil, limit: 100)
            #expect(before.contains { $0.payload.contains("fuck") } && before.contains { $0.payload.contains("shit") })
            _ = try await services.erasure.eraseUser("fay", by: "test", reason: "erasure request")
            _ = await dispatcher.pass()
            let after = try await services.store.webhookDeliveries(state: nil, limit: 100)
            #expect(!after.contains { $0.payload.contains("fuck") }, "\(after.map(\.payload))")
            #expect(after.contains { $0.payload.contains("shit") }, "another user's delivery is untouched")
            let fay = after.filter { $0.payload.contains(#""id":"f1""#) || $0.payload.contains(#""id": "f1""#) }
            #expect(fay.contains { $0.event == .deleted }, "the erasure itself is announced")
            #expect(fay.filter { $0.event != .deleted }.allSatisfy { delivery in
                let data = (try? JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any])?["data"] as? [String: Any]
                return data?["reason"] is NSNull && data?["status"] as? String == "blocked"
            }, "\(fay.map(\.payload))")
        }
    }

    /// A message stopped because its recipient blocked the sender tells the backend what to show the sender (seed
    /// 004's `autoReply`, as the item's JSON does); every other status change carries `autoReply: null`.
    @Test func aMessageToSomeoneWhoBlockedTheSenderCarriesTheAutoReply() async throws {
        try await Self.withUndeliverableWebhook { root, vision, services, dispatcher in
            try await ConversationRulesTests.application(root).test(.router) { client in
                _ = try await ConversationRulesTests.call(client, "blockUser", as: "rae", #"{"userId": "sid"}"#)
            }
            try root.writeQueue("q.jsonl", [#"{"id": "b1", "userId": "sid", "recipientId": "rae", "text": "hello"}"#,
                                            #"{"id": "b2", "userId": "sid", "text": "shit happens"}"#,
                                            #"{"id": "b3", "userId": "sid", "text": "hello"}"#])
            _ = try await runOnce(root, server: vision)
            _ = await dispatcher.pass()
            let deliveries = try await services.store.webhookDeliveries(state: nil, limit: 100)
            func data(_ id: String) -> [String: Any]? {
                deliveries.lazy.compactMap { delivery in
                    (try? JSONSerialization.jsonObject(with: Data(delivery.payload.utf8)) as? [String: Any])?["data"] as? [String: Any]
                }.first { $0["id"] as? String == id }
            }
            let stopped = try #require(data("b1"), "\(deliveries.map(\.payload))")
            #expect(stopped["status"] as? String == "blocked" && stopped["reason"] as? String == "recipient has blocked the sender")
            #expect(stopped["autoReply"] as? String == "This user has blocked you", "\(stopped)")
            let sworn = try #require(data("b2"))
            #expect(sworn["status"] as? String == "blocked" && sworn["autoReply"] is NSNull, "\(sworn)")
            let fine = try #require(data("b3"))
            #expect(fine["status"] as? String == "approved" && fine["autoReply"] is NSNull, "\(fine)")
        }
    }

    /// A receiver that answers slowly holds up only its own deliveries: while one of its requests hangs, another
    /// webhook's new deliveries still go out every tick.
    @Test func aSlowReceiverHoldsUpOnlyItsOwnDeliveries() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let slow = try await FakeJSONServer.start { _, _ in .init(status: 204, body: "", delay: 30) }
        let fast = try await FakeJSONServer.start { _, _ in .init(status: 204, body: "") }
        defer { fast.stop() }
        var slowHook = Self.hook(slow, events: [.approved])
        slowHook.name = "slow"
        slowHook.timeoutSeconds = 60
        var fastHook = Self.hook(fast, events: [.approved])
        fastHook.name = "fast"
        let services = try await Services.live(config: root.config(endpoint: vision.endpoint), environment: [:], logger: quietLogger)
        let dispatcher = WebhookDispatcher(webhooks: [slowHook, fastHook], store: services.store, transport: WebhookHTTPTransport(),
                                           environment: ["TEST_WEBHOOK_SECRET": Self.secret], interval: .milliseconds(50), logger: quietLogger)
        try await dispatcher.register()
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "dana", name: "one.jpg")
        _ = try await runOnce(root, server: vision)
        let running = Task { try await dispatcher.run() }
        #expect(await waitUntil(seconds: 20) { slow.received.count == 1 && fast.received.count == 1 })
        // The slow receiver is still answering its first request (30 s); a second change reaches the fast one meanwhile.
        try root.drop(TestEnvironment.fixture("images/photos/hubble_deep_field.jpg"), user: "dana", name: "two.jpg")
        _ = try await runOnce(root, server: vision)
        #expect(await waitUntil(seconds: 20) { fast.received.count == 2 }, "the fast webhook waited for the slow one")
        slow.stop()
        running.cancel()
        _ = try? await running.value
    }

    /// A webhook's next delivery starts as soon as one ends, not at the next tick: 40 changes reach a quick receiver
    /// long before a 30 s tick would have let a third batch of 16 go.
    @Test func aQuickReceiverIsNotHeldToOneBatchPerTick() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let receiver = try await FakeJSONServer.start { _, _ in .init(status: 204, body: "") }
        defer { receiver.stop() }
        let hook = Self.hook(receiver, events: [.approved])
        let services = try await Services.live(config: root.config(endpoint: vision.endpoint), environment: [:], logger: quietLogger)
        let dispatcher = WebhookDispatcher(webhooks: [hook], store: services.store, transport: WebhookHTTPTransport(),
                                           environment: ["TEST_WEBHOOK_SECRET": Self.secret], interval: .seconds(30), logger: quietLogger)
        try await dispatcher.register()
        try root.writeQueue("many.jsonl", (0..<40).map { #"{"id": "q\#($0)", "userId": "u", "text": "hello \#($0)"}"# })
        _ = try await runOnce(root, server: vision)
        let running = Task { try await dispatcher.run() }
        #expect(await waitUntil(seconds: 20) { receiver.received.count == 40 }, "\(receiver.received.count) of 40 delivered")
        running.cancel()
        _ = try? await running.value
    }

    @Test func deliveriesAreSignedRetriedAndSurviveARestart() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        // The backend is down for the first attempt, then answers.
        let receiver = try await FakeJSONServer.start { _, index in
            index == 0 ? .init(status: 503, body: "{}") : .init(status: 204, body: "")
        }
        defer { receiver.stop() }
        let clock = Clock(Date())
        let hook = Self.hook(receiver, events: [.approved, .deleted])
        // A webhook hears what happens after it is configured (`sluice run` registers it before judging anything).
        let before = try await Services.live(config: root.config(endpoint: vision.endpoint), environment: [:], logger: quietLogger)
        try await Self.dispatcher(before.store, hook, clock: clock).register()
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "dana", name: "hello.jpg")
        let store = try await runOnce(root, server: vision)

        let first = await Self.dispatcher(store, hook, clock: clock).pass()
        #expect(first == .init(queued: 1, delivered: 0, retrying: 1, failed: 0))
        let pending = try await store.webhookDeliveries(state: .pending, limit: 10)
        #expect(pending.count == 1 && pending.first?.attempts == 1 && pending.first?.lastError?.contains("503") == true,
                "\(pending)")

        // Nothing is due before the backoff has passed, and a new dispatcher (a restarted daemon) queues nothing twice.
        let early = await Self.dispatcher(store, hook, clock: clock).pass()
        #expect(early == .init(queued: 0, delivered: 0, retrying: 0, failed: 0))
        clock.advance(3600)
        let second = await Self.dispatcher(store, hook, clock: clock).pass()
        #expect(second == .init(queued: 0, delivered: 1, retrying: 0, failed: 0))

        let received = receiver.received
        try #require(received.count == 2)
        for request in received {
            #expect(request.method == "POST" && request.path == "/hooks/sluice")
            #expect(request.headers["content-type"] == "application/json")
            let signature = try #require(request.headers["x-sluice-signature"])
            #expect(WebhookSignature.isValid(signature, secret: Self.secret, body: request.body, now: clock.now, tolerance: 7200))
            #expect(!WebhookSignature.isValid(signature, secret: "another secret", body: request.body, now: clock.now, tolerance: 7200))
            #expect(!WebhookSignature.isValid(signature, secret: Self.secret, body: request.body + Data(" ".utf8), now: clock.now, tolerance: 7200))
        }
        #expect(received[0].headers["x-sluice-delivery"] == received[1].headers["x-sluice-delivery"], "one idempotency id for every attempt")
        #expect(received[0].body == received[1].body)
        let payload = try #require(received[1].json)
        #expect(payload["type"] as? String == "item.approved")
        #expect(payload["id"] as? String == received[1].headers["x-sluice-delivery"])
        let data = try #require(payload["data"] as? [String: Any])
        #expect(data["id"] as? String == "dana/hello" && data["userId"] as? String == "dana")
        #expect(data["status"] as? String == "approved" && data["imageStatus"] as? String == "approved" && data["previousStatus"] as? String == "pending")
        let delivered = try await store.webhookDeliveries(state: .delivered, limit: 10)
        #expect(delivered.count == 1 && delivered.first?.attempts == 2 && delivered.first?.deliveredAt != nil)

        // An erasure is an item.deleted delivery.
        let services = try await Services.live(config: root.config(endpoint: vision.endpoint), environment: [:], logger: quietLogger)
        _ = try await services.erasure.erase(try #require(ImageRef(userId: "dana", imageId: "hello")).itemID, by: "app", reason: "test")
        let third = await Self.dispatcher(services.store, hook, clock: clock).pass()
        #expect(third.queued == 1 && third.delivered == 1)
        let deleted = try #require(receiver.received.last?.json)
        #expect(deleted["type"] as? String == "item.deleted")
        #expect((deleted["data"] as? [String: Any])?["erasedBy"] as? String == "app")
    }

    /// A rolling config change: the dispatcher holding the claim may not know a webhook another daemon queued for
    /// yet. Its deliveries wait (15 minutes from when that dispatcher first found them, however old they are) for
    /// one that does, without using up attempts; then they fail, named.
    @Test func deliveriesOfAWebhookThisDaemonDoesNotKnowWaitThenFail() async throws {
        let root = try TemporaryDataRoot()
        let receiver = try await FakeJSONServer.start { _, _ in .init(status: 204, body: "") }
        defer { receiver.stop() }
        let services = try await Services.live(config: root.config(endpoint: "http://127.0.0.1:9/v1/images:annotate"), environment: [:], logger: quietLogger)
        let store = services.store
        let clock = Clock(Date())
        let known = Self.hook(receiver)
        var other = known
        other.name = "analytics"
        func queue(_ id: String, createdAt: Date? = nil) async throws {
            try await store.enqueueWebhookDeliveries([WebhookDelivery(id: id, webhook: "backend", event: .approved, payload: #"{"id":"\#(id)"}"#,
                                                                      nextAttemptAt: clock.now, createdAt: createdAt ?? clock.now)],
                                                     webhook: "backend", cursor: try await store.webhookCursor("backend"))
        }
        let stranger = Self.dispatcher(store, other, clock: clock)
        try await queue("whd_a")
        #expect(await stranger.pass() == .init(queued: 0, delivered: 0, retrying: 1, failed: 0))
        let waiting = try #require(try await store.webhookDeliveries(state: .pending, limit: 10).first)
        #expect(waiting.lastError?.contains("webhook backend is not in this daemon's config; waiting") == true, "\(waiting)")
        #expect(waiting.attempts == 0, "waiting is not an attempt")
        #expect(receiver.received.isEmpty)
        // A daemon that has it sends it when it is due again: its first attempt.
        clock.advance(5 * 60)
        #expect(await Self.dispatcher(store, known, clock: clock).pass().delivered == 1)
        #expect(receiver.received.count == 1)
        #expect(try await store.webhookDeliveries(state: .delivered, limit: 10).first?.attempts == 1)
        // An old delivery (queued an hour ago, say retrying through an outage) still gets the whole wait.
        try await queue("whd_old", createdAt: clock.now.addingTimeInterval(-3600))
        #expect(await stranger.pass() == .init(queued: 0, delivered: 0, retrying: 1, failed: 0))
        clock.advance(5 * 60)
        #expect(await Self.dispatcher(store, known, clock: clock).pass().delivered == 1)
        #expect(receiver.received.count == 2)
        // Nobody with it for 15 minutes: failed, saying what to do.
        try await queue("whd_b")
        for _ in 0..<3 {
            _ = await stranger.pass()
            clock.advance(5 * 60 + 1)
        }
        #expect(await stranger.pass().failed == 1)
        let failed = try #require(try await store.webhookDeliveries(state: .failed, limit: 10).first)
        #expect(failed.id == "whd_b" && failed.lastError?.contains("add it to webhooks[] and resend with sluice webhooks retry") == true, "\(failed)")
        #expect(failed.attempts == 1, "the waits used no attempts; the failure is one")
        #expect(receiver.received.count == 2)
        // The waits of the two another daemon delivered are forgotten once they are older than any wait could be.
        #expect(stranger.rememberedUnknownDeliveries == 2)
        clock.advance(30 * 60 + 1)
        try await queue("whd_c")
        _ = await stranger.pass()
        #expect(stranger.rememberedUnknownDeliveries == 1)
    }

    /// A receiver's redirect is not followed: the signed body goes only to the configured URL, and the delivery
    /// fails at once, naming where it pointed.
    @Test func aRedirectingReceiverIsNotFollowed() async throws {
        let root = try TemporaryDataRoot()
        let elsewhere = try await FakeJSONServer.start { _, _ in .init(status: 204, body: "") }
        defer { elsewhere.stop() }
        let receiver = try await FakeJSONServer.start { _, _ in
            .init(status: 308, body: "", headers: ["Location": elsewhere.baseURL + "/hooks/other"])
        }
        defer { receiver.stop() }
        let services = try await Services.live(config: root.config(endpoint: "http://127.0.0.1:9/v1/images:annotate"), environment: [:], logger: quietLogger)
        let clock = Clock(Date())
        try await services.store.enqueueWebhookDeliveries([WebhookDelivery(id: "whd_r", webhook: "backend", event: .approved, payload: #"{"id":"r"}"#,
                                                                           nextAttemptAt: clock.now, createdAt: clock.now)],
                                                          webhook: "backend", cursor: try await services.store.webhookCursor("backend"))
        #expect(await Self.dispatcher(services.store, Self.hook(receiver), clock: clock).pass().failed == 1)
        let failed = try #require(try await services.store.webhookDeliveries(state: .failed, limit: 10).first)
        #expect(failed.lastError == "HTTP 308 (redirects are not followed, Location: \(elsewhere.baseURL)/hooks/other)", "\(failed)")
        #expect(receiver.received.count == 1)
        #expect(elsewhere.received.isEmpty)
    }

    /// The answer's status decides as soon as its head arrives, and the body is read no longer than the webhook's
    /// timeout: a receiver that answers 200 and then drips its body for 80 s is delivered at the timeout (the body used
    /// to be waited out: AsyncHTTPClient's own deadline ends with the head), and one whose head is late fails as a
    /// timeout, to be retried.
    @Test func theTimeoutCoversTheWholeAnswerAndTheStatusDecides() async throws {
        let root = try TemporaryDataRoot()
        let dripping = try await FakeJSONServer.start { _, _ in .init(status: 200, body: String(repeating: " ", count: 400), dripEvery: 0.2) }
        defer { dripping.stop() }
        let late = try await FakeJSONServer.start { _, _ in .init(status: 204, body: "", delay: 60) }
        defer { late.stop() }
        var drippingHook = Self.hook(dripping)
        drippingHook.name = "dripping"
        drippingHook.timeoutSeconds = 2
        var lateHook = Self.hook(late)
        lateHook.name = "late"
        lateHook.timeoutSeconds = 2
        let services = try await Services.live(config: root.config(endpoint: "http://127.0.0.1:9/v1/images:annotate"), environment: [:], logger: quietLogger)
        let clock = Clock(Date())
        for (id, hook) in [("whd_d", "dripping"), ("whd_l", "late")] {
            try await services.store.enqueueWebhookDeliveries([WebhookDelivery(id: id, webhook: hook, event: .approved, payload: #"{"id":"x"}"#,
                                                                               nextAttemptAt: clock.now, createdAt: clock.now)],
                                                              webhook: hook, cursor: try await services.store.webhookCursor(hook))
        }
        let dispatcher = WebhookDispatcher(webhooks: [drippingHook, lateHook], store: services.store, transport: WebhookHTTPTransport(),
                                           environment: ["TEST_WEBHOOK_SECRET": Self.secret], now: { clock.now }, logger: quietLogger)
        let started = ContinuousClock.now
        let pass = await dispatcher.pass()
        #expect(ContinuousClock.now - started < .seconds(40), "a dripping body was waited out")
        #expect(pass.delivered == 1 && pass.retrying == 1, "\(pass)")
        #expect(try await services.store.webhookDeliveries(state: .delivered, limit: 10).map(\.id) == ["whd_d"])
        let waiting = try #require(try await services.store.webhookDeliveries(state: .pending, limit: 10).first)
        #expect(waiting.id == "whd_l" && waiting.attempts == 1)
        #expect(waiting.lastError == "no answer within 2 s (timeoutSeconds)", "\(waiting)")
    }

    @Test func failedDeliveriesAreListedAndSentAgainFromTheCLI() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let healthy = Mutex(false)
        let receiver = try await FakeJSONServer.start { _, _ in
            healthy.withLock { $0 } ? .init(status: 200, body: "ok") : .init(status: 500, body: "down")
        }
        defer { receiver.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "eve", name: "a.jpg")
        let config = try root.writeConfigFile(endpoint: vision.endpoint, extra: """
        "webhooks": [{ "name": "backend", "url": "\(receiver.baseURL)/hook", "events": ["item.approved"],
                       "secretEnv": "TEST_WEBHOOK_SECRET", "maxAttempts": 1 }]
        """)
        // Without the secret's variable the daemon does not start (its deliveries could not be signed), naming it.
        let unset = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"],
                                    environment: ProcessInfo.processInfo.environment.filter { $0.key != "TEST_WEBHOOK_SECRET" })
        #expect(unset.status != 0 && unset.stderr.contains("webhooks[0]") && unset.stderr.contains("TEST_WEBHOOK_SECRET"), "\(unset)")
        #expect(root.exists("pending/eve/a.jpg"), "nothing was judged")
        // A secret in the file that anyone could guess is a config error.
        let weak = try root.writeConfigFile(endpoint: vision.endpoint, extra: """
        "webhooks": [{ "name": "backend", "url": "\(receiver.baseURL)/hook", "events": ["item.approved"], "secret": "" }]
        """)
        let refused = try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", weak.path, "--log-level", "error"])
        #expect(refused.status != 0 && refused.stderr.contains("webhooks[0].secret") && refused.stderr.contains("at least 16"), "\(refused)")
        _ = try root.writeConfigFile(endpoint: vision.endpoint, extra: """
        "webhooks": [{ "name": "backend", "url": "\(receiver.baseURL)/hook", "events": ["item.approved"],
                       "secretEnv": "TEST_WEBHOOK_SECRET", "maxAttempts": 1 }]
        """)
        let environment = ProcessInfo.processInfo.environment.merging(["TEST_WEBHOOK_SECRET": Self.secret]) { $1 }
        #expect(try await shell(TestEnvironment.sluiceBinary, ["run", "--once", "--config", config.path, "--log-level", "error"],
                                environment: environment).status == 0)
        let deliver = try await shell(TestEnvironment.sluiceBinary, ["webhooks", "deliver", "--config", config.path], environment: environment)
        // `run --once` already made the one allowed attempt.
        #expect(deliver.status == 0 && deliver.stdout.contains("queued 0, delivered 0, retrying 0, failed 0"), "\(deliver)")
        #expect(receiver.received.count == 1)

        let list = try await shell(TestEnvironment.sluiceBinary, ["webhooks", "list", "--state", "failed", "--json", "--config", config.path])
        #expect(list.status == 0, "\(list.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1 && rows.first?["event"] as? String == "item.approved" && rows.first?["attempts"] as? Int == 1)
        #expect((rows.first?["lastError"] as? String)?.contains("500") == true, "\(rows)")
        let table = try await shell(TestEnvironment.sluiceBinary, ["webhooks", "list", "--config", config.path])
        #expect(table.stdout.contains("failed") && table.stdout.contains("1 deliveries"), "\(table.stdout)")

        let bad = try await shell(TestEnvironment.sluiceBinary, ["webhooks", "list", "--state", "lost", "--config", config.path])
        #expect(bad.status != 0 && bad.stderr.contains("--state \"lost\" is not a state"), "\(bad.stderr)")
        let none = try await shell(TestEnvironment.sluiceBinary, ["webhooks", "retry", "--config", config.path])
        #expect(none.status != 0 && none.stderr.contains("name delivery ids, or use --failed"), "\(none.stderr)")
        let unknown = try await shell(TestEnvironment.sluiceBinary, ["webhooks", "retry", "whd_nope", "--config", config.path])
        #expect(unknown.status != 0 && unknown.stdout.hasPrefix("0 deliveries")
                && unknown.stderr.contains("not failed deliveries, left as they are (unknown, pending or delivered): whd_nope"), "\(unknown)")

        healthy.withLock { $0 = true }
        let retry = try await shell(TestEnvironment.sluiceBinary, ["webhooks", "retry", "--failed", "--config", config.path])
        #expect(retry.status == 0 && retry.stdout.hasPrefix("1 deliveries"), "\(retry)")
        let again = try await shell(TestEnvironment.sluiceBinary, ["webhooks", "deliver", "--config", config.path], environment: environment)
        #expect(again.stdout.contains("delivered 1"), "\(again)")
        let last = try #require(receiver.received.last)
        #expect(WebhookSignature.isValid(last.headers["x-sluice-signature"] ?? "", secret: Self.secret, body: last.body))
        #expect(receiver.received.count == 2)
    }

    @Test func backoffDoublesWithJitterUpToAnHour() {
        #expect(WebhookBackoff.delay(afterAttempt: 1, unitRandom: 0.5) == 5)
        #expect(WebhookBackoff.delay(afterAttempt: 3, unitRandom: 0.5) == 20)
        #expect(WebhookBackoff.delay(afterAttempt: 2, unitRandom: 0) == 8)
        #expect(abs(WebhookBackoff.delay(afterAttempt: 2, unitRandom: 1) - 12) < 1e-9)
        #expect(WebhookBackoff.delay(afterAttempt: 30, unitRandom: 0.5) == 3600)
        // A signature older than the tolerance is refused (replay), as is a header that is not ours.
        let body = Data(#"{"a":1}"#.utf8)
        let old = WebhookSignature.value(secret: Self.secret, timestamp: 1_000, body: body)
        #expect(WebhookSignature.isValid(old, secret: Self.secret, body: body, now: Date(timeIntervalSince1970: 1_100)))
        #expect(!WebhookSignature.isValid(old, secret: Self.secret, body: body, now: Date(timeIntervalSince1970: 1_000 + 301)))
        #expect(!WebhookSignature.isValid("v1=abc", secret: Self.secret, body: body))
    }
}
