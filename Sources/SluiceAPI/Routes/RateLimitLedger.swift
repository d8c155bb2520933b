import Foundation
import ServiceLifecycle
import SluiceCore
import Synchronization

/// Rate-limit windows held in this API process's memory, so a limited request costs no store write. A window this
/// process has not seen is read from the store first (a read: WAL readers run side by side); then the process
/// counts on its own and, every `interval` (and before judging a request that finds the last exchange older than
/// that), adds what it counted to the store in one transaction and takes the store's totals — every process's
/// counts — back.
///
/// How far over a limit a user can get: in one process, not at all (a window starts from the store and every
/// request is counted before it is answered). With several processes, each admits against what it knew at its
/// last exchange, so a user spreading requests over them can get through, on top of the limit, what the other
/// processes admitted for that user since this process's last exchange: at most one `interval` of their requests,
/// and never more than `limit` per other process. Counts not yet written when a process is killed are lost (at
/// most one `interval`); a graceful stop writes them.
final class RateLimitLedger: Service, Sendable {
    struct Window {
        /// The store's total at the last exchange (or first read).
        var stored: Int
        /// Counted here since.
        var pending: Int
        /// Asked about since the last exchange (its total is read back then, even with nothing to add).
        var touched = true
        var end: Int
        var total: Int { stored + pending }
    }

    struct State {
        var windows: [CounterSlot: Window] = [:]
        var lastExchange: ContinuousClock.Instant
        var exchanging = false
    }

    let store: any StatusStore
    let interval: Duration
    private let clock = ContinuousClock()
    private let state: Mutex<State>

    init(store: any StatusStore, interval: Duration) {
        self.store = store
        self.interval = interval
        state = Mutex(State(lastExchange: ContinuousClock.now))
    }

    /// Counts one request against `key` in its current fixed window; over the limit it is not counted.
    func consume(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState {
        let slot = Self.slot(key, windowSeconds: windowSeconds, now: now)
        // An exchange that is due comes first (reading this window back too), so the request is judged on the
        // freshest totals.
        state.withLock { $0.windows[slot]?.touched = true }
        try await exchangeIfDue()
        var decided = state.withLock { state in Self.count(slot, limit: limit, in: &state) }
        if decided == nil {
            let stored = try await store.rateLimit(key: key, limit: limit, windowSeconds: windowSeconds, now: now)
            decided = state.withLock { state in
                if state.windows[slot] == nil {
                    state.windows[slot] = Window(stored: stored.current, pending: 0, end: slot.windowStart + windowSeconds)
                }
                return Self.count(slot, limit: limit, in: &state)
            }
        }
        // With an interval of 0 every request is written before it is answered.
        if interval == .zero { try await exchangeIfDue() }
        let (allowed, current) = decided ?? (false, limit)
        return RateLimitState(current: current, limit: limit, resetAt: Date(timeIntervalSince1970: Double(slot.windowStart + windowSeconds)),
                              windowSeconds: windowSeconds, allowed: allowed)
    }

    /// The current window of `key` as this process knows it, without counting.
    func current(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState {
        let slot = Self.slot(key, windowSeconds: windowSeconds, now: now)
        if let known = state.withLock({ $0.windows[slot]?.total }) {
            return RateLimitState(current: known, limit: limit, resetAt: Date(timeIntervalSince1970: Double(slot.windowStart + windowSeconds)),
                                  windowSeconds: windowSeconds, allowed: known < limit)
        }
        return try await store.rateLimit(key: key, limit: limit, windowSeconds: windowSeconds, now: now)
    }

    /// Writes what was counted since the last exchange and takes the store's totals. On failure the counts stay
    /// to be written next time.
    func exchange() async throws(StoreError) {
        let written: [CounterSlot: Int] = state.withLock { state in
            state.lastExchange = clock.now
            var amounts: [CounterSlot: Int] = [:]
            for (slot, window) in state.windows where window.pending > 0 || window.touched {
                amounts[slot] = window.pending
                state.windows[slot]?.pending = 0
                state.windows[slot]?.touched = false
            }
            return amounts
        }
        let totals: [CounterSlot: Int]
        do {
            totals = try await store.recordRateLimitCounts(written)
        } catch {
            state.withLock { state in
                for (slot, amount) in written { state.windows[slot]?.pending += amount }
            }
            throw error
        }
        state.withLock { state in
            for (slot, total) in totals { state.windows[slot]?.stored = total }
            // Ended windows with nothing left to write are forgotten.
            let now = Int(Date().timeIntervalSince1970)
            state.windows = state.windows.filter { $0.value.end > now || $0.value.pending > 0 }
        }
    }

    /// Exchanges with the store every `interval` until the service is stopped, then once more.
    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: max(self.interval, .milliseconds(10))) }
            try? await exchangeIfDue()
        }
        try? await exchange()
    }

    /// One exchange when the last is older than `interval` and none is under way.
    private func exchangeIfDue() async throws(StoreError) {
        let due = state.withLock { state in
            guard !state.exchanging, clock.now - state.lastExchange >= interval else { return false }
            state.exchanging = true
            return true
        }
        guard due else { return }
        defer { state.withLock { $0.exchanging = false } }
        try await exchange()
    }

    private static func slot(_ key: String, windowSeconds: Int, now: Date) -> CounterSlot {
        CounterSlot(key: key, windowStart: Int(now.timeIntervalSince1970.rounded(.down)) / windowSeconds * windowSeconds)
    }

    /// Counts one request in a known window: (allowed, count after it); nil when the window is not known here yet.
    private static func count(_ slot: CounterSlot, limit: Int, in state: inout State) -> (Bool, Int)? {
        guard var window = state.windows[slot] else { return nil }
        window.touched = true
        defer { state.windows[slot] = window }
        guard window.total < limit else { return (false, window.total) }
        window.pending += 1
        return (true, window.total)
    }
}
