import Foundation
import Logging
import ServiceLifecycle
import SluiceCore
import Synchronization

/// Outbound webhooks from a durable outbox in the store. Each pass turns the status changes and erasures each
/// webhook has not seen yet into deliveries (queued together with the webhook's advanced cursor, so nothing is
/// lost or queued twice across a restart), then sends what is due: signed, retried with backoff on network
/// errors, timeouts, 408, 429 and 5xx until `maxAttempts`, then `failed` (visible in `sluice webhooks list`,
/// sent again by `sluice webhooks retry`). At least once: a delivery carries the same id on every attempt.
public struct WebhookDispatcher: Service {
    public struct Pass: Sendable, Equatable {
        public var queued = 0
        public var delivered = 0
        public var retrying = 0
        public var failed = 0

        public init(queued: Int = 0, delivered: Int = 0, retrying: Int = 0, failed: Int = 0) {
            self.queued = queued
            self.delivered = delivered
            self.retrying = retrying
            self.failed = failed
        }
    }

    let webhooks: [WebhookConfig]
    let store: any StatusStore
    let transport: any WebhookTransport
    let environment: [String: String]
    let interval: Duration
    let now: @Sendable () -> Date
    /// With several daemons on one store, only the one holding the `webhooks` claim dispatches (two dispatchers
    /// reading the same cursor would queue the same change twice under two delivery ids).
    let leases: WorkLeases?
    let logger: Logger
    /// Deliveries of webhooks missing from this config, and when this dispatcher first found each one (the grace
    /// runs from then: a delivery that was already old, retrying through an outage or resent by an operator, still
    /// gets its full wait).
    private let unknownSince = UnknownWebhookDeliveries()

    /// How many deliveries of webhooks missing from this config it remembers (their grace's start).
    public var rememberedUnknownDeliveries: Int { unknownSince.count }

    final class UnknownWebhookDeliveries: Sendable {
        private let firstSeen = Mutex<[String: Date]>([:])

        /// When `id` was first found unknown (now, the first time). Entries older than `horizon` are dropped on the
        /// way: a delivery still waiting here is seen again every `unknownWebhookRetry` and fails at
        /// `unknownWebhookGrace`, so an older entry is one another daemon delivered, and would otherwise stay for
        /// the life of the process.
        func since(_ id: String, now: Date, horizon: TimeInterval = 2 * WebhookDispatcher.unknownWebhookGrace) -> Date {
            firstSeen.withLock { seen in
                if let first = seen[id], now.timeIntervalSince(first) <= horizon { return first }
                seen = seen.filter { now.timeIntervalSince($0.value) <= horizon }
                seen[id] = now
                return now
            }
        }

        var count: Int { firstSeen.withLock { $0.count } }

        func forget(_ id: String) {
            _ = firstSeen.withLock { $0.removeValue(forKey: id) }
        }
    }

    public init(webhooks: [WebhookConfig], store: any StatusStore, transport: any WebhookTransport,
                environment: [String: String] = ProcessInfo.processInfo.environment, interval: Duration = .seconds(1),
                now: @escaping @Sendable () -> Date = Date.init, leases: WorkLeases? = nil, logger: Logger) {
        self.leases = leases
        self.webhooks = webhooks
        self.store = store
        self.transport = transport
        self.environment = environment
        self.interval = interval
        self.now = now
        self.logger = logger
    }

    /// Records where each newly configured webhook starts (the present: it hears what happens from now on).
    /// `sluice run` calls this before any upload is judged, so nothing judged by this run is missed.
    public func register() async throws {
        // With several daemons only the dispatcher (the claim's holder) writes cursors: one that wrote back a cursor
        // it read before the holder advanced it would have the same changes queued twice.
        if let leases, !(await leases.claim(Self.workUnit)) { return }
        for hook in webhooks {
            let cursor = try await store.webhookCursor(hook.name)
            try await store.enqueueWebhookDeliveries([], webhook: hook.name, cursor: cursor)
        }
    }

    /// Every `interval`: queues what is new and starts what is due, without waiting for deliveries under way. Each
    /// webhook is read and filled on its own — at most `maxInFlightPerWebhook` of its deliveries at once, the next
    /// one started as soon as one ends — so a receiver that answers slowly (or never, until its timeout) holds up
    /// only its own deliveries. On a graceful stop the deliveries under way finish, then one last pass.
    public func run() async throws {
        enum Event: Sendable { case tick, finished(id: String, webhook: String) }
        await withTaskGroup(of: Event.self) { group in
            var inFlight: [String: Set<String>] = [:]
            var dispatching = false
            func start(_ delivery: WebhookDelivery) {
                inFlight[delivery.webhook, default: []].insert(delivery.id)
                group.addTask { _ = await deliver(delivery); return .finished(id: delivery.id, webhook: delivery.webhook) }
            }
            /// Starts due deliveries of `hook` while it has room.
            func fill(_ hook: String) async {
                let running = inFlight[hook, default: []]
                let room = Self.maxInFlightPerWebhook - running.count
                guard dispatching, room > 0 else { return }
                do {
                    // Its deliveries under way are still pending (and due) until recorded: read past them.
                    let due = try await store.dueWebhookDeliveries(at: now(), limit: room + running.count, webhook: hook)
                    for delivery in due where !running.contains(delivery.id) && inFlight[hook, default: []].count < Self.maxInFlightPerWebhook {
                        start(delivery)
                    }
                } catch {
                    logger.warning("cannot read due webhook deliveries", metadata: ["webhook": "\(hook)", "error": "\(error)"])
                }
            }
            group.addTask { .tick }
            while let event = await group.next() {
                let stopping = Task.isShuttingDownGracefully || Task.isCancelled
                switch event {
                case let .finished(id, hook):
                    inFlight[hook]?.remove(id)
                    if !stopping { await fill(hook) }
                case .tick:
                    if stopping { continue }
                    // Claimed again every tick (which extends it): the holder keeps dispatching, and if it dies another
                    // daemon takes over once the claim expires.
                    dispatching = await leases?.claim(Self.workUnit) ?? true
                    if dispatching {
                        _ = await enqueueAll()
                        for hook in webhooks { await fill(hook.name) }
                        // Deliveries of a webhook no longer configured wait (or fail) as in a pass.
                        let known = Set(webhooks.map(\.name))
                        if let due = try? await store.dueWebhookDeliveries(at: now(), limit: 50, webhook: nil) {
                            for delivery in due where !known.contains(delivery.webhook) && inFlight[delivery.webhook, default: []].isEmpty {
                                start(delivery)
                            }
                        }
                    }
                    let interval = interval
                    group.addTask {
                        _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
                        return .tick
                    }
                }
            }
        }
        // A last pass, then the claim goes for another daemon to take.
        _ = await passIfDispatcher()
    }

    /// How many deliveries of one webhook are under way at once.
    static let maxInFlightPerWebhook = 16

    static let workUnit = "webhooks"
    /// How long a delivery of a webhook missing from this dispatcher's config waits for one that has it.
    static let unknownWebhookGrace: TimeInterval = 15 * 60
    /// How often it is looked at again meanwhile.
    static let unknownWebhookRetry: TimeInterval = 5 * 60

    /// One pass if this process may dispatch now (`sluice webhooks deliver` beside running daemons); nil when a
    /// daemon's dispatcher holds the claim.
    public func passIfDispatcher() async -> Pass? {
        guard await leases?.claim(Self.workUnit) ?? true else { return nil }
        let pass = await pass()
        await leases?.release(Self.workUnit)
        return pass
    }

    /// Queues what is new and sends what is due, once.
    @discardableResult
    public func pass() async -> Pass {
        var result = Pass()
        result.queued = await enqueueAll()
        do {
            let due = try await store.dueWebhookDeliveries(at: now(), limit: 200, webhook: nil)
            let outcomes = await withTaskGroup(of: WebhookAttemptOutcome.self, returning: [WebhookAttemptOutcome].self) { group in
                for delivery in due { group.addTask { await deliver(delivery) } }
                var outcomes: [WebhookAttemptOutcome] = []
                for await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            for outcome in outcomes {
                switch outcome {
                case .delivered: result.delivered += 1
                case .retry, .postponed: result.retrying += 1
                case .failed: result.failed += 1
                }
            }
        } catch {
            logger.warning("cannot read due webhook deliveries", metadata: ["error": "\(error)"])
        }
        return result
    }

    /// Every webhook's new history, as deliveries; returns how many were queued.
    private func enqueueAll() async -> Int {
        var queued = 0
        for hook in webhooks {
            do {
                queued += try await enqueue(hook)
            } catch {
                logger.warning("cannot queue webhook deliveries", metadata: ["webhook": "\(hook.name)", "error": "\(error)"])
            }
        }
        return queued
    }

    /// One webhook's new history, as deliveries.
    private func enqueue(_ hook: WebhookConfig) async throws -> Int {
        var queued = 0
        var cursor = try await store.webhookCursor(hook.name)
        while true {
            let (sources, next) = try await store.webhookSources(after: cursor, limit: 500)
            let at = now()
            let deliveries = sources.compactMap { source -> WebhookDelivery? in
                guard let event = source.event, hook.events.contains(event) else { return nil }
                let id = "whd_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
                return WebhookDelivery(id: id, webhook: hook.name, event: event, payload: Self.payload(id: id, event: event, source: source, at: at),
                                       nextAttemptAt: at, createdAt: at)
            }
            if deliveries.isEmpty, next == cursor { break }
            try await store.enqueueWebhookDeliveries(deliveries, webhook: hook.name, cursor: next)
            queued += deliveries.count
            if next == cursor { break }
            cursor = next
        }
        return queued
    }

    private func deliver(_ delivery: WebhookDelivery) async -> WebhookAttemptOutcome {
        let at = now()
        let outcome: WebhookAttemptOutcome
        let configured = webhooks.first { $0.name == delivery.webhook }
        if let hook = configured, let secret = hook.signingSecret(environment: environment) {
            let body = Data(delivery.payload.utf8)
            let headers = [(WebhookSignature.header, WebhookSignature.value(secret: secret, timestamp: Int(at.timeIntervalSince1970), body: body)),
                           ("X-Sluice-Delivery", delivery.id), ("X-Sluice-Event", delivery.event.rawValue)]
            if let failure = await transport.post(hook.url, headers: headers, body: body, timeoutSeconds: hook.timeoutSeconds) {
                let attempts = delivery.attempts + 1
                if failure.retryable, attempts < hook.maxAttempts {
                    let delay = WebhookBackoff.delay(afterAttempt: attempts, unitRandom: Double.random(in: 0...1))
                    outcome = .retry(at: at.addingTimeInterval(delay), error: failure.message)
                } else {
                    outcome = .failed(error: failure.retryable ? "\(failure.message) (gave up after \(attempts) attempts)" : failure.message)
                }
            } else {
                outcome = .delivered
            }
        } else if configured != nil {
            outcome = .failed(error: "webhook \(delivery.webhook) is not configured with a signing secret any more")
        } else if at.timeIntervalSince(unknownSince.since(delivery.id, now: at)) < Self.unknownWebhookGrace {
            // During a rolling config change the claim's holder may be a daemon whose config does not have the
            // webhook yet: the delivery waits for one that does (not an attempt: no try is used up).
            outcome = .postponed(at: at.addingTimeInterval(Self.unknownWebhookRetry),
                                 note: "webhook \(delivery.webhook) is not in this daemon's config; waiting for a daemon that has it")
        } else {
            unknownSince.forget(delivery.id)
            outcome = .failed(error: "webhook \(delivery.webhook) is not in this daemon's config (waited \(Int(Self.unknownWebhookGrace / 60)) minutes "
                              + "for a daemon that has it); add it to webhooks[] and resend with sluice webhooks retry")
        }
        do {
            try await store.recordWebhookAttempt(delivery.id, outcome: outcome, at: at)
        } catch {
            logger.warning("cannot record a webhook attempt", metadata: ["delivery": "\(delivery.id)", "error": "\(error)"])
        }
        if case let .failed(error) = outcome {
            logger.warning("webhook delivery failed", metadata: ["delivery": "\(delivery.id)", "webhook": "\(delivery.webhook)", "error": "\(error)"])
        }
        return outcome
    }

    /// `{id, type, createdAt, data}`: `data` is the item's state (`id`, `kind`, `userId`, `status`, `previousStatus`,
    /// `imageStatus`, `reason`, `at`) or, for `item.deleted`, who erased it (`erasedBy`, `reason`, `at`).
    static func payload(id: String, event: WebhookEvent, source: WebhookSource, at: Date) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = WebhookPayload(id: id, type: event.rawValue, createdAt: timestamp(at), data: .init(source))
        return String(decoding: (try? encoder.encode(body)) ?? Data("{}".utf8), as: UTF8.self)
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}

struct WebhookPayload: Encodable {
    struct ItemChange: Encodable {
        var id: String
        var kind: String
        var userId: String
        var at: String
        var status: String?
        var previousStatus: String?
        var imageStatus: String?
        var erasedBy: String?
        var reason: String?
        var autoReply: String?
        let erased: Bool

        init(_ source: WebhookSource) {
            id = source.itemId.rawValue
            kind = source.kind.rawValue
            userId = source.userId
            at = WebhookDispatcher.timestamp(source.at)
            reason = source.reason
            autoReply = source.autoReply
            switch source.change {
            case let .status(status, previous):
                erased = false
                self.status = status.rawValue
                previousStatus = previous?.rawValue
                imageStatus = switch status {
                case .approved: "approved"
                case .pending, .review: "pending"
                case .blocked, .rejected: "blocked"
                }
            case let .erased(by):
                erased = true
                erasedBy = by
            }
        }

        enum CodingKeys: String, CodingKey { case id, kind, userId, at, status, previousStatus, imageStatus, erasedBy, reason, autoReply }

        /// Every field of its kind is present, `null` when unknown.
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(kind, forKey: .kind)
            try c.encode(userId, forKey: .userId)
            try c.encode(at, forKey: .at)
            try c.encode(reason, forKey: .reason)
            if erased {
                try c.encode(erasedBy, forKey: .erasedBy)
            } else {
                try c.encode(status, forKey: .status)
                try c.encode(previousStatus, forKey: .previousStatus)
                try c.encode(imageStatus, forKey: .imageStatus)
                try c.encode(autoReply, forKey: .autoReply)
            }
        }
    }

    var id: String
    var type: String
    var createdAt: String
    var data: ItemChange
}
