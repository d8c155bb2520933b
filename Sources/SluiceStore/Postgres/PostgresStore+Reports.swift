import Foundation
import PostgresNIO
import SluiceCore

/// Reports, the shared rate-limit windows (every API server on every host counts in the same rows) and the
/// per-instance metrics snapshots.
extension PostgresStore {
    // MARK: Reports

    public func recordReport(_ report: Report) async throws(StoreError) {
        try await execute("record report \(report.reportId)", """
            INSERT INTO report (reportId, messageId, category, description, reporterUserId, createdAt, status, resolvedBy, resolvedAt,
                                resolutionNote, target)
            VALUES (\(report.reportId), \(report.messageId), \(report.category), \(report.description), \(report.reporterUserId),
                    \(report.createdAt), \(report.status.rawValue), \(report.resolvedBy), \(report.resolvedAt), \(report.resolutionNote),
                    \(report.target))
            """)
    }

    public func reports() async throws(StoreError) -> [Report] {
        let rows = try await rows("list reports", """
            SELECT reportId, messageId, category, description, reporterUserId, createdAt, status, resolvedBy, resolvedAt, resolutionNote,
                   target
            FROM report ORDER BY createdAt DESC, reportId
            """)
        do {
            return try rows.map { row in
                let (id, message, category, description, reporter, created, status, resolvedBy, resolvedAt, note, target) =
                    try row.decode((String, String, String, String?, String?, Date, String, String?, Date?, String?, String).self)
                return Report(reportId: id, messageId: message, category: category, description: description, reporterUserId: reporter,
                              createdAt: created, status: ReportStatus(rawValue: status) ?? .open, resolvedBy: resolvedBy,
                              resolvedAt: resolvedAt, resolutionNote: note, target: target)
            }
        } catch {
            throw Self.storeError("list reports", error)
        }
    }

    // MARK: Rate limits

    public func consumeRateLimit(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState {
        let window = Int64(CounterSlot(key: key, windowSeconds: windowSeconds, at: now).windowStart)
        let logger = logger
        let current = try await transaction("count rate limit \(key)") { connection -> (Int, Bool) in
            // Counted only while under the limit, in one statement: two servers cannot both take the last unit.
            let counted = limit <= 0 ? [] : try await connection.rows("""
                INSERT INTO rateLimit (key, windowStart, count) VALUES (\(key), \(window), 1)
                ON CONFLICT (key, windowStart) DO UPDATE SET count = rateLimit.count + 1 WHERE rateLimit.count < \(Int64(limit))
                RETURNING count
                """, logger: logger)
            if let count = try counted.first?.decode(Int.self) {
                try await connection.run("DELETE FROM rateLimit WHERE key = \(key) AND windowStart < \(window)", logger: logger)
                return (count, true)
            }
            let stored = try await connection.rows("SELECT count FROM rateLimit WHERE key = \(key) AND windowStart = \(window)",
                                                   logger: logger)
            return (try stored.first?.decode(Int.self) ?? 0, false)
        }
        return RateLimitState(current: current.0, limit: limit, resetAt: Date(timeIntervalSince1970: Double(window) + Double(windowSeconds)),
                              windowSeconds: windowSeconds, allowed: current.1)
    }

    public func exchangeRateLimitCounts(_ amounts: [CounterSlot: Int], erasuresSeenUpTo seen: Int64?) async throws(StoreError) -> RateLimitExchange {
        let logger = logger
        return try await transaction("count \(amounts.count) rate limit windows") { connection in
            var erased = Set<String>()
            let last: Int64
            if let seen {
                // Shared, as the conversation rules' counts: an erasure (which takes it alone) either committed before,
                // and is read here, or waits for this and deletes what it wrote. Its own statement: one statement's
                // snapshot is taken before a lock it asks for is granted.
                try await connection.lock(.userErasure, shared: true, logger: logger)
                let row = try await connection.rows("""
                    SELECT (SELECT COALESCE(MAX(seq), 0) FROM relationChange),
                        ARRAY(SELECT actor FROM relationChange WHERE seq > \(seen) AND kind = \(RelationChangeFeed.erasureKind))
                    """, logger: logger).first
                let (point, actors) = try row?.decode((Int64, [String]).self) ?? (Int64(0), [String]())
                last = point
                erased = Set(actors)
            } else {
                last = try await connection.rows("SELECT COALESCE(MAX(seq), 0) FROM relationChange", logger: logger)
                    .first?.decode(Int64.self) ?? 0
            }
            var totals: [CounterSlot: Int] = [:]
            let slots = amounts.keys.filter { slot in
                guard !erased.isEmpty, let user = UserRateLimit.user(ofKey: slot.key), erased.contains(user) else { return true }
                totals[slot] = 0
                return false
            }
            for (slot, total) in try await Self.add(amounts, of: slots, on: connection, logger: logger) { totals[slot] = total }
            return RateLimitExchange(totals: totals, erased: erased, erasuresSeenUpTo: last)
        }
    }

    /// Adds the amounts of `slots` and reads their totals (every process's counts) on a transaction's connection.
    private static func add(_ amounts: [CounterSlot: Int], of slots: [CounterSlot], on connection: PostgresConnection,
                            logger: Logger) async throws -> [CounterSlot: Int] {
        guard !slots.isEmpty else { return [:] }
        struct Row: Encodable { var key: String, windowstart: Int64, amount: Int64 }
        let rows = slots.map { Row(key: $0.key, windowstart: Int64($0.windowStart), amount: Int64(amounts[$0] ?? 0)) }
        let json = String(decoding: try JSONEncoder().encode(rows), as: UTF8.self)
        // Added in one statement (ordered by key, so two servers lock the same rows in the same order), then
        // every process's totals read back in the same transaction.
        let added = try await connection.rows("""
            INSERT INTO rateLimit (key, windowStart, count)
            SELECT a.key, a.windowStart, a.amount FROM json_to_recordset(\(json)::json) AS a(key TEXT, windowStart BIGINT, amount BIGINT)
            WHERE a.amount > 0 ORDER BY a.key, a.windowStart
            ON CONFLICT (key, windowStart) DO UPDATE SET count = rateLimit.count + excluded.count
            RETURNING key, windowStart, count, xmax = 0
            """, logger: logger)
        var totals: [CounterSlot: Int] = [:]
        var started: [(String, Int64)] = []
        var byKey: [String: [CounterSlot]] = [:]
        for slot in slots { byKey[slot.key, default: []].append(slot) }
        for row in added {
            let (key, window, count, inserted) = try row.decode((String, Int64, Int, Bool).self)
            for slot in byKey[key] ?? [] where Int64(slot.windowStart) == window { totals[slot] = count }
            // The window's first count: the key's ended windows go (once per window, not on every exchange).
            if inserted { started.append((key, window)) }
        }
        for (key, window) in started {
            try await connection.run("DELETE FROM rateLimit WHERE key = \(key) AND windowStart < \(window)", logger: logger)
        }
        let missing = slots.filter { totals[$0] == nil }
        for (slot, total) in try await Self.totals(missing, on: connection, logger: logger) { totals[slot] = total }
        return totals
    }

    public func rateLimitTotals(_ slots: [CounterSlot]) async throws(StoreError) -> [CounterSlot: Int] {
        guard !slots.isEmpty else { return [:] }
        let logger = logger
        return try await transaction("read \(slots.count) rate limit windows") { connection in
            try await Self.totals(slots, on: connection, logger: logger)
        }
    }

    /// The stored count of each window (0 when none is stored).
    private static func totals(_ slots: [CounterSlot], on connection: PostgresConnection, logger: Logger) async throws -> [CounterSlot: Int] {
        guard !slots.isEmpty else { return [:] }
        var totals: [CounterSlot: Int] = [:]
        for slot in slots { totals[slot] = 0 }
        let rows = try await connection.rows("""
            SELECT key, windowStart, count FROM rateLimit WHERE key = ANY(\(Array(Set(slots.map(\.key)))))
            """, logger: logger)
        for row in rows {
            let (key, window, count) = try row.decode((String, Int64, Int).self)
            for slot in slots where slot.key == key && Int64(slot.windowStart) == window { totals[slot] = count }
        }
        return totals
    }

    public func rateLimit(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState {
        let window = Int64(CounterSlot(key: key, windowSeconds: windowSeconds, at: now).windowStart)
        let rows = try await rows("read rate limit \(key)", "SELECT count FROM rateLimit WHERE key = \(key) AND windowStart = \(window)")
        let current: Int
        do { current = try rows.first?.decode(Int.self) ?? 0 } catch { throw Self.storeError("read rate limit \(key)", error) }
        return RateLimitState(current: current, limit: limit, resetAt: Date(timeIntervalSince1970: Double(window) + Double(windowSeconds)),
                              windowSeconds: windowSeconds, allowed: current < limit)
    }

    // MARK: Metrics

    public func publishMetrics(source: String, body: String, at date: Date) async throws(StoreError) {
        let logger = logger
        try await transaction("publish \(source) metrics") { connection in
            try await connection.run("""
                INSERT INTO metricsSnapshot (source, body, updatedAt) VALUES (\(source), \(body), \(date))
                ON CONFLICT (source) DO UPDATE SET body = excluded.body, updatedAt = excluded.updatedAt
                """, logger: logger)
            // Instances that stopped publishing a week ago (each daemon start is a new instance) are forgotten.
            try await connection.run("DELETE FROM metricsSnapshot WHERE updatedAt < \(date.addingTimeInterval(-7 * 86_400))", logger: logger)
        }
    }

    public func metricsSnapshots() async throws(StoreError) -> [MetricsSnapshot] {
        let rows = try await rows("read metrics snapshots", "SELECT source, body, updatedAt FROM metricsSnapshot ORDER BY source")
        do {
            return try rows.map { row in
                let (source, body, updatedAt) = try row.decode((String, String, Date).self)
                return MetricsSnapshot(source: source, body: body, updatedAt: updatedAt)
            }
        } catch {
            throw Self.storeError("read metrics snapshots", error)
        }
    }
}
