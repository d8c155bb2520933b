import Foundation
import Logging
import ServiceLifecycle
import SluicePipeline

/// The daemon's embed step: every `interval`, vectors for approved thread messages that have none, in batches, so
/// smart search finds them by meaning soon after they are approved. A provider that fails is retried next time
/// (keyword search works meanwhile). A pass embeds at most `batchesPerPass` batches, so a backlog (the first start
/// over an old store) never holds up a shutdown for long. On shutdown it makes one last pass; `drain` (with `--once`)
/// makes that pass embed everything still waiting.
public struct EmbeddingService: Service {
    let indexer: EmbeddingIndexer
    let interval: Duration
    let drain: Bool
    let logger: Logger
    static let batchesPerPass = 16

    public init(indexer: EmbeddingIndexer, interval: Duration, drain: Bool, logger: Logger) {
        self.indexer = indexer
        self.interval = interval
        self.drain = drain
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await pass(maxBatches: Self.batchesPerPass)
            let interval = interval
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
        await pass(maxBatches: drain ? .max : Self.batchesPerPass)
    }

    func pass(maxBatches: Int) async {
        do {
            let count = try await indexer.indexPending(maxBatches: maxBatches)
            if count > 0 { logger.info("embedded \(count) message(s) with \(indexer.provider.model)") }
        } catch {
            logger.warning("embedding messages failed, will retry: \(error)")
        }
    }
}
