import Foundation
import Logging
import ServiceLifecycle
import SluicePipeline

/// The daemon's embed step: every `interval`, vectors for approved thread messages that have none, in batches, so
/// smart search finds them by meaning soon after they are approved. A provider that fails is retried next time
/// (keyword search works meanwhile). With `--once` (graceful shutdown after the uploads) it makes one last pass.
public struct EmbeddingService: Service {
    let indexer: EmbeddingIndexer
    let interval: Duration
    let logger: Logger

    public init(indexer: EmbeddingIndexer, interval: Duration, logger: Logger) {
        self.indexer = indexer
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await pass()
            let interval = interval
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
        await pass()
    }

    func pass() async {
        do {
            let count = try await indexer.indexPending()
            if count > 0 { logger.info("embedded \(count) message(s) with \(indexer.provider.model)") }
        } catch {
            logger.warning("embedding messages failed, will retry: \(error)")
        }
    }
}
