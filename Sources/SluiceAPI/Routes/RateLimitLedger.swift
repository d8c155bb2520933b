import Foundation
import ServiceLifecycle
import SluiceCore
import Synchronization

/// Rate-limit windows held in this API process's memory, so a limited request costs no store write. The process
/// counts on its own and, every `interval` (in the background while `run()` runs as the server's service; before
/// judging a request that finds the last exchange older than that otherwise), adds what it counted to the store
/// in one transaction and takes the store's totals — every process's counts — back.
///
/// A window this process has not seen starts from the store's count: with the service running, the request is
/// answered at once and the count is read in the background (many new windows in one read) and added when it
/// comes; without it, the count is read before the request is judged.
///
/// A window whose unsent count is at most its hold-back (`limits.rate.holdBackPercent` of its limit, rounded down)
/// and whose total is further than that from its limit is not written at an exchange: it waits until it has counted
/// more (or comes near its limit, or the process stops). With 100,000 users each seen every few seconds, nearly every
/// window asked about between two exchanges had one new count, so an exchange wrote about one row a request; with a
/// hold-back of 3 (a limit of 60) it writes about one a fourth request.
///
/// How far over a limit a user can get: in one process, by what it admits for them while their window's count is
/// read in the background (`readGathering`, 5 ms, and one read: the windows that start meanwhile are read with it; a
/// few requests when the user waits for each answer), and otherwise not at all (the process counts its own requests
/// whether it has written them or not). With several processes, each admits against what it knew when it last wrote
/// or read the window, so a user spreading requests over them can get through, on top of that, what each other
/// process held back for them and admitted before its next exchange: at most its hold-back plus one request, and one
/// `interval` of their requests. Counts not yet written when a process is killed are lost (at most one `interval`,
/// and what it held back: at most the hold-back of each window); a graceful stop writes them.
///
/// An erased user's windows (`UserRateLimit` keys; `eraseRelations` deletes their rows) are not written back: each
/// exchange gives the store the relation feed's point its windows were last purged at, the store leaves out the
/// counts of users erased after it and names them, and the windows of those users are then forgotten here (what they
/// counted meanwhile too: an erasure resets a user's limits). A process learns that point before it makes its first
/// window (should that read fail, the point is 0 and its first write leaves out every user ever erased), and while it
/// holds windows it hears of erasures at each exchange, with nothing to write too (with an interval of 0, at each
/// request's: an idle process shows an erased user's old counts until its next request).
final class RateLimitLedger: Service, Sendable {
    struct Window {
        /// The store's total at the last exchange (or first read).
        var stored: Int
        /// Counted here since, not yet sent.
        var pending: Int
        /// Sent to the store by the exchange under way (still counted until its total comes back).
        var sending = 0
        /// Made without the store's count (a first request while the service runs): the count is being read.
        var provisional = false
        var end: Int
        /// The window's limit (set by each request counted in it).
        var limit = 0
        var total: Int { stored + sending + pending }
    }

    struct State {
        var windows: [CounterSlot: Window] = [:]
        var lastExchange: ContinuousClock.Instant
        var exchanging = false
        /// `run()` is exchanging in the background: requests then never wait for an exchange (but with an interval
        /// of 0).
        var background = false
        /// Windows asked about since the last exchange (their totals are read back then, even with nothing to add, unless
        /// the window holds its counts back: it then leaves this set until it is asked about again).
        var dirty: Set<CounterSlot> = []
        var lastSweep: ContinuousClock.Instant
        /// Provisional windows whose store count the background reader is to read.
        var toRead: Set<CounterSlot> = []
        /// With an interval of 0: a request's own exchange did not run (another was under way), so its count waits for
        /// the service's next one.
        var leftover = false
        /// The relation feed's point up to which erased users' windows were forgotten here (nil until the first
        /// window): what an exchange's write is stamped with.
        var erasuresSeenUpTo: Int64?
        /// How many times erased users' windows were forgotten: a store read begun before a forget does not set
        /// its total on a window made again after it.
        var forgets = 0
    }

    let store: any StatusStore
    let interval: Duration
    /// `limits.rate.holdBackPercent` (not applied with an `interval` of 0).
    let holdBackPercent: Int
    /// The API's wall clock (the one requests are counted by), for forgetting ended windows.
    let now: @Sendable () -> Date
    private let clock = ContinuousClock()
    /// Rung when `toRead` gets a window.
    private let doorbell: AsyncStream<Void>
    private let ring: AsyncStream<Void>.Continuation
    private let state: Mutex<State>

    /// The ledger of `limits.rate.exchangeMilliseconds` over the services' store.
    convenience init(services: APIServices, now: @escaping @Sendable () -> Date) {
        let rate = services.config.limits.rate
        self.init(store: services.store, interval: .milliseconds(rate.exchangeMilliseconds), holdBackPercent: rate.holdBackPercent, now: now)
    }

    init(store: any StatusStore, interval: Duration, holdBackPercent: Int, now: @escaping @Sendable () -> Date) {
        self.store = store
        self.interval = interval
        self.holdBackPercent = holdBackPercent
        self.now = now
        state = Mutex(State(lastExchange: ContinuousClock.now, lastSweep: ContinuousClock.now))
        (doorbell, ring) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// How many counts of a window of `limit` may wait here unsent while its total is further than that from the limit.
    private func holdBack(_ limit: Int) -> Int {
        interval == .zero ? 0 : limit * holdBackPercent / 100
    }

    /// Whether an exchange is to write (or, with nothing counted, read) `window` now rather than leave it for later:
    /// always without a hold-back, otherwise once it counted more than its hold-back or when its total is within its
    /// hold-back of the limit (where processes must agree promptly).
    private func isDue(_ window: Window) -> Bool {
        let unsent = holdBack(window.limit)
        return unsent == 0 || window.pending > unsent || window.total + unsent >= window.limit
    }

    /// Counts one request against `key` in its current fixed window; over the limit it is not counted.
    func consume(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState {
        let slot = CounterSlot(key: key, windowSeconds: windowSeconds, at: now)
        // An exchange that is due comes first (reading this window back too), so the request is judged on the
        // freshest totals.
        let (background, pointKnown) = state.withLock { state in
            if state.windows[slot] != nil { state.dirty.insert(slot) }
            return (state.background, state.erasuresSeenUpTo != nil)
        }
        if !pointKnown { await learnErasurePoint() }
        if !background || interval == .zero { try await exchangeIfDue() }
        var decided = state.withLock { state in
            if state.windows[slot] == nil, state.background {
                // Answered now; the store's count is read in the background and added when it comes.
                state.windows[slot] = Window(stored: 0, pending: 0, provisional: true, end: slot.windowStart + windowSeconds)
                state.toRead.insert(slot)
                ring.yield()
            }
            return Self.count(slot, limit: limit, in: &state)
        }
        while decided == nil {
            try await learn(slot, windowSeconds: windowSeconds)
            decided = state.withLock { state in Self.count(slot, limit: limit, in: &state) }
        }
        // With an interval of 0 every request is written before it is answered (or, while another exchange is under
        // way, by the service's next one).
        if interval == .zero, try await !exchangeIfDue() { state.withLock { $0.leftover = true } }
        let (allowed, current) = decided ?? (false, limit)
        return RateLimitState(current: current, limit: limit, resetAt: Date(timeIntervalSince1970: Double(slot.windowStart + windowSeconds)),
                              windowSeconds: windowSeconds, allowed: allowed)
    }

    /// Reads the relation feed's point before the first window is made: an erasure after it is one this process's
    /// counts must not outlive. The first point read stands (any is earlier than every window made after it; a
    /// later read must not undo what an exchange since forgot). When the read fails (the store is down) the point is
    /// 0 and is not read again: the request is judged all the same, and the first exchange leaves out the counts of
    /// every user ever erased. (A later read that succeeded would be later than the windows made meanwhile, and an
    /// erasure between the two would go unheard.)
    private func learnErasurePoint() async {
        let point: Int64
        do {
            point = try await store.exchangeRateLimitCounts([:], erasuresSeenUpTo: nil).erasuresSeenUpTo
        } catch {
            point = 0
        }
        state.withLock { state in
            if state.erasuresSeenUpTo == nil { state.erasuresSeenUpTo = point }
        }
    }

    /// Makes a window known when no background reader runs (`run()` not started, e.g. a router alone): its count
    /// is read from the store before the request is judged.
    private func learn(_ slot: CounterSlot, windowSeconds: Int) async throws(StoreError) {
        let forgets = state.withLock { $0.forgets }
        let total = try await store.rateLimitTotals([slot])[slot] ?? 0
        state.withLock { state in
            // Read before an erasure was forgotten: read again (the caller asks until the window is known).
            if state.windows[slot] == nil, state.forgets == forgets {
                state.windows[slot] = Window(stored: total, pending: 0, end: slot.windowStart + windowSeconds)
            }
        }
    }

    /// The current window of `key` as this process knows it, without counting.
    func current(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState {
        let slot = CounterSlot(key: key, windowSeconds: windowSeconds, at: now)
        if let known = state.withLock({ $0.windows[slot]?.total }) {
            return RateLimitState(current: known, limit: limit, resetAt: Date(timeIntervalSince1970: Double(slot.windowStart + windowSeconds)),
                                  windowSeconds: windowSeconds, allowed: known < limit)
        }
        return try await store.rateLimit(key: key, limit: limit, windowSeconds: windowSeconds, now: now)
    }

    /// Writes what was counted since the last exchange and takes the store's totals; a window that holds its counts
    /// back (`isDue`) waits, unless `flushing` (a stopping process writes every count of a window not ended).
    /// On failure the counts stay to be written next time.
    ///
    /// The windows are gone through `chunk` at a time, the lock let go between chunks: requests wait for one
    /// chunk (a few microseconds), not for every window asked about since the last exchange (with 100,000 users
    /// that was a millisecond per exchange, which set the p99). A request counted while its window's chunk is
    /// pending is sent now; one counted after it, at the next exchange.
    func exchange(flushing: Bool = false) async throws(StoreError) {
        let second = Int(now().timeIntervalSince1970)
        let (slots, point): ([CounterSlot], Int64?) = state.withLock { state in
            state.lastExchange = clock.now
            state.leftover = false
            let dirty = state.dirty
            state.dirty = []
            guard flushing else { return (Array(dirty), state.erasuresSeenUpTo) }
            return (Array(dirty.union(state.windows.lazy.filter { $0.value.pending > 0 && $0.value.end > second }.map(\.key))),
                    state.erasuresSeenUpTo)
        }
        // Windows are made once the point is known (0 after its read failed: the write then leaves out every user
        // ever erased, and their windows are forgotten).
        let seen = point ?? 0
        var written: [CounterSlot: Int] = [:]
        written.reserveCapacity(slots.count)
        for chunk in Self.chunks(slots) {
            state.withLock { state in
                for slot in chunk {
                    guard let window = state.windows[slot], flushing || isDue(window) else { continue }
                    written[slot] = window.pending
                    state.windows[slot]?.sending = window.pending
                    state.windows[slot]?.pending = 0
                }
            }
            await Task.yield()
        }
        // Nothing to write: a trip to the store only to hear of erasures, while windows are held (with an interval
        // of 0 the request's next exchange writes, and hears of them then).
        if written.isEmpty, interval == .zero || state.withLock({ $0.windows.isEmpty }) { return }
        let exchanged: RateLimitExchange
        do {
            exchanged = try await store.exchangeRateLimitCounts(written, erasuresSeenUpTo: seen)
        } catch {
            for chunk in Self.chunks(Array(written)) {
                state.withLock { state in
                    for (slot, amount) in chunk {
                        state.windows[slot]?.pending += amount
                        state.windows[slot]?.sending = 0
                        state.dirty.insert(slot)
                    }
                }
            }
            throw error
        }
        for chunk in Self.chunks(Array(exchanged.totals)) {
            state.withLock { state in
                for (slot, total) in chunk {
                    state.windows[slot]?.stored = total
                    state.windows[slot]?.sending = 0
                    state.windows[slot]?.provisional = false
                }
            }
            await Task.yield()
        }
        state.withLock { state in
            if !exchanged.erased.isEmpty { Self.forget(exchanged.erased, in: &state) }
            state.erasuresSeenUpTo = max(state.erasuresSeenUpTo ?? exchanged.erasuresSeenUpTo, exchanged.erasuresSeenUpTo)
        }
        state.withLock { state in
            // Ended windows are forgotten every 10 s, unless they have counts to write or an exchange to be in: what a
            // window held back is not written once it ended (its count no longer limits anyone).
            guard clock.now - state.lastSweep >= .seconds(10) else { return }
            state.lastSweep = clock.now
            state.windows = state.windows.filter {
                $0.value.end > second || ($0.value.pending > 0 && holdBack($0.value.limit) == 0) || state.dirty.contains($0.key)
            }
        }
    }

    /// Drops every window of `users` (erased: the store wrote none of their counts and deleted their rows), with what
    /// it counted since.
    private static func forget(_ users: Set<String>, in state: inout State) {
        state.forgets += 1
        let gone = state.windows.keys.filter { UserRateLimit.user(ofKey: $0.key).map(users.contains) ?? false }
        for slot in gone {
            state.windows[slot] = nil
            state.dirty.remove(slot)
            state.toRead.remove(slot)
        }
    }

    /// How many windows an exchange handles per hold of the lock.
    static let chunk = 256

    private static func chunks<Element>(_ elements: [Element]) -> [ArraySlice<Element>] {
        stride(from: 0, to: elements.count, by: chunk).map { elements[$0..<min($0 + chunk, elements.count)] }
    }

    /// Exchanges with the store every `interval` until the service is stopped, then once more.
    func run() async throws {
        state.withLock { $0.background = true }
        defer { state.withLock { $0.background = false } }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.readProvisionalWindows() }
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: max(self.interval, .milliseconds(10))) }
                // With an interval of 0 requests exchange themselves: one here would be under way when a request
                // comes, which would then skip its own and judge (and answer) before the other processes' counts are
                // read and its own written. Only a count left over that way is written here.
                if self.interval > .zero || self.state.withLock({ $0.leftover }) { try? await self.exchangeIfDue() }
            }
            ring.finish()
        }
        // After any exchange under way (a request's, with an interval of 0): two at once could put back counts
        // of a failed one after the other forgot their user.
        while !state.withLock({ state in
            guard !state.exchanging else { return false }
            state.exchanging = true
            return true
        }) {
            // Not cancellable: `run()` also ends when its task is cancelled, and a cancelled sleep returns at once
            // (this would spin on a core until the exchange under way ends).
            await Task.detached { try? await Task.sleep(for: .milliseconds(1)) }.value
        }
        defer { state.withLock { $0.exchanging = false } }
        try? await exchange(flushing: true)
    }

    /// How long the background reader waits after a new window before reading, so windows that start meanwhile are read
    /// in the same statement batch.
    static let readGathering = Duration.milliseconds(5)

    /// Reads the store's counts of provisional windows, as many at once as have been asked for since the last read.
    private func readProvisionalWindows() async {
        for await _ in doorbell {
            // The windows that start in the next few milliseconds are read with this one: with many users each new
            // window rang for a read of its own (thousands a second), each a trip to a reader connection.
            try? await Task.sleep(for: Self.readGathering)
            let (slots, forgets) = state.withLock { state in
                defer { state.toRead.removeAll(keepingCapacity: true) }
                return (state.toRead.filter { state.windows[$0]?.provisional == true }, state.forgets)
            }
            guard !slots.isEmpty else { continue }
            guard let totals = try? await store.rateLimitTotals(Array(slots)) else {
                // Read again at the next ring; until then the windows count from what this process saw.
                state.withLock { $0.toRead.formUnion(slots) }
                ring.yield()
                try? await Task.sleep(for: .milliseconds(50))
                continue
            }
            state.withLock { state in
                // Read before erased users' windows were forgotten: those made again since are read again.
                guard state.forgets == forgets else {
                    state.toRead.formUnion(slots)
                    ring.yield()
                    return
                }
                // A window an exchange is sending gets the store's total from that exchange (read now, the total may
                // already hold what is being sent, which would then be counted twice until the exchange ends).
                for (slot, total) in totals where state.windows[slot]?.provisional == true && state.windows[slot]?.sending == 0 {
                    state.windows[slot]?.stored = total
                    state.windows[slot]?.provisional = false
                }
            }
        }
    }

    /// One exchange when the last is older than `interval` and none is under way; whether it ran.
    @discardableResult
    private func exchangeIfDue() async throws(StoreError) -> Bool {
        let due = state.withLock { state in
            guard !state.exchanging, clock.now - state.lastExchange >= interval else { return false }
            state.exchanging = true
            return true
        }
        guard due else { return false }
        defer { state.withLock { $0.exchanging = false } }
        try await exchange()
        return true
    }

    /// Counts one request in a known window: (allowed, count after it); nil when the window is not known here yet.
    private static func count(_ slot: CounterSlot, limit: Int, in state: inout State) -> (Bool, Int)? {
        guard var window = state.windows[slot] else { return nil }
        state.dirty.insert(slot)
        window.limit = limit
        defer { state.windows[slot] = window }
        guard window.total < limit else { return (false, window.total) }
        window.pending += 1
        return (true, window.total)
    }
}
