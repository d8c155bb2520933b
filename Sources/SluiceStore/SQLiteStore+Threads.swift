import Foundation
import GRDB
import SluiceCore

extension SQLiteStore {
    private static let messageColumns = """
        t.seq, t.itemId, t.conversationId, i.userId, i.recipientId, i.text, t.orderAt
        FROM threadMessage t JOIN item i ON i.id = t.itemId
        """

    private static func message(_ row: Row) -> ThreadMessage {
        ThreadMessage(seq: row[0], id: ItemID(row[1] as String), conversationId: row[2], senderId: row[3], recipientId: row[4],
                      text: row[5] ?? "", sentAt: row[6])
    }

    public func threadMessages(conversationId: String, limit: Int) async throws(StoreError) -> [ThreadMessage] {
        try await read("read the thread \(conversationId)") { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT \(Self.messageColumns) WHERE t.conversationId = ? ORDER BY t.orderAt DESC, t.seq DESC LIMIT ?
                """, arguments: [conversationId, max(0, limit)])
            return rows.reversed().map(Self.message)
        }
    }

    public func threadMessages(seqs: [Int64]) async throws(StoreError) -> [ThreadMessage] {
        guard !seqs.isEmpty else { return [] }
        return try await read("read \(seqs.count) thread messages") { db in
            var found: [Int64: ThreadMessage] = [:]
            for chunk in seqs.chunked(500) {
                for row in try Row.fetchAll(db, sql: "SELECT \(Self.messageColumns) WHERE t.seq IN (\(Self.placeholders(chunk.count)))",
                                            arguments: StatementArguments(Array(chunk))) {
                    let message = Self.message(row)
                    found[message.seq] = message
                }
            }
            return seqs.compactMap { found[$0] }
        }
    }

    public func isThreadMember(_ userId: String, conversationId: String) async throws(StoreError) -> Bool {
        try await read("check membership of \(conversationId)") { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM threadMember WHERE conversationId = ? AND userId = ?)",
                              arguments: [conversationId, userId]) ?? false
        }
    }

    public func threadMembers(_ conversationId: String) async throws(StoreError) -> [String] {
        try await read("read the members of \(conversationId)") { db in
            try String.fetchAll(db, sql: "SELECT userId FROM threadMember WHERE conversationId = ? ORDER BY userId", arguments: [conversationId])
        }
    }

    public func threadExists(_ conversationId: String) async throws(StoreError) -> Bool {
        try await read("look up the conversation \(conversationId)") { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM threadMember WHERE conversationId = ?)", arguments: [conversationId]) ?? false
        }
    }

    public func conversations(of userId: String) async throws(StoreError) -> [String] {
        try await read("read the conversations of \(userId)") { db in
            try String.fetchAll(db, sql: "SELECT conversationId FROM threadMember WHERE userId = ? ORDER BY conversationId", arguments: [userId])
        }
    }

    public func searchScope(conversations: [String], perConversation: Int) async throws(StoreError) -> [Int64] {
        guard !conversations.isEmpty else { return [] }
        return try await read("read the search scope") { db in
            var seqs: [Int64] = []
            for chunk in conversations.chunked(500) {
                seqs += try Int64.fetchAll(db, sql: """
                    SELECT seq FROM (
                        SELECT seq, ROW_NUMBER() OVER (PARTITION BY conversationId ORDER BY orderAt DESC, seq DESC) AS n
                        FROM threadMessage WHERE conversationId IN (\(Self.placeholders(chunk.count)))
                    ) WHERE n <= ?
                    """, arguments: StatementArguments(Array(chunk)) + [perConversation])
            }
            return seqs
        }
    }

    public func keywordSearch(_ match: String, conversations: [String], limit: Int) async throws(StoreError) -> [KeywordHit] {
        guard !conversations.isEmpty, !match.isEmpty else { return [] }
        return try await read("search the messages") { db in
            var hits: [KeywordHit] = []
            for chunk in conversations.chunked(500) {
                let rows = try Row.fetchAll(db, sql: """
                    SELECT rowid, bm25(messageSearch) AS rank FROM messageSearch
                    WHERE messageSearch MATCH ? AND rowid IN (SELECT seq FROM threadMessage WHERE conversationId IN (\(Self.placeholders(chunk.count))))
                    ORDER BY rank LIMIT ?
                    """, arguments: [match] + StatementArguments(Array(chunk)) + [limit])
                hits += rows.map { KeywordHit(seq: $0[0], rank: $0[1]) }
            }
            return Array(hits.sorted { ($0.rank, $0.seq) < ($1.rank, $1.seq) }.prefix(limit))
        }
    }

    public func embeddings(seqs: [Int64], model: String) async throws(StoreError) -> [Int64: [Float]] {
        guard !seqs.isEmpty else { return [:] }
        return try await read("read \(seqs.count) vectors") { db in
            var vectors: [Int64: [Float]] = [:]
            for chunk in seqs.chunked(500) {
                let rows = try Row.fetchCursor(db, sql: "SELECT seq, vector FROM messageEmbedding WHERE model = ? AND seq IN (\(Self.placeholders(chunk.count)))",
                                               arguments: [model] + StatementArguments(Array(chunk)))
                while let row = try rows.next() {
                    let data: Data = row[1]
                    vectors[row[0]] = Self.floats(data)
                }
            }
            return vectors
        }
    }

    public func messagesNeedingEmbedding(model: String, limit: Int) async throws(StoreError) -> [EmbeddingTodo] {
        try await read("find messages without vectors") { db in
            try Row.fetchAll(db, sql: """
                SELECT t.seq, i.text FROM threadMessage t JOIN item i ON i.id = t.itemId
                WHERE NOT EXISTS (SELECT 1 FROM messageEmbedding e WHERE e.seq = t.seq AND e.model = ?)
                ORDER BY t.seq LIMIT ?
                """, arguments: [model, limit]).map { EmbeddingTodo(seq: $0[0], text: $0[1] ?? "") }
        }
    }

    @discardableResult
    public func storeEmbeddings(_ vectors: [Int64: [Float]], model: String, at date: Date) async throws(StoreError) -> Int {
        guard !vectors.isEmpty else { return 0 }
        return try await write("store \(vectors.count) vectors") { db in
            let statement = try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO messageEmbedding (seq, model, vector, at)
                SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM threadMessage WHERE seq = ?)
                """)
            var stored = 0
            for (seq, vector) in vectors.sorted(by: { $0.key < $1.key }) {
                try statement.execute(arguments: [seq, model, Self.data(vector), date, seq])
                stored += db.changesCount
            }
            return stored
        }
    }

    public func threadInsight(key: String) async throws(StoreError) -> String? {
        try await read("read a cached thread answer") { db in
            try String.fetchOne(db, sql: "SELECT body FROM threadInsight WHERE key = ?", arguments: [key])
        }
    }

    @discardableResult
    public func storeThreadInsight(key: String, conversationId: String, seqs: [Int64], body: String, at date: Date) async throws(StoreError) -> Bool {
        try await write("cache a thread answer") { db in
            // Only while every message the answer was made from is still in the thread: an answer that outlived a
            // block or an erasure during the provider call is not kept.
            var present = 0
            for chunk in seqs.chunked(500) {
                present += try Int.fetchOne(db, sql: "SELECT count(*) FROM threadMessage WHERE conversationId = ? AND seq IN (\(Self.placeholders(chunk.count)))",
                                            arguments: [conversationId] + StatementArguments(Array(chunk))) ?? 0
            }
            guard present == seqs.count else { return false }
            try db.execute(sql: "INSERT OR REPLACE INTO threadInsight (key, conversationId, body, createdAt) VALUES (?, ?, ?, ?)",
                           arguments: [key, conversationId, body, date])
            return true
        }
    }

    /// Vectors as little-endian float32, the way every machine Sluice runs on holds them.
    static func data(_ vector: [Float]) -> Data {
        vector.withUnsafeBufferPointer { Data(buffer: $0) }
    }

    static func floats(_ data: Data) -> [Float] {
        let count = data.count / MemoryLayout<Float>.size
        return [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            _ = data.copyBytes(to: buffer)
            initialized = count
        }
    }
}
