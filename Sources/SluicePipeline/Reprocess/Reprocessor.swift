import Foundation
import Logging
import SluiceCore
import Synchronization

/// Re-judges stored items with the current config through the same pipelines the daemon runs: the chosen
/// stages on matching items, from what is stored (approved JPEG, quarantined or review original, the text).
/// Every change is a `reprocess` event; files follow verdicts (copy, commit, then delete, so a crash leaves at
/// most an extra copy). Resumable: the item snapshot and progress live in the store, keyed by the arguments.
/// Fails closed like the daemon: an item whose re-classification fails stays as it was. Items a person decided
/// are kept (counted as `kept (human decision)`) unless `includeHumanDecisions`, and then a disagreeing machine
/// verdict sends them to review.
public struct Reprocessor: Sendable {
    public static let allStages = ["match", "classify", "caption", "text", "classify-text", "priority"]

    public struct Options: Sendable, Equatable {
        public var filter: ItemFilter
        public var stages: [String]
        public var dryRun: Bool
        public var concurrency: Int
        public var includeHumanDecisions: Bool
        /// Items per batch (the unit each of several `sluice reprocess` processes claims); set when the run starts.
        public var batchSize: Int

        public init(filter: ItemFilter, stages: [String] = Reprocessor.allStages, dryRun: Bool = false, concurrency: Int = 8,
                    includeHumanDecisions: Bool = false, batchSize: Int = 1_000) {
            self.batchSize = batchSize
            self.filter = filter
            // The classifier judges what the filter allowed: re-running it re-runs the (deterministic) filter too.
            self.stages = stages.contains("classify-text") && !stages.contains("text") ? stages + ["text"] : stages
            self.dryRun = dryRun
            self.concurrency = concurrency
            self.includeHumanDecisions = includeHumanDecisions
        }

        /// Same arguments, same key: how an interrupted run is found again.
        var runKey: String {
            let f = filter
            var parts = [f.kind?.rawValue ?? "*", f.statuses.map(\.rawValue).sorted().joined(separator: ","), f.userId ?? "*",
                         f.since.map { "\($0.timeIntervalSince1970)" } ?? "*", f.until.map { "\($0.timeIntervalSince1970)" } ?? "*",
                         stages.sorted().joined(separator: ",")]
            if includeHumanDecisions { parts.append("human") }
            return ContentHash.sha256Prefix(Data(parts.joined(separator: "|").utf8), bytes: 12)
        }

        var context: StageContext {
            StageContext(mode: .reprocess, stages: Set(stages), dryRun: dryRun)
        }
    }

    /// How one stage came out for one item.
    public enum Outcome: Sendable { case changed, unchanged, failed }

    public struct StageCounts: Sendable, Codable, Equatable {
        public var changed = 0
        public var unchanged = 0
        public var failed = 0

        mutating func add(_ outcome: Outcome) {
            switch outcome {
            case .changed: changed += 1
            case .unchanged: unchanged += 1
            case .failed: failed += 1
            }
        }
    }

    public struct Change: Sendable, Codable, Equatable {
        public var id: ItemID
        public var from: ItemStatus
        public var to: ItemStatus
        public var stage: String
        public var why: String
    }

    public struct Summary: Sendable, Codable, Equatable {
        public var runKey = ""
        public var resumed = false
        public var dryRun = false
        public var total = 0
        public var alreadyDone = 0
        public var processed = 0
        public var stages: [String: StageCounts] = [:]
        /// "approved → blocked": count.
        public var moves: [String: Int] = [:]
        public var failures: [String] = []
        /// Items a person decided, left as they are (without `includeHumanDecisions`).
        public var keptByHumanDecision = 0
        /// Status changes (all of them in a dry run; at most 1000 otherwise).
        public var changes: [Change] = []
        public var seconds = 0.0
        public var itemsPerSecond = 0.0
        /// `--stages embed`: messages that got a vector (in a dry run: that would), with the model's name.
        public var embedded: Int?
        public var embeddingModel: String?
        public init() {}
    }

    let store: any StatusStore
    let images: ImagePipeline
    let texts: TextPipeline
    let maxBytes: Int
    let logger: Logger

    /// With claims, the run's batches are claimed one at a time, so `sluice reprocess` started on several hosts with
    /// the same arguments splits the backlog between them; each waits until every batch is done, taking over a dead
    /// host's batch once its claim expires.
    let claims: (any WorkClaims)?

    public init(store: any StatusStore, images: ImagePipeline, texts: TextPipeline, maxBytes: Int, claims: (any WorkClaims)? = nil,
                logger: Logger) {
        self.claims = claims
        self.store = store
        self.images = images
        self.texts = texts
        self.maxBytes = maxBytes
        self.logger = logger
    }

    /// Runs (or resumes) a reprocess; `progress(done, total)` is called as items finish.
    public func run(_ options: Options, progress: @escaping @Sendable (Int, Int) -> Void) async throws -> Summary {
        let clock = ContinuousClock()
        let started = clock.now
        var summary = Summary()
        summary.dryRun = options.dryRun
        summary.runKey = options.runKey
        let tracker: ProgressTracker
        var processed = 0
        if options.dryRun {
            let ids = try await store.itemIDs(matching: options.filter)
            summary.total = ids.count
            tracker = ProgressTracker(total: summary.total, done: 0, report: progress)
            try await process(ids, options: options, summary: &summary, tracker: tracker)
            processed = ids.count
        } else {
            let state = try await store.beginReprocess(runKey: options.runKey, arguments: "\(options)", filter: options.filter,
                                                       batchSize: options.batchSize)
            summary.resumed = state.resumed
            summary.total = state.total
            summary.alreadyDone = state.done
            if state.resumed { try await finishInterruptedFileSteps(runKey: options.runKey) }
            tracker = ProgressTracker(total: summary.total, done: summary.alreadyDone, report: progress)
            if let claims {
                // Until no batch is left: batches other processes hold are waited for, and one whose holder died is
                // taken over once its claim expires (or at once, when that holder ran on this machine).
                while case let batches = try await store.pendingReprocessBatches(runKey: options.runKey), !batches.isEmpty {
                    var worked = false
                    for batch in batches {
                        let unit = "reprocess:\(options.runKey):\(batch)"
                        guard await claims.claim(unit) else { continue }
                        let ids = try await store.pendingReprocessItems(runKey: options.runKey, batch: batch)
                        do {
                            try await process(ids, options: options, summary: &summary, tracker: tracker) { await claims.stillHolds(unit) }
                        } catch is ClaimLost {
                            logger.warning("another process took a reprocess batch over; going on with the next", metadata: ["batch": "\(batch)"])
                            continue
                        }
                        await claims.release(unit)
                        processed += ids.count
                        worked = true
                    }
                    if !worked { try await Task.sleep(for: .seconds(1)) }
                }
                // Every batch is done (by whichever process): the run is closed (by each process that sees it).
                try await store.finishReprocess(runKey: options.runKey)
            } else {
                let ids = try await store.pendingReprocessItems(runKey: options.runKey)
                try await process(ids, options: options, summary: &summary, tracker: tracker)
                try await store.finishReprocess(runKey: options.runKey)
                processed = ids.count
            }
        }
        summary.processed = processed
        summary.seconds = (clock.now - started).milliseconds / 1000
        summary.itemsPerSecond = summary.seconds > 0 ? Double(processed) / summary.seconds : 0
        return summary
    }

    /// Re-judges `ids` in chunks of 500. `stillHeld` is asked before each chunk: false (another process took the
    /// batch over) stops with `ClaimLost`.
    private func process(_ ids: [ItemID], options: Options, summary: inout Summary, tracker: ProgressTracker,
                         stillHeld: @escaping @Sendable () async -> Bool = { true }) async throws {
        // Texts are pipelined: a batch's commit (SQLite, mostly I/O) runs while the next batch is read and judged.
        // Batches still commit in order, one at a time, and images wait for the text commit before them.
        var committing: Task<Void, any Error>?
        // The next batch's snapshots are read while this one is judged (reads never wait for the writer in WAL).
        let chunks = ids.chunked(500).map { Array($0) }
        let store = store
        var reading: Task<[TextSnapshot], any Error>? = chunks.first.map { first in Task { try await store.textSnapshots(first) } }
        for (index, _) in chunks.enumerated() {
            guard let current = reading else { break }
            let snapshots = try await current.value
            reading = index + 1 < chunks.count ? Task { [next = chunks[index + 1]] in try await store.textSnapshots(next) } : nil
            guard await stillHeld() else {
                try await committing?.value
                throw ClaimLost()
            }
            let texts = snapshots.filter { $0.kind == .text }
            let updates = try await reprocessTexts(texts, options: options, summary: &summary)
            try await committing?.value
            committing = nil
            if !texts.isEmpty {
                if options.dryRun {
                    tracker.advance(by: texts.count)
                } else {
                    let runKey = options.runKey
                    committing = Task {
                        try await store.commitTextReprocess(runKey: runKey, updates: updates, done: texts.map(\.id))
                        tracker.advance(by: texts.count)
                    }
                }
            }
            let pictureIDs = snapshots.filter { $0.kind == .image }.map(\.id)
            if pictureIDs.isEmpty { continue }
            try await committing?.value
            committing = nil
            let pictures = try await store.items(pictureIDs).sorted { $0.id < $1.id }
            try await reprocessImages(pictures, options: options, summary: &summary, tracker: tracker, stillHeld: stillHeld)
        }
        try await committing?.value
    }

    /// Another process took a batch over while this one worked on it (this one's claim expired).
    struct ClaimLost: Error, CustomStringConvertible {
        var description: String { "another sluice reprocess took a batch of this run over (this one's claim expired); run it again to resume" }
    }

    /// A run killed between a commit and its deletions leaves files the committed rows no longer point at;
    /// an image that is no longer approved must not keep a served output.
    private func finishInterruptedFileSteps(runKey: String) async throws {
        for item in try await store.items(try await store.doneReprocessItems(runKey: runKey)) {
            for file in images.layout.strays(of: item) { try? FileOps.remove(file) }
        }
    }

    /// Counts a status move and lists it (all of them in a dry run, at most 1000 otherwise).
    func note(id: ItemID, from: ItemStatus, to: ItemStatus, stage: String, why: String, options: Options, summary: inout Summary) {
        guard to != from else { return }
        summary.moves["\(from.rawValue) → \(to.rawValue)", default: 0] += 1
        if options.dryRun || summary.changes.count < 1000 {
            summary.changes.append(Change(id: id, from: from, to: to, stage: stage, why: why))
        }
    }
}

/// Counts finished items across tasks and reports them.
final class ProgressTracker: Sendable {
    private let state: Mutex<Int>
    private let total: Int
    private let report: @Sendable (Int, Int) -> Void

    init(total: Int, done: Int, report: @escaping @Sendable (Int, Int) -> Void) {
        state = Mutex(done)
        self.total = total
        self.report = report
    }

    func advance(by count: Int) {
        guard count > 0 else { return }
        let done = state.withLock { value -> Int in
            value += count
            return value
        }
        report(done, total)
    }
}
