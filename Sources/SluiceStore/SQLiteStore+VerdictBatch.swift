import Foundation
import GRDB
import GRDBSQLite
import SluiceCore

/// `recordVerdicts` without GRDB's record machinery for text items: a text queue records tens of thousands of
/// verdicts a second, and per row `ItemRow.save` authorised and prepared its statements anew, encoded every column
/// through Codable and formatted dates with ICU. Here the statements are prepared once per connection
/// (`cachedStatement`), the previous rows of a batch are read in one statement, a text item's 20 columns are bound
/// directly, verdict JSON is the canonical text, and dates are formatted by hand in GRDB's storage format. The rows
/// written are the same as `ItemRow(item).save(db)` writes, which other items still use (`StoreContractTests`
/// reads every field back).
extension SQLiteStore {
    /// The columns a text queue's item uses, in binding order. The other columns are set to NULL, as
    /// `ItemRow(item).save` would for such an item.
    static let textColumns = [
        "id", "kind", "userId", "status", "reason", "contentHash", "attempts", "createdAt", "updatedAt", "text", "textContext",
        "textKind", "textSource", "textVerdict", "priority", "recipientId", "conversationId", "sentAt", "members", "conversation",
    ]

    /// The upsert of `rows` text items in one statement: their columns bound, every other column of the table set
    /// to NULL. Rows are inserted in order, so a later row is the one that stays.
    static func upsertTextItemsSQL(_ db: Database, rows: Int) throws -> String {
        let others = try db.columns(in: "item").map(\.name).filter { !textColumns.contains($0) }
        return "INSERT INTO item (\(textColumns.joined(separator: ", "))) VALUES "
            + Array(repeating: "(\(placeholders(textColumns.count)))", count: rows).joined(separator: ", ")
            + " ON CONFLICT(id) DO UPDATE SET " + (textColumns.dropFirst().map { "\($0) = excluded.\($0)" } + others.map { "\($0) = NULL" })
            .joined(separator: ", ")
    }

    /// Text items written per statement (with their events): SQLite's own work per row stays, GRDB's per-statement
    /// work (reset, bindings, execution hooks) is paid once for them. 25 × 20 columns = 500 arguments.
    static let rowsPerStatement = 25

    /// Whether an item has nothing outside `textColumns` (every text queue line).
    static func usesTextColumnsOnly(_ item: Item) -> Bool {
        item.kind == .text && item.provider == nil && item.safeSearch == nil && item.exif == nil && item.outputs == ItemOutputs()
            && item.original == nil && item.format == nil && item.width == nil && item.height == nil && item.sourceBytes == nil
            && item.timings == StageTimings() && item.caption == nil && item.decision == nil && item.pdq == nil && item.match == nil
            && item.reused == nil
    }

    static let insertEventSQL = insertEventsSQL(rows: 1)

    /// `rows` events in one statement.
    static func insertEventsSQL(rows: Int) -> String {
        "INSERT INTO event (itemId, at, type, fromStatus, toStatus, stage, detail) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
    }

    /// The batch's stored rows, by id: when each was created, how many attempts it had, its status and content hash.
    static let previousRowsSQL = "SELECT id, userId, createdAt, attempts, status, contentHash FROM item WHERE id IN (SELECT value FROM json_each(?))"

    /// A text item's row and its event, encoded before the batch takes the writer: building the values (the verdicts'
    /// canonical JSON, the dates, the strings) is about a quarter of a text batch's writing, and the writer is the one
    /// connection every batch waits for, so the batch's own task does it beside the writer's work on the batch before.
    /// Three values depend on the stored row and are set by the writer: `attempts`, `createdAt` and the event's
    /// `fromStatus`.
    struct EncodedTextRow: Sendable {
        var values: [DatabaseValue]
        var event: [DatabaseValue]
        static let attemptsColumn = 6, createdAtColumn = 7, fromStatusColumn = 3
    }

    /// The batch's text items encoded (nil for an item with anything outside `textColumns`, which is written by its
    /// record), and the JSON arrays of ids the writer looks the stored rows up with.
    struct EncodedBatch: Sendable {
        var rows: [EncodedTextRow?]
        var lookups: [String]
    }

    static func encode(_ items: [Item], stage: String) -> EncodedBatch {
        // Items are read in place (by index): `map` hands its closure a copy of each, retaining and releasing every
        // one of its fields (~1% of a text queue's ingest).
        var rows: [EncodedTextRow?] = []
        var ids: [String] = []
        rows.reserveCapacity(items.count)
        ids.reserveCapacity(items.count)
        for index in items.indices {
            rows.append(encodeTextRow(items[index], stage: stage))
            ids.append(items[index].id.rawValue)
        }
        return EncodedBatch(rows: rows, lookups: lookupArrays(ids))
    }

    /// `ids` as JSON arrays of at most 500, for `previousRowsSQL`.
    static func lookupArrays(_ ids: [String]) -> [String] {
        ids.chunked(500).map { JSONText.strings($0) }
    }

    static func encodeTextRow(_ item: Item, stage: String) -> EncodedTextRow? {
        guard usesTextColumnsOnly(item) else { return nil }
        let content = item.content
        func text(_ value: String?) -> DatabaseValue { value?.databaseValue ?? .null }
        let id = item.id.rawValue.databaseValue
        let updatedAt = StorageDate.string(item.updatedAt).databaseValue
        // A new item is made and judged at one instant: its two dates share one string.
        let createdAt = item.createdAt == item.updatedAt ? updatedAt : StorageDate.string(item.createdAt).databaseValue
        let status = item.status.rawValue.databaseValue
        let reason = text(item.reason)
        let values: [DatabaseValue] = [
            id, item.kind.rawValue.databaseValue, item.userId.databaseValue, status, reason, text(item.contentHash),
            item.attempts.databaseValue, createdAt, updatedAt,
            text(content?.text), text(content?.context), text(content?.kind), text(content?.source), text(item.textVerdict?.canonicalJSON),
            text(item.priority?.canonicalJSON), text(content?.recipientId), text(content?.conversationId),
            text(content?.sentAt.map(StorageDate.string)), text(content?.members.flatMap(ItemRow.json)),
            text(item.conversation.flatMap(ItemRow.json)),
        ]
        return EncodedTextRow(values: values, event: [id, updatedAt, "verdict".databaseValue, .null, status, stage.databaseValue, reason])
    }

    /// Writes the batch in the current transaction; returns how many items were written (`skippingUnchanged`:
    /// an item whose stored content hash equals its own is left alone). `encoded` is `encode(items, stage:)`, made
    /// before the transaction (or here when nil).
    static func recordVerdicts(_ items: [Item], lineIDs: [ItemID]? = nil, stage: String, skippingUnchanged: Bool,
                               encoded: EncodedBatch? = nil, in db: Database) throws -> Int {
        var previous: [String: (createdAt: DatabaseValue, attempts: Int, status: String, hash: String?)] = [:]
        var owners: [String: String] = [:]
        previous.reserveCapacity(items.count)
        let lookup = try db.cachedStatement(sql: previousRowsSQL)
        func look(_ arrays: [String]) throws {
            for json in arrays {
                let rows = try Row.fetchCursor(lookup, arguments: [json])
                while let row = try rows.next() {
                    previous[row["id"]] = (row["createdAt"], row["attempts"], row["status"], row["contentHash"])
                    owners[row["id"]] = row["userId"]
                }
            }
        }
        var batch = encoded ?? encode(items, stage: stage)
        try look(batch.lookups)
        // A line whose id is another user's stored message is rejected under its own line id instead.
        var items = items
        if let lineIDs {
            var changed = items
            let refused = Item.refuseIDsOfOtherUsers(&changed, lineIDs: lineIDs) { owners[$0.rawValue] }
            if !refused.isEmpty {
                // A refused line keeps its id when that id is its own line id (`file:N` is a valid id).
                for index in items.indices where changed[index] != items[index] {
                    batch.rows[index] = encodeTextRow(changed[index], stage: stage)
                }
                items = changed
                try look(lookupArrays(refused.map(\.rawValue)))
            }
        }
        let event = try db.cachedStatement(sql: insertEventSQL)
        // Text items wait here until `rowsPerStatement` of them (or another kind of item, or the end) are written
        // together, then their events; rows and events keep the batch's order. A waiting row is bound straight from
        // its encoding with the three values that depend on the stored row set here (copying each row's values into
        // one array retained and released every one of them). Full statements (the usual case) are looked up once
        // per batch.
        let fullItems = try upsertTextItemsSQL(db, rows: rowsPerStatement)
        let fullEvents = insertEventsSQL(rows: rowsPerStatement)
        var waiting: [WaitingRow] = []
        waiting.reserveCapacity(rowsPerStatement)
        var arena = TextArena()
        func writeWaiting() throws {
            guard !waiting.isEmpty else { return }
            let full = waiting.count == rowsPerStatement
            var rows: [[DatabaseValue]] = []
            var events: [[DatabaseValue]] = []
            var rowChanges: [(parameter: Int, value: DatabaseValue)] = []
            var eventChanges: [(parameter: Int, value: DatabaseValue)] = []
            for (position, wait) in waiting.enumerated() {
                guard let encoded = batch.rows[wait.index] else { continue }
                rows.append(encoded.values)
                events.append(encoded.event)
                let row = position * textColumns.count
                rowChanges.append((row + EncodedTextRow.attemptsColumn, wait.attempts.databaseValue))
                if let createdAt = wait.createdAt { rowChanges.append((row + EncodedTextRow.createdAtColumn, createdAt)) }
                if let status = wait.fromStatus { eventChanges.append((position * 7 + EncodedTextRow.fromStatusColumn, status.databaseValue)) }
            }
            try arena.execute(db.cachedStatement(sql: full ? fullItems : upsertTextItemsSQL(db, rows: waiting.count)), rows: rows, changing: rowChanges)
            try arena.execute(db.cachedStatement(sql: full ? fullEvents : insertEventsSQL(rows: waiting.count)), rows: events, changing: eventChanges)
            waiting.removeAll(keepingCapacity: true)
        }
        var written = 0
        // Items are read in place (by index): a copy of each would retain and release every one of its fields.
        for index in items.indices {
            let id = items[index].id.rawValue
            let before = previous[id]
            if skippingUnchanged, let before, before.hash == (items[index].contentHash ?? "") { continue }
            written += 1
            // A new row's date is the one its encoding already holds (made beside the writer, not on its thread).
            let createdAt = before?.createdAt ?? batch.rows[index]?.values[EncodedTextRow.createdAtColumn]
                ?? StorageDate.string(items[index].createdAt).databaseValue
            let attempts = before.map { $0.attempts + 1 } ?? items[index].attempts
            // A row written again in the same batch counts its own earlier write as the previous one.
            previous[id] = (createdAt, attempts, items[index].status.rawValue, items[index].contentHash)
            if batch.rows[index] != nil {
                waiting.append(WaitingRow(index: index, attempts: attempts, createdAt: before == nil ? nil : createdAt, fromStatus: before?.status))
                if waiting.count == rowsPerStatement { try writeWaiting() }
            } else {
                // Anything else (images, decided items: rare in a batch) is written by its record, as single verdicts are.
                try writeWaiting()
                let item = items[index]
                var updated = item
                updated.attempts = attempts
                if let stored = before?.createdAt, let date = Date.fromDatabaseValue(stored) { updated.createdAt = date }
                try ItemRow(updated).save(db)
                try event.execute(arguments: [id, StorageDate.string(item.updatedAt), "verdict", before?.status, item.status.rawValue, stage, item.reason])
            }
        }
        try writeWaiting()
        return written
    }

    /// A text row waiting for its statement: its place in the batch and the values that depend on the stored row
    /// (`createdAt` and `fromStatus` only when there is one).
    struct WaitingRow {
        var index: Int
        var attempts: Int
        var createdAt: DatabaseValue?
        var fromStatus: String?
    }

    /// Runs statements whose text values are bound from one buffer without SQLite copying them: bound as
    /// `SQLITE_TRANSIENT`, every string was copied into an allocation of its own (each taking SQLite's memory lock)
    /// and freed when the bindings were cleared, ~7% of the store writer's time in a text queue's ingest. The buffer
    /// is reused from statement to statement, and no binding outlives it: they are cleared before `execute` returns.
    struct TextArena {
        private var bytes: [UInt8] = []

        /// Binds the values of `rows` in order, except that parameter `changing[n].parameter` (0-based, in rising
        /// order) takes `changing[n].value`, and runs the statement through GRDB's execution (its hooks and error
        /// reporting).
        mutating func execute(_ statement: Statement, rows: [[DatabaseValue]], changing: [(parameter: Int, value: DatabaseValue)]) throws {
            let parameters = Int(sqlite3_bind_parameter_count(statement.sqliteStatement))
            let count = rows.reduce(0) { $0 + $1.count }
            guard parameters == count else {
                throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "\(count) values for \(parameters) parameters", sql: statement.sql)
            }
            // Every string's bytes, in parameter order, after one byte so that an empty string still has an address
            // (SQLite binds NULL for a null pointer).
            // Each parameter's value in order (0-based), `changing` taking the place of the row's value.
            func forEachValue(_ body: (DatabaseValue, Int) throws -> Void) rethrows {
                var next = 0
                var parameter = 0
                for row in rows.indices {
                    for column in rows[row].indices {
                        if next < changing.count, changing[next].parameter == parameter {
                            try body(changing[next].value, parameter)
                            next += 1
                        } else {
                            try body(rows[row][column], parameter)
                        }
                        parameter += 1
                    }
                }
            }
            bytes.removeAll(keepingCapacity: true)
            bytes.append(0)
            forEachValue { value, _ in
                if case let .string(text) = value.storage { bytes.append(contentsOf: text.utf8) }
            }
            // Resets the statement, clears its bindings and marks them set, so `execute()` runs with the ones bound here.
            statement.setUncheckedArguments(StatementArguments())
            let sqlite = statement.sqliteStatement
            try bytes.withUnsafeBufferPointer { buffer in
                defer { sqlite3_clear_bindings(sqlite) }
                // Never nil (the buffer holds at least its first byte); were it, the statement must not run unbound.
                guard let base = buffer.baseAddress else {
                    throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "no buffer to bind text from", sql: statement.sql)
                }
                var offset = 1
                func bind(_ value: DatabaseValue, at index: CInt) throws {
                    let code: CInt
                    if case let .string(text) = value.storage {
                        let count = text.utf8.count
                        // SQLITE_STATIC (nil): SQLite reads the text in place until the bindings are cleared.
                        code = sqlite3_bind_text(sqlite, index, UnsafeRawPointer(base + offset).assumingMemoryBound(to: CChar.self), CInt(count), nil)
                        offset += count
                    } else {
                        code = value.bind(to: sqlite, at: index)
                    }
                    guard code == SQLITE_OK else {
                        throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "binding value \(index) of \(parameters)", sql: statement.sql)
                    }
                }
                try forEachValue { value, parameter in try bind(value, at: CInt(parameter + 1)) }
                try statement.execute()
            }
        }
    }
}

/// Dates in GRDB's storage format, `yyyy-MM-dd HH:mm:ss.SSS` in UTC (to the nearest millisecond, half up, as its formatter
/// does), without a `DateFormatter`: so rows written here sort, compare and decode exactly like GRDB's own.
enum StorageDate {
    static func string(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000 + 0.5).rounded(.down)
        guard milliseconds.isFinite, abs(milliseconds) < 253_402_300_800_000 else { return String.fromDatabaseValue(date.databaseValue) ?? "" }
        let total = Int64(milliseconds)
        var seconds = total / 1000
        var millis = Int(total % 1000)
        if millis < 0 {
            millis += 1000
            seconds -= 1
        }
        var days = seconds / 86_400
        var rest = Int(seconds % 86_400)
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = Int(doy - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = Int(yoe + era * 400 + (month <= 2 ? 1 : 0))
        guard (0...9999).contains(year) else { return String.fromDatabaseValue(date.databaseValue) ?? "" }
        // Written straight into the string's own storage: one allocation (a 23-byte string is too long to be
        // stored inline), where an array of bytes made into a string took two.
        return String(unsafeUninitializedCapacity: 23) { bytes in
            func put(_ value: Int, _ at: Int, _ width: Int) {
                var value = value
                for index in stride(from: at + width - 1, through: at, by: -1) {
                    bytes[index] = UInt8(48 + value % 10)
                    value /= 10
                }
            }
            put(year, 0, 4)
            bytes[4] = 45
            put(month, 5, 2)
            bytes[7] = 45
            put(day, 8, 2)
            bytes[10] = 32
            put(rest / 3600, 11, 2)
            bytes[13] = 58
            put(rest / 60 % 60, 14, 2)
            bytes[16] = 58
            put(rest % 60, 17, 2)
            bytes[19] = 46
            put(millis, 20, 3)
            return 23
        }
    }
}
