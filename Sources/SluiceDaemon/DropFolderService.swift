import Foundation
import Logging
import Synchronization
import ServiceLifecycle
import SluiceCore

/// The daemon: scans pending/ at start, then on every inotify signal and every `rescanSeconds`, and runs
/// each upload through the pipeline with bounded concurrency. On graceful shutdown (SIGINT/SIGTERM) it
/// stops taking new uploads, finishes those in flight, and returns.
public struct DropFolderService: Service {
    public enum Mode: Sendable { case watch, once }

    let config: PipelineConfig
    let processor: UploadProcessor
    let textQueue: TextQueueIngestor?
    let mode: Mode
    let leases: WorkLeases
    let logger: Logger

    public init(config: PipelineConfig, processor: UploadProcessor, textQueue: TextQueueIngestor?, mode: Mode, leases: WorkLeases,
                logger: Logger) {
        self.config = config
        self.processor = processor
        self.textQueue = textQueue
        self.mode = mode
        self.leases = leases
        self.logger = logger
    }

    public func run() async throws {
        let root = DataRoot(config.dataRoot)
        try root.createFolders()
        // Other daemons may be writing into the same folders right now: only temp files of dead writers on this
        // host, or older than any write takes, are orphans. Swept at start and whenever a dead daemon's work is
        // taken over.
        let orphanAge = max(600, config.daemon.leaseSeconds * 4)
        let logger = logger
        let sweep: @Sendable () -> Void = {
            let orphans = FileOps.removeOrphanTemps(under: root.approved, olderThan: orphanAge)
                + FileOps.removeOrphanTemps(under: root.thumbnails, olderThan: orphanAge)
            if orphans > 0 { logger.notice("removed temp files left by an interrupted run", metadata: ["count": "\(orphans)"]) }
        }
        // Claims are renewed for as long as the service runs; a daemon of this host that died frees its claims now.
        await leases.releaseDeadLocalOwners()
        sweep()
        let heartbeat = Task { [leases] in await leases.heartbeat(afterTakeover: sweep) }
        defer { heartbeat.cancel() }
        let scanner = PendingScanner(root: root)

        if let textQueue { try FileManager.default.createDirectory(at: textQueue.done, withIntermediateDirectories: true) }
        switch mode {
        case .once:
            let summary = await process(scanner.scan())
            logger.notice("processed pending uploads", metadata: ["items": "\(summary)"])
            // Nothing judged is left in pending/: what is there now waits for a later run (a writer still holding the
            // file open, another daemon's claim, or a store error logged above), and the operator is told so.
            let left = scanner.scan(includingOpenForWriting: true)
            if !left.isEmpty {
                logger.warning("uploads left in pending/ for a later run (still open for writing, claimed by another daemon, or not finished: see above)",
                               metadata: ["count": "\(left.count)", "items": "\(left.prefix(5).map(\.itemID.rawValue).joined(separator: ", "))\(left.count > 5 ? ", …" : "")"])
            }
            await textQueue?.processAll(leases: leases)
            await textQueue?.finish()
        case .watch:
            let watcher = DropFolderWatcher(pending: root.pending, extraFolders: textQueue.map { [$0.queue] } ?? [], logger: logger)
            let signals = Self.merge(watcher.changes(), every: config.daemon.rescanSeconds)
            logger.notice("watching for uploads", metadata: ["pending": "\(root.pending.path)"])
            try await runWatching(scanner: scanner, signals: signals)
            await textQueue?.finish()
            logger.notice("drained in-flight uploads, stopping")
        }
    }

    /// Processes a fixed list with at most `concurrency.items` in flight; returns how many were handled.
    func process(_ uploads: [PendingUpload]) async -> Int {
        let limit = config.itemsInFlight
        return await withTaskGroup(of: Void.self, returning: Int.self) { group in
            var inFlight = 0
            for upload in uploads {
                if inFlight >= limit {
                    await group.next()
                    inFlight -= 1
                }
                group.addTask { await handleClaimed(upload) }
                inFlight += 1
            }
            await group.waitForAll()
            return uploads.count
        }
    }

    private func runWatching(scanner: PendingScanner, signals: AsyncStream<Void>) async throws {
        let limit = config.itemsInFlight
        let leases = leases
        let active = SharedNames()
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for await _ in signals.cancelOnGracefulShutdown() {
                if let textQueue = textQueue, !textQueue.pendingFiles().isEmpty, active.insert(textQueue.queue.path) {
                    // Text is cheap: one pass over the ready files at a time, beside the image uploads.
                    group.addTask {
                        await textQueue.processAll(leases: leases)
                        active.remove(textQueue.queue.path)
                    }
                    running += 1
                }
                for upload in scanner.scan() where active.insert(upload.url.path) {
                    if running >= limit {
                        await group.next()
                        running -= 1
                    }
                    group.addTask {
                        await handleClaimed(upload)
                        active.remove(upload.url.path)
                    }
                    running += 1
                }
            }
            // Graceful shutdown: no new uploads; in-flight ones finish.
            await group.waitForAll()
        }
    }

    /// Judges one upload while holding its claim; another daemon on the same folders that holds it keeps it.
    func handleClaimed(_ upload: PendingUpload) async {
        let processor = processor
        _ = await leases.with(upload.workUnit) { await processor.handle(upload, stillHeld: $0) }
    }

    /// One signal now, one per inotify change, one every `seconds`.
    static func merge(_ changes: AsyncStream<Void>, every seconds: Double) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        continuation.yield(())
        let forward = Task {
            for await _ in changes { continuation.yield(()) }
        }
        let tick = Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
                continuation.yield(())
            }
        }
        continuation.onTermination = { _ in
            forward.cancel()
            tick.cancel()
        }
        return stream
    }
}

/// A set of names shared between tasks: the paths being processed right now (so a rescan does not start the same
/// upload twice), or the queue entries already reported as ignored.
final class SharedNames: Sendable {
    private let names = Mutex(Set<String>())

    /// False when the name is already in the set.
    func insert(_ name: String) -> Bool { names.withLock { $0.insert(name).inserted } }
    func remove(_ name: String) { _ = names.withLock { $0.remove(name) } }
}
