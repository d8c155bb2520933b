import Foundation
import Logging
import SluiceCore
import SluicePipeline

/// Ingests `queues/text/*.jsonl`: one JSON object a line, `{"id", "userId", "text", "context"?, "kind"?}`.
/// Every line runs through the text pipeline and becomes an item (approved or blocked with the verdict, or
/// rejected naming file and line); a finished file moves to `queues/text/done/`. Replaying a file after a crash
/// is a no-op for lines already recorded (same id and same text), so no line is lost or counted twice.
public struct TextQueueIngestor: Sendable {
    static let batchSize = 2_000
    /// Batches queued for the writer while the next is judged.
    static let writesAhead = 2

    let root: DataRoot
    let store: any StatusStore
    let pipeline: TextPipeline
    let logger: Logger

    public init(root: DataRoot, store: any StatusStore, pipeline: TextPipeline, logger: Logger) {
        self.root = root
        self.store = store
        self.pipeline = pipeline
        self.logger = logger
    }

    public var queue: URL { root.url.appendingPathComponent("queues/text", isDirectory: true) }
    public var done: URL { queue.appendingPathComponent("done", isDirectory: true) }

    /// Queue files ready to ingest (writers use a dotfile or `.part`/`.tmp` and rename).
    public func pendingFiles() -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: queue.path)) ?? []
        return names.filter { $0.hasSuffix(".jsonl") && !PendingUpload.isInProgress($0) }.sorted()
            .map { queue.appendingPathComponent($0) }
            .filter { FileType(at: $0) == .regular }
    }

    public struct FileSummary: Sendable, Equatable {
        public var lines = 0
        public var recorded = 0
        public var unchanged = 0
        public var rejected = 0
    }

    /// Processes every ready file; returns per-file summaries. With `leases`, a file another daemon holds is left
    /// to it (and one whose holder died is taken over once its lease expires).
    @discardableResult
    public func processAll(leases: WorkLeases? = nil) async -> [String: FileSummary] {
        var summaries: [String: FileSummary] = [:]
        for file in pendingFiles() {
            let unit = "text:\(file.lastPathComponent)"
            if let leases, !(await leases.claim(unit)) { continue }
            do {
                // Another daemon may have finished and moved it between the listing and the claim.
                if FileType(at: file) == .regular {
                    summaries[file.lastPathComponent] = try await process(file) { await leases?.stillHolds(unit) ?? true }
                }
            } catch let lost as ClaimLost {
                logger.warning("\(lost)", metadata: ["file": "\(file.lastPathComponent)"])
                continue
            } catch {
                logger.error("text queue file not finished, will retry", metadata: ["file": "\(file.lastPathComponent)", "error": "\(error)"])
            }
            await leases?.release(unit)
        }
        return summaries
    }

    /// Runs the lines through the intake pipeline (all at once when there is more than one); items in line order.
    func judge(_ lines: [(line: Data, number: Int)], file name: String) async -> [Item] {
        let inputs = lines.map { QueueLine(bytes: $0.line, source: "queues/text/\(name):\($0.number)", fallbackID: ItemID("\(name):\($0.number)")) }
        let runs = await pipeline.intake.run(inputs, context: .intake, concurrency: inputs.count)
        return zip(inputs, runs).compactMap { input, run in
            let now = Date()
            return run.item(from: Item(id: input.fallbackID, kind: .text, userId: "", status: .pending, createdAt: now, updatedAt: now), scope: .upload)
        }
    }

    /// Another daemon took the file over while this one worked on it (its claim expired).
    struct ClaimLost: Error, CustomStringConvertible {
        var description: String { "another daemon took this text queue file over (this one's claim expired); leaving it to that one" }
    }

    /// One file: judge each line, record in batches, then move the file to done/. `stillHeld` is asked before each
    /// batch is written and before the file moves: false stops here (`ClaimLost`).
    public func process(_ file: URL, stillHeld: @escaping @Sendable () async -> Bool = { true }) async throws -> FileSummary {
        let data = try Data(contentsOf: file, options: .mappedIfSafe)
        let name = file.lastPathComponent
        var summary = FileSummary()
        var batch: [Item] = []

        // Batches are written while the next ones are judged (the store's writer and the pipeline each keep a core
        // busy): up to `writesAhead` writes are queued, each waiting for the one before it, so batches land in file
        // order and the judging never waits for a write unless the writer is the slower of the two. Which lines are
        // unchanged (same id, same text: a replay after a crash) is decided inside the write's own transaction.
        var writes: [Task<(written: Int, of: Int), any Error>] = []
        func awaitOldestWrite() async throws {
            let (written, of) = try await writes.removeFirst().value
            summary.recorded += written
            summary.unchanged += of - written
        }
        func awaitWrites() async throws {
            while !writes.isEmpty { try await awaitOldestWrite() }
        }
        func flush() async throws {
            guard !batch.isEmpty else { return }
            // The rules' counts first: a crash before the verdicts are recorded replays the lines, and a message
            // request is keyed by its item, so it is counted once.
            try await pipeline.settle()
            var seen = Set<ItemID>()
            var fresh: [Item] = []
            fresh.reserveCapacity(batch.count)
            // Within a batch the last line for an id wins, like sequential processing would.
            for item in batch.reversed() where seen.insert(item.id).inserted { fresh.append(item) }
            fresh.reverse()
            batch.removeAll(keepingCapacity: true)
            if writes.count >= Self.writesAhead { try await awaitOldestWrite() }
            let store = store
            let previous = writes.last
            writes.append(Task {
                // In file order; and the claim is checked right before this batch commits.
                if let previous { _ = try await previous.value }
                guard await stillHeld() else { throw ClaimLost() }
                return (try await store.recordChangedVerdicts(fresh, stage: "text"), fresh.count)
            })
        }

        // Lines are judged one at a time, or a window at a time when a text classifier is called (its latency,
        // not Sluice, sets the pace); either way they are recorded in file order.
        let window = pipeline.concurrentLines
        var pending: [(line: Data, number: Int)] = []
        func judgePending() async throws {
            let items = await judge(pending, file: name)
            pending.removeAll(keepingCapacity: true)
            for item in items {
                if item.status == .rejected { summary.rejected += 1 }
                batch.append(item)
                if batch.count >= Self.batchSize { try await flush() }
            }
        }

        var lineNumber = 0
        var lineStart = data.startIndex
        while lineStart < data.endIndex {
            let lineEnd = data[lineStart...].firstIndex(of: 0x0A) ?? data.endIndex
            var line = data[lineStart..<lineEnd]
            lineStart = lineEnd < data.endIndex ? data.index(after: lineEnd) : data.endIndex
            lineNumber += 1
            if line.last == 0x0D { line = line.dropLast() }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            summary.lines += 1
            pending.append((Data(line), lineNumber))
            if pending.count >= window { try await judgePending() }
        }
        try await judgePending()
        try await flush()
        try await awaitWrites()
        guard await stillHeld() else { throw ClaimLost() }
        try FileOps.move(file, to: done.appendingPathComponent(name))
        logger.info("text queue file done", metadata: ["file": "\(name)", "lines": "\(summary.lines)", "recorded": "\(summary.recorded)",
                                                        "unchanged": "\(summary.unchanged)", "rejected": "\(summary.rejected)"])
        return summary
    }
}
