import Foundation
import PostgresNIO
import SluiceCore

/// Threads: approved messages with a conversation, kept by the triggers of `PostgresSchema.threads`.
extension PostgresStore {
    private static let messageColumns = """
        t.seq, t.itemId, t.conversationId, i.userId, i.recipientId, i.text, t.orderAt
        FROM threadMessage t JOIN item i ON i.id = t.itemId
        """

    private static func decodeThreadMessages(_ rows: [PostgresRow], _ operation: String) throws(StoreError) -> [ThreadMessage] {
        do {
            return try rows.map { row in
                let (seq, id, conversationId, senderId, recipientId, text, orderAt) =
                    try row.decode((Int64, String, String, String, String?, String?, Int64).self)
                return ThreadMessage(seq: seq, id: ItemID(id), conversationId: conversationId, senderId: senderId,
                                     recipientId: recipientId, text: text ?? "",
                                     sentAt: Date(timeIntervalSince1970: Double(orderAt) / 1000))
            }
        } catch {
            throw storeError(operation, error)
        }
    }

    /// The first column of the first row.
    private static func firstValue<T: PostgresDecodable>(_ rows: [PostgresRow], _ type: T.Type, _ operation: String) throws(StoreError) -> T? {
        do {
            return try rows.first?.decode(T.self)
        } catch {
            throw storeError(operation, error)
        }
    }

    /// The first column of every row.
    private static func columnValues<T: PostgresDecodable>(_ rows: [PostgresRow], _ type: T.Type, _ operation: String) throws(StoreError) -> [T] {
        do {
            return try rows.map { try $0.decode(T.self) }
        } catch {
            throw storeError(operation, error)
        }
    }

    public func threadMessages(conversationId: String, limit: Int) async throws(StoreError) -> [ThreadMessage] {
        let operation = "read the thread \(conversationId)"
        let found = try await rows(operation, """
            SELECT \(unescaped: Self.messageColumns) WHERE t.conversationId = \(conversationId)
            ORDER BY t.orderAt DESC, t.seq DESC LIMIT \(max(0, limit))
            """)
        return try Self.decodeThreadMessages(found, operation).reversed()
    }

    public func threadMessages(seqs: [Int64]) async throws(StoreError) -> [ThreadMessage] {
        guard !seqs.isEmpty else { return [] }
        let operation = "read \(seqs.count) thread messages"
        let found = try await rows(operation, "SELECT \(unescaped: Self.messageColumns) WHERE t.seq = ANY(\(seqs))")
        var bySeq: [Int64: ThreadMessage] = [:]
        for message in try Self.decodeThreadMessages(found, operation) {
            bySeq[message.seq] = message
        }
        return seqs.compactMap { bySeq[$0] }
    }

    public func isThreadMember(_ userId: String, conversationId: String) async throws(StoreError) -> Bool {
        let operation = "check membership of \(conversationId)"
        let found = try await rows(operation, """
            SELECT EXISTS (SELECT 1 FROM threadMember WHERE conversationId = \(conversationId) AND userId = \(userId))
            """)
        return try Self.firstValue(found, Bool.self, operation) ?? false
    }

    /// Ordered by code point (`COLLATE "C"`), as SQLite's binary collation orders them, whatever the database's collation.
    public func threadMembers(_ conversationId: String) async throws(StoreError) -> [String] {
        let operation = "read the members of \(conversationId)"
        let found = try await rows(operation, """
            SELECT userId FROM threadMember WHERE conversationId = \(conversationId) ORDER BY userId COLLATE "C"
            """)
        return try Self.columnValues(found, String.self, operation)
    }

    public func threadExists(_ conversationId: String) async throws(StoreError) -> Bool {
        let operation = "look up the conversation \(conversationId)"
        let found = try await rows(operation, "SELECT EXISTS (SELECT 1 FROM threadMember WHERE conversationId = \(conversationId))")
        return try Self.firstValue(found, Bool.self, operation) ?? false
    }

    /// Ordered by code point (`COLLATE "C"`), as SQLite's binary collation orders them, whatever the database's collation.
    public func conversations(of userId: String) async throws(StoreError) -> [String] {
        let operation = "read the conversations of \(userId)"
        let found = try await rows(operation, """
            SELECT conversationId FROM threadMember WHERE userId = \(userId) ORDER BY conversationId COLLATE "C"
            """)
        return try Self.columnValues(found, String.self, operation)
    }

    public func searchScope(conversations: [String], perConversation: Int) async throws(StoreError) -> [Int64] {
        guard !conversations.isEmpty else { return [] }
        let operation = "read the search scope"
        let found = try await rows(operation, """
            SELECT seq FROM (
                SELECT seq, conversationId, ROW_NUMBER() OVER (PARTITION BY conversationId ORDER BY orderAt DESC, seq DESC) AS n
                FROM threadMessage WHERE conversationId = ANY(\(conversations))
            ) AS latest WHERE n <= \(perConversation)
            ORDER BY conversationId COLLATE "C", n
            """)
        return try Self.columnValues(found, Int64.self, operation)
    }

    /// `match` is FTS5 syntax (`ThreadSearch.keywordQuery`: quoted words joined with `OR`), translated by
    /// `PostgresKeywordQuery` into a `tsquery` whose phrases are bound, never spliced. Ranked with FTS5's `bm25()` formula
    /// (k1 = 1.2, b = 0.75, negative: lower is better), computed in SQL from the stored `tsvector`s, with one
    /// difference: FTS5 takes the message count and each phrase's document frequency over the whole table and the
    /// average length over every row, here they are taken over the conversations searched (and the average length
    /// over the messages that contain any phrase), which needs no table-wide statistics. Stemming is PostgreSQL's
    /// English Snowball stemmer (Porter2) where FTS5 uses the original Porter stemmer: a few words conflate
    /// differently ("news"/"new", "one"/"on", "use"/"us" are one word to FTS5 and two here; "nearly"/"near",
    /// "yearly"/"year" the other way round).
    public func keywordSearch(_ match: String, conversations: [String], limit: Int) async throws(StoreError) -> [KeywordHit] {
        guard !conversations.isEmpty, !match.isEmpty else { return [] }
        let operation = "search the messages"
        let query = try PostgresKeywordQuery(fts5: match, operation: operation)
        var binds = PostgresBindings()
        binds.append(query.phrases.map(\.text))
        binds.append(query.phrases.map(\.prefix))
        binds.append(conversations)
        binds.append(max(0, limit))
        let search = PostgresQuery(unsafeSQL: Self.keywordSearchSQL(query), binds: binds)
        let logger = logger
        return try await transaction(operation) { connection -> [KeywordHit] in
            // The plan's cost grows with the matching messages and soon passes jit_above_cost; compiling it takes far
            // longer (about a second) than running it.
            try await connection.run("SET LOCAL jit = off", logger: logger)
            return try await connection.rows(search, logger: logger).map { row in
                let (seq, rank) = try row.decode((Int64, Double).self)
                return KeywordHit(seq: seq, rank: rank)
            }
        }
    }

    /// `$1` the phrases' text, `$2` which end in a prefix, `$3` the conversations, `$4` the limit.
    ///
    /// - `leaf`: each phrase's lexemes in order (its text prepared as `messageSearch.words` is).
    /// - `candidate`: the conversations' messages that contain any phrase, whether each matches the whole query, which
    ///   phrases count for its rank (`PostgresKeywordQuery.counted`) and its length in tokens. The phrases are
    ///   `searchPhrase($1[n], $2[n])`, which the planner evaluates with the bound values, so that it can choose between
    ///   the GIN index and the conversations' messages.
    /// - `frequency`: how often each phrase occurs in each candidate (consecutive positions, as FTS5 counts phrases).
    /// - `corpus` and `weight`: the number of messages searched, the candidates' average length, and each phrase's
    ///   IDF (`ln((N - n + 0.5) / (n + 0.5))`, at least 1e-6, as FTS5).
    static func keywordSearchSQL(_ query: PostgresKeywordQuery) -> String {
        """
        WITH leaf AS MATERIALIZED (
            SELECT p.n, p.prefix,
                   ARRAY(SELECT u.lexeme FROM unnest(to_tsvector('\(PostgresSchema.searchConfiguration)', searchText(p.text))) AS u,
                                               unnest(u.positions) AS pos
                         ORDER BY pos) AS lexemes
            FROM unnest($1::text[], $2::boolean[]) WITH ORDINALITY AS p (text, prefix, n)
        ),
        candidate AS (
            SELECT s.seq, s.words, s.words @@ \(query.expression) AS matches,
                   ARRAY[\(query.counted.joined(separator: ", "))]::boolean[] AS counted,
                   (SELECT sum(cardinality(u.positions)) FROM unnest(s.words) AS u)::float8 AS size
            FROM messageSearch s JOIN threadMessage m ON m.seq = s.seq
            WHERE m.conversationId = ANY($3::text[]) AND s.words @@ (\(query.anyPhrase))
        ),
        frequency AS (
            SELECT c.seq, l.n, count(*)::float8 AS tf
            FROM candidate c
            CROSS JOIN LATERAL (SELECT u.lexeme, pos FROM unnest(c.words) AS u, unnest(u.positions) AS pos) AS t
            JOIN leaf l ON t.lexeme = l.lexemes[1]
                OR (l.prefix AND cardinality(l.lexemes) = 1 AND starts_with(t.lexeme, l.lexemes[1]))
            WHERE NOT EXISTS (
                SELECT 1 FROM unnest(l.lexemes) WITH ORDINALITY AS x (lexeme, i)
                WHERE x.i > 1 AND NOT EXISTS (
                    SELECT 1 FROM unnest(c.words) AS v, unnest(v.positions) AS vpos
                    WHERE vpos = t.pos + x.i - 1
                        AND (v.lexeme = x.lexeme
                             OR (l.prefix AND x.i = cardinality(l.lexemes) AND starts_with(v.lexeme, x.lexeme)))))
            GROUP BY c.seq, l.n
        ),
        corpus AS (
            SELECT (SELECT count(*) FROM threadMessage WHERE conversationId = ANY($3::text[]))::float8 AS total,
                   (SELECT avg(size) FROM candidate) AS averageSize
        ),
        weight AS (
            SELECT f.n, greatest(ln((k.total - count(*) + 0.5) / (count(*) + 0.5)), 1e-6) AS idf
            FROM frequency f CROSS JOIN corpus k GROUP BY f.n, k.total
        )
        SELECT c.seq,
               -COALESCE(sum(CASE WHEN c.counted[f.n]
                                  THEN w.idf * f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * c.size / k.averageSize)) ELSE 0 END),
                         0)::float8 AS rank
        FROM candidate c CROSS JOIN corpus k LEFT JOIN (frequency f JOIN weight w ON w.n = f.n) ON f.seq = c.seq
        WHERE c.matches
        GROUP BY c.seq
        ORDER BY rank, c.seq
        LIMIT $4
        """
    }

    public func embeddings(seqs: [Int64], model: String) async throws(StoreError) -> [Int64: [Float]] {
        guard !seqs.isEmpty else { return [:] }
        let operation = "read \(seqs.count) vectors"
        let found = try await rows(operation, "SELECT seq, vector FROM messageEmbedding WHERE model = \(model) AND seq = ANY(\(seqs))")
        var vectors: [Int64: [Float]] = [:]
        do {
            for row in found {
                let (seq, bytes) = try row.decode((Int64, ByteBuffer).self)
                vectors[seq] = Self.vectorFloats(bytes)
            }
        } catch {
            throw Self.storeError(operation, error)
        }
        return vectors
    }

    /// A negative limit is no limit, as in SQLite.
    public func messagesNeedingEmbedding(model: String, limit: Int) async throws(StoreError) -> [EmbeddingTodo] {
        let operation = "find messages without vectors"
        let cap: Int? = limit < 0 ? nil : limit
        let found = try await rows(operation, """
            SELECT t.seq, i.text FROM threadMessage t JOIN item i ON i.id = t.itemId
            WHERE NOT EXISTS (SELECT 1 FROM messageEmbedding e WHERE e.seq = t.seq AND e.model = \(model))
            ORDER BY t.seq LIMIT \(cap)
            """)
        do {
            return try found.map { row in
                let (seq, text) = try row.decode((Int64, String?).self)
                return EmbeddingTodo(seq: seq, text: text ?? "")
            }
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    /// Each message is checked with `FOR KEY SHARE`: a message leaving its thread in a concurrent transaction either
    /// waits for this one (and its trigger then removes the vector with the message) or has gone, and gets no vector.
    @discardableResult
    public func storeEmbeddings(_ vectors: [Int64: [Float]], model: String, at date: Date) async throws(StoreError) -> Int {
        guard !vectors.isEmpty else { return 0 }
        let logger = logger
        let ordered = vectors.sorted { $0.key < $1.key }
        return try await transaction("store \(vectors.count) vectors") { connection -> Int in
            var stored = 0
            for (seq, vector) in ordered {
                let bytes = Self.vectorBytes(vector)
                let inserted = try await connection.rows("""
                    INSERT INTO messageEmbedding (seq, model, vector, at)
                    SELECT \(seq), \(model), \(bytes), \(date)
                    WHERE EXISTS (SELECT 1 FROM threadMessage WHERE seq = \(seq) FOR KEY SHARE)
                    ON CONFLICT (seq, model) DO UPDATE SET vector = excluded.vector, at = excluded.at
                    RETURNING 1
                    """, logger: logger)
                stored += inserted.count
            }
            return stored
        }
    }

    public func threadInsight(key: String) async throws(StoreError) -> String? {
        let operation = "read a cached thread answer"
        let found = try await rows(operation, "SELECT body FROM threadInsight WHERE key = \(key)")
        return try Self.firstValue(found, String.self, operation)
    }

    /// The messages are checked with `FOR KEY SHARE`, held to the commit: a message that leaves the thread meanwhile
    /// either has gone (the answer is not kept) or waits for this transaction, and its trigger then removes the answer.
    @discardableResult
    public func storeThreadInsight(key: String, conversationId: String, seqs: [Int64], body: String, at date: Date)
        async throws(StoreError) -> Bool {
        let logger = logger
        return try await transaction("cache a thread answer") { connection -> Bool in
            // Only while every message the answer was made from is still in the thread: an answer that outlived a
            // block or an erasure during the provider call is not kept.
            let present = try await connection.rows("""
                SELECT count(*) FROM (
                    SELECT 1 FROM threadMessage WHERE conversationId = \(conversationId) AND seq = ANY(\(seqs))
                    ORDER BY seq FOR KEY SHARE
                ) AS present
                """, logger: logger)
            guard try present.first?.decode(Int.self) == seqs.count else { return false }
            try await connection.run("""
                INSERT INTO threadInsight (key, conversationId, body, createdAt)
                VALUES (\(key), \(conversationId), \(body), \(date))
                ON CONFLICT (key) DO UPDATE SET conversationId = excluded.conversationId, body = excluded.body,
                                                createdAt = excluded.createdAt
                """, logger: logger)
            return true
        }
    }

    /// Vectors as little-endian float32, SQLite's layout (`SQLiteStore.data`).
    static func vectorBytes(_ vector: [Float]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(vector.count * MemoryLayout<UInt32>.size)
        for value in vector {
            buffer.writeInteger(value.bitPattern, endianness: .little)
        }
        return buffer
    }

    /// Trailing bytes short of a whole float are ignored, as `SQLiteStore.floats` does.
    static func vectorFloats(_ bytes: ByteBuffer) -> [Float] {
        var bytes = bytes
        var vector: [Float] = []
        vector.reserveCapacity(bytes.readableBytes / MemoryLayout<UInt32>.size)
        while let bits = bytes.readInteger(endianness: .little, as: UInt32.self) {
            vector.append(Float(bitPattern: bits))
        }
        return vector
    }
}

/// An FTS5 query as `StatusStore.keywordSearch` receives it, for PostgreSQL: its phrases (bound as parameters) and
/// `tsquery` expressions over them (SQL text made only of operators and phrase numbers, never of the query's words).
///
/// The FTS5 syntax understood: phrases as `"quoted strings"` (`""` for a quote) or barewords (ASCII letters, digits,
/// `_`, any non-ASCII character), a `*` after a phrase (its last token is a prefix), `AND` (or nothing between two
/// phrases), `OR`, binary `NOT` and parentheses, with FTS5's precedence (`NOT`, then `AND`, then `OR`). Anything else
/// (`NEAR(…)`, column filters, `^`, `+`) is a syntax error, as a malformed query is in SQLite.
struct PostgresKeywordQuery {
    struct Phrase: Equatable {
        var text: String
        var prefix: Bool
    }

    private enum Token: Equatable {
        case phrase(String)
        case star, open, close, and, or, not
    }

    private indirect enum Node {
        case phrase(Int)
        case and(Node, Node)
        case or(Node, Node)
        case not(Node, Node)
    }

    /// The phrases in the order they appear; phrase `n` (from 1) is bound as `$1[n]` (text) and `$2[n]` (prefix).
    private(set) var phrases: [Phrase] = []
    /// The whole query: `||`, `&&` and `&& !!` of `searchPhrase($1[n], $2[n])`.
    private(set) var expression = ""
    /// Per phrase, an SQL condition on a message's `s.words` under which its occurrences count for the rank. FTS5's
    /// bm25 counts a phrase only where the part of the query holding it matched: not inside an `AND` or a `NOT` that
    /// failed, never on the right of a `NOT`.
    private(set) var counted: [String] = []
    private let operation: String

    init(fts5 match: String, operation: String) throws(StoreError) {
        self.operation = operation
        let tokens = try Self.tokens(match, operation: operation)
        var index = 0
        let root = try parseOr(tokens, &index)
        if index < tokens.count {
            throw syntaxError(near: tokens[index])
        }
        expression = Self.sql(root)
        counted = Array(repeating: "false", count: phrases.count)
        collect(root, conditions: [], isRoot: true)
    }

    /// Any phrase: what a message must contain to be ranked at all.
    var anyPhrase: String {
        phrases.indices.map { Self.leaf($0 + 1) }.joined(separator: " || ")
    }

    private static func leaf(_ number: Int) -> String {
        "searchPhrase($1[\(number)], $2[\(number)])"
    }

    private static func sql(_ node: Node) -> String {
        switch node {
        case .phrase(let number): leaf(number)
        case .and(let left, let right): "(\(sql(left)) && \(sql(right)))"
        case .or(let left, let right): "(\(sql(left)) || \(sql(right)))"
        case .not(let left, let right): "(\(sql(left)) && !!\(sql(right)))"
        }
    }

    /// The conditions are the `AND` and `NOT` nodes above a phrase (an `OR` matches whenever the branch holding the
    /// phrase does; the whole query matches every message ranked).
    private mutating func collect(_ node: Node, conditions: [String], isRoot: Bool) {
        switch node {
        case .phrase(let number):
            counted[number - 1] = conditions.isEmpty ? "true" : conditions.joined(separator: " AND ")
        case .or(let left, let right):
            collect(left, conditions: conditions, isRoot: false)
            collect(right, conditions: conditions, isRoot: false)
        case .and(let left, let right):
            let inner = isRoot ? conditions : conditions + ["s.words @@ \(Self.sql(node))"]
            collect(left, conditions: inner, isRoot: false)
            collect(right, conditions: inner, isRoot: false)
        case .not(let left, _):
            let inner = isRoot ? conditions : conditions + ["s.words @@ \(Self.sql(node))"]
            collect(left, conditions: inner, isRoot: false)
        }
    }

    private mutating func parseOr(_ tokens: [Token], _ index: inout Int) throws(StoreError) -> Node {
        var left = try parseAnd(tokens, &index)
        while index < tokens.count, tokens[index] == .or {
            index += 1
            let right = try parseAnd(tokens, &index)
            left = .or(left, right)
        }
        return left
    }

    private mutating func parseAnd(_ tokens: [Token], _ index: inout Int) throws(StoreError) -> Node {
        var left = try parseNot(tokens, &index)
        while index < tokens.count {
            if tokens[index] == .and {
                index += 1
            } else if !Self.startsPhraseOrGroup(tokens[index]) {
                break
            }
            let right = try parseNot(tokens, &index)
            left = .and(left, right)
        }
        return left
    }

    private mutating func parseNot(_ tokens: [Token], _ index: inout Int) throws(StoreError) -> Node {
        var left = try parsePrimary(tokens, &index)
        while index < tokens.count, tokens[index] == .not {
            index += 1
            let right = try parsePrimary(tokens, &index)
            left = .not(left, right)
        }
        return left
    }

    private mutating func parsePrimary(_ tokens: [Token], _ index: inout Int) throws(StoreError) -> Node {
        guard index < tokens.count else { throw syntaxError(near: nil) }
        switch tokens[index] {
        case .open:
            index += 1
            let inner = try parseOr(tokens, &index)
            guard index < tokens.count else { throw syntaxError(near: nil) }
            guard tokens[index] == .close else { throw syntaxError(near: tokens[index]) }
            index += 1
            return inner
        case .phrase(let text):
            index += 1
            var prefix = false
            if index < tokens.count, tokens[index] == .star {
                prefix = true
                index += 1
            }
            phrases.append(Phrase(text: text, prefix: prefix))
            return .phrase(phrases.count)
        default:
            throw syntaxError(near: tokens[index])
        }
    }

    private static func startsPhraseOrGroup(_ token: Token) -> Bool {
        switch token {
        case .phrase, .open: true
        default: false
        }
    }

    private static func isBareword(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F, 0x1A: true
        default: scalar.value > 0x7F
        }
    }

    private static func tokens(_ match: String, operation: String) throws(StoreError) -> [Token] {
        let scalars = Array(match.unicodeScalars)
        var tokens: [Token] = []
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar {
            case " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}":
                index += 1
            case "(":
                tokens.append(.open)
                index += 1
            case ")":
                tokens.append(.close)
                index += 1
            case "*":
                tokens.append(.star)
                index += 1
            case "\"":
                var text = String.UnicodeScalarView()
                var closed = false
                index += 1
                while index < scalars.count, !closed {
                    if scalars[index] != "\"" {
                        text.append(scalars[index])
                        index += 1
                    } else if index + 1 < scalars.count, scalars[index + 1] == "\"" {
                        text.append("\"")
                        index += 2
                    } else {
                        closed = true
                        index += 1
                    }
                }
                guard closed else {
                    throw StoreError(operation: operation, message: "fts5: unterminated string in \(match)")
                }
                tokens.append(.phrase(String(text)))
            default:
                guard isBareword(scalar) else {
                    throw StoreError(operation: operation, message: "fts5: syntax error near \"\(String(scalar))\"")
                }
                var word = String.UnicodeScalarView()
                while index < scalars.count, isBareword(scalars[index]) {
                    word.append(scalars[index])
                    index += 1
                }
                switch String(word) {
                case "AND": tokens.append(.and)
                case "OR": tokens.append(.or)
                case "NOT": tokens.append(.not)
                case let text:
                    if text == "NEAR", let next = scalars[index...].first(where: { $0 != " " && $0 != "\t" }), next == "(" {
                        throw StoreError(operation: operation, message: "fts5: NEAR groups are not supported by the PostgreSQL store")
                    }
                    tokens.append(.phrase(text))
                }
            }
        }
        return tokens
    }

    private func syntaxError(near token: Token?) -> StoreError {
        let near = switch token {
        case .phrase(let text)?: text
        case .star?: "*"
        case .open?: "("
        case .close?: ")"
        case .and?: "AND"
        case .or?: "OR"
        case .not?: "NOT"
        case nil: ""
        }
        return StoreError(operation: operation, message: "fts5: syntax error near \"\(near)\"")
    }
}
