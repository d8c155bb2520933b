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

    /// A failure a later pass may not meet (429, 5xx, timeouts, connection errors, an open circuit, cancellation):
    /// the messages wait for it instead of being recorded as refused.
    static func mayPass(_ error: ProviderError) -> Bool {
        error.isRetryable || error.kind == .circuitOpen || error.kind == .cancelled
    }

    /// Longest text sent for a vector (MiniLM-class models read 256 word pieces; more is wasted bytes).
    static let maxCharacters = 2000

    /// Embeds up to `maxBatches` batches; returns how many messages got a vector. A failure that may pass (429,
    /// 5xx, timeouts, connection errors) stops the pass and is thrown, leaving the rest for the next one. A batch the
    /// provider refuses for good (another 4xx, an answer that breaks the protocol) is retried a message at a time,
    /// and a message it still refuses is recorded with no vector — it is not retried, and search finds it by
    /// keyword only — so one bad message never holds up the ones after it.
    @discardableResult
    public func indexPending(maxBatches: Int = .max, progress: (@Sendable (Int) -> Void)? = nil) async throws -> Int {
        var total = 0
        var batches = 0
        while batches < maxBatches, !Task.isCancelled {
            let todo = try await store.messagesNeedingEmbedding(model: provider.model, limit: batchSize)
            guard !todo.isEmpty else { break }
            var byNumber: [Int64: [Float]] = [:]
            do throws(ProviderError) {
                let vectors = try await provider.embed(todo.map { String($0.text.prefix(Self.maxCharacters)) })
                for (message, vector) in zip(todo, vectors) { byNumber[message.seq] = vector }
            } catch where Self.mayPass(error) {
                throw error
            } catch {
                logger.warning("the embedding provider refused a batch of \(todo.count) (\(error)); embedding them one at a time")
                for message in todo {
                    do throws(ProviderError) {
                        byNumber[message.seq] = try await provider.embed([String(message.text.prefix(Self.maxCharacters))]).first ?? []
                    } catch where Self.mayPass(error) {
                        throw error
                    } catch {
                        logger.warning("message \(message.seq) gets no vector: the embedding provider refused it (\(error))")
                        byNumber[message.seq] = []
                    }
                }
            }
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
