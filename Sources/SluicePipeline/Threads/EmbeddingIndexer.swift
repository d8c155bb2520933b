import Foundation
import Logging
import Metrics
import SluiceCore

/// Computes vectors for approved thread messages that have none, in batches (the daemon's embed step and
/// `sluice reprocess --stages embed`). Messages that leave a thread meanwhile get none (the store checks).
public struct EmbeddingIndexer: Sendable {
    let store: any StatusStore
    public let provider: any EmbeddingProvider
    let batchSize: Int
    let logger: Logger

    public init(store: any StatusStore, provider: any EmbeddingProvider, batchSize: Int, logger: Logger) {
        self.store = store
        self.provider = provider
        self.batchSize = batchSize
        self.logger = logger
    }

    /// Longest text sent for a vector (MiniLM-class models read 256 word pieces; more is wasted bytes).
    static let maxCharacters = 2000

    /// Embeds up to `maxBatches` batches; returns how many messages got a vector. Stops at the first failure
    /// (thrown), leaving the rest for the next pass.
    @discardableResult
    public func indexPending(maxBatches: Int = .max, progress: (@Sendable (Int) -> Void)? = nil) async throws -> Int {
        var total = 0
        var batches = 0
        while batches < maxBatches {
            let todo = try await store.messagesNeedingEmbedding(model: provider.model, limit: batchSize)
            guard !todo.isEmpty else { break }
            let vectors = try await provider.embed(todo.map { String($0.text.prefix(Self.maxCharacters)) })
            var byNumber: [Int64: [Float]] = [:]
            for (message, vector) in zip(todo, vectors) { byNumber[message.seq] = vector }
            let stored = try await store.storeEmbeddings(byNumber, model: provider.model, at: Date())
            Counter(label: "sluice_embeddings_total", dimensions: [("model", provider.model)]).increment(by: stored)
            total += stored
            batches += 1
            progress?(total)
            // Every message of the batch left its thread before its vector could be stored: they are gone from the
            // to-do list too, so the loop goes on; a batch that stored nothing and will be found again stops it.
            if stored == 0, try await store.messagesNeedingEmbedding(model: provider.model, limit: 1).first?.seq == todo.first?.seq { break }
        }
        return total
    }
}
