import Foundation
import Logging
import SluiceCore

/// Smart search that works offline: FTS5 keyword ranking and cosine similarity over stored vectors, fused by
/// reciprocal rank (`Σ 1 / (k + rank)`). Without an embedding provider (or when it fails) it is keyword-only,
/// and says so.
public struct ThreadSearch: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        case keyword, semantic, hybrid
    }

    let store: any StatusStore
    let embedder: (any EmbeddingProvider)?
    let config: ThreadsConfig
    let logger: Logger
    let now: @Sendable () -> Date

    public init(store: any StatusStore, embedder: (any EmbeddingProvider)?, config: ThreadsConfig, logger: Logger,
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.embedder = embedder
        self.config = config
        self.logger = logger
        self.now = now
    }

    /// A ranking of message numbers in the conversations' last `perConversation` messages, best first, each with its
    /// fused score (0–1) and what found it. `note` says why semantic ranking was left out, when it was.
    public func rank(_ query: String, conversations: [String], perConversation: Int, mode: Mode)
        async throws(StoreError) -> (ranked: [(seq: Int64, score: Double, matchedBy: [String])], note: String?) {
        let scope = Set(try await store.searchScope(conversations: conversations, perConversation: perConversation))
        guard !scope.isEmpty else {
            // Nothing to rank, but the answer still says how it would have been ranked.
            return ([], mode != .keyword && embedder == nil ? Self.noEmbedderNote : nil)
        }
        var lists: [(name: String, seqs: [Int64])] = []
        if mode != .semantic {
            let hits = try await store.keywordSearch(Self.keywordQuery(query), conversations: conversations, limit: 1000)
            lists.append(("keyword", hits.map(\.seq).filter(scope.contains)))
        }
        var note: String?
        if mode != .keyword {
            var queryVector: [Float]?
            if let embedder {
                do throws(ProviderError) {
                    queryVector = try await embedder.embed([query]).first
                } catch {
                    logger.warning("smart search is keyword-only: the embedding provider failed: \(error)")
                    note = "keyword-only: the embedding provider failed (\(error.kind.rawValue))"
                }
            } else {
                note = Self.noEmbedderNote
            }
            if let embedder, let vector = queryVector {
                let stored = try await store.embeddings(seqs: Array(scope), model: embedder.model)
                let similar = stored.compactMap { seq, candidate -> (Int64, Float)? in
                    guard candidate.count == vector.count else { return nil }
                    let cosine = zip(candidate, vector).reduce(Float(0)) { $0 + $1.0 * $1.1 }
                    return Double(cosine) >= config.minSimilarity ? (seq, cosine) : nil
                }.sorted { ($0.1, $1.0) > ($1.1, $0.0) }
                lists.append(("semantic", similar.map(\.0)))
                if stored.count < scope.count { note = "\(scope.count - stored.count) of \(scope.count) messages have no vector yet" }
            } else if mode == .semantic {
                return ([], note)
            }
        }
        let k = Double(config.fusionK)
        var scores: [Int64: (score: Double, matchedBy: [String])] = [:]
        for list in lists {
            for (index, seq) in list.seqs.enumerated() {
                scores[seq, default: (0, [])].score += 1 / (k + Double(index + 1))
                scores[seq, default: (0, [])].matchedBy.append(list.name)
            }
        }
        let best = Double(lists.count) / (k + 1)
        let ranked = scores.map { (seq: $0.key, score: min(1, $0.value.score / best), matchedBy: $0.value.matchedBy) }
            .sorted { ($0.score, $1.seq) > ($1.score, $0.seq) }
        return (ranked, note)
    }

    static let noEmbedderNote = "keyword-only: no embedding provider is configured (threads.embeddings.provider)"

    /// Seed 004's answer: the best `limit` messages with a snippet and the messages around each.
    func search(_ query: String, conversations: [String], perConversation: Int, limit: Int) async throws(StoreError) -> SmartSearchResult {
        let (ranked, note) = try await rank(query, conversations: conversations, perConversation: perConversation, mode: .hybrid)
        let top = Array(ranked.prefix(limit))
        let messages = try await store.threadMessages(seqs: top.map(\.seq))
        var threads: [String: [ThreadMessage]] = [:]
        for conversation in Set(messages.map(\.conversationId)) {
            threads[conversation] = try await store.threadMessages(conversationId: conversation, limit: perConversation)
        }
        let byNumber = Dictionary(messages.map { ($0.seq, $0) }, uniquingKeysWith: { a, _ in a })
        let results = top.compactMap { hit -> SearchResult? in
            guard let message = byNumber[hit.seq] else { return nil }
            return SearchResult(snippet: Self.snippet(message.text), messageId: message.seq, id: message.id.rawValue,
                                conversationId: message.conversationId, relevanceScore: (hit.score * 1000).rounded() / 1000,
                                context: Self.context(of: message, in: threads[message.conversationId] ?? []), sender: message.senderId,
                                sentAt: ThreadClock.iso(message.sentAt), matchedBy: hit.matchedBy)
        }
        return SmartSearchResult(results: results, totalResults: results.count, mode: note?.hasPrefix("keyword-only") == true ? "keyword" : "hybrid",
                                 note: note, generatedAt: ThreadClock.iso(now()))
    }

    static let stopwords: Set<String> = [
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had", "has", "have", "he",
        "her", "his", "how", "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so", "that", "the",
        "their", "them", "there", "they", "this", "to", "us", "was", "we", "were", "what", "when", "where", "which", "who",
        "why", "will", "with", "you", "your", "about", "any", "can", "could", "should", "would", "been", "into", "than", "then",
    ]

    /// The user's words as an FTS5 query: each word quoted (so no FTS5 syntax gets through), stop words left out,
    /// joined with OR so bm25 ranks messages with more of them first.
    public static func keywordQuery(_ query: String) -> String {
        var seen = Set<String>()
        let words = query.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init)
            .filter { !stopwords.contains($0) && seen.insert($0).inserted }
        return words.prefix(32).map { "\"\($0)\"" }.joined(separator: " OR ")
    }

    static func snippet(_ text: String) -> String {
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        return flat.count > 200 ? String(flat.prefix(199)) + "…" : flat
    }

    /// The message before and after, as `sender: text` lines.
    static func context(of message: ThreadMessage, in thread: [ThreadMessage]) -> String? {
        guard let index = thread.firstIndex(where: { $0.seq == message.seq }) else { return nil }
        let around = [index - 1, index + 1].filter(thread.indices.contains).map { thread[$0] }
        guard !around.isEmpty else { return nil }
        return around.map { "\($0.senderId): \(snippet($0.text).prefix(120))" }.joined(separator: "\n")
    }
}
