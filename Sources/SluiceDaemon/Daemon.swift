import Foundation
import Logging
import SluiceCore
import SluicePipeline

/// The daemon as the composition root assembles it: the drop-folder service over the image and text pipelines.
public struct Daemon: Sendable {
    public let service: DropFolderService
    public let store: any StatusStore
    let pool: CPUPool
    let vision: any VisionProvider
    let logger: Logger

    public init(service: DropFolderService, store: any StatusStore, pool: CPUPool, vision: any VisionProvider, logger: Logger) {
        self.service = service
        self.store = store
        self.pool = pool
        self.vision = vision
        self.logger = logger
    }

    /// Runs until done (`once`) or until graceful shutdown, then releases the worker pool. A provider that does
    /// not answer at start is a warning: uploads fail closed (review) until it does.
    public func run() async throws {
        if let problem = await vision.probe() {
            logger.warning("\(problem); uploads will be held for review (fail closed) until it answers")
        }
        do {
            try await service.run()
        } catch {
            await pool.shutdown()
            throw error
        }
        await pool.shutdown()
    }
}
