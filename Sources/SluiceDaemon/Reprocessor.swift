import Crypto
import Foundation
import Logging
import SluiceCore
import SluiceStore
import SluiceText
import Synchronization

/// Re-judges stored items with the current config: the chosen stages on matching items, from what is stored
/// (approved JPEG, quarantined or review original, the text). Every change is a `reprocess` event; files
/// follow verdicts (copy, commit, then delete, so a crash leaves at most an extra copy). Resumable: the item
/// snapshot and progress live in the store, keyed by the arguments. Fails closed like the daemon: an item
/// whose re-classification fails stays as it was.
public struct Reprocessor: Sendable {
    public static let allStages = ["classify", "caption", "text", "priority"]

    public struct Options: Sendable, Equatable {
        public var filter: ItemFilter
        public var stages: [String]
        public var dryRun: Bool
        public var concurrency: Int

        public init(filter: ItemFilter, stages: [String] = Reprocessor.allStages, dryRun: Bool = false, concurrency: Int = 8) {
            self.filter = filter
            self.stages = stages
            self.dryRun = dryRun
            self.concurrency = concurrency
        }

        /// Same arguments, same key: how an interrupted run is found again.
        var runKey: String {
            let f = filter
            let parts = [f.kind?.rawValue ?? "*", f.statuses.map(\.rawValue).sorted().joined(separator: ","), f.userId ?? "*",
                         f.since.map { "\($0.timeIntervalSince1970)" } ?? "*", f.until.map { "\($0.timeIntervalSince1970)" } ?? "*",
                         stages.sorted().joined(separator: ",")]
            return SHA256.hash(data: Data(parts.joined(separator: "|").utf8)).prefix(12).map { String(format: "%02x", $0) }.joined()
        }
    }

    public struct StageCounts: Sendable, Codable, Equatable {
        public var changed = 0
        public var unchanged = 0
        public var failed = 0

        /// Counts one item's outcome at a stage (images and texts alike).
        mutating func add(_ outcome: ImageReprocessing.Outcome) {
            switch outcome {
            case .changed: changed += 1
            case .unchanged: unchanged += 1
            case .failed: failed += 1
            }
        }
    }

    public struct Change: Sendable, Codable, Equatable {
        public var id: String
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
        /// Status changes (all of them in a dry run; at most 1000 otherwise).
        public var changes: [Change] = []
        public var seconds = 0.0
        public var itemsPerSecond = 0.0
    }

    let root: DataRoot
    let store: StatusStore
    let images: ImageReprocessing
    let filter: ProfanityFilter
    let priority: any PriorityEngine
    let logger: Logger

    public init(config: PipelineConfig, store: StatusStore, processor: any ImageProcessor, vision: any VisionProvider,
                captions: Result<any CaptionProvider, CaptionUnavailableReason>, filter: ProfanityFilter,
                priority: any PriorityEngine, logger: Logger) {
        root = DataRoot(config.dataRoot)
        self.store = store
        images = ImageReprocessing(root: root, processor: processor, vision: vision, policy: config.policy,
                                   options: ImageOptions(config: config), maxBytes: config.limits.maxBytes,
                                   caption: CaptionStage(provider: captions))
        self.filter = filter
        self.priority = priority
        self.logger = logger
    }

    /// Runs (or resumes) a reprocess; `progress(done, total)` is called as items finish.
    public func run(_ options: Options, progress: @escaping @Sendable (Int, Int) -> Void) async throws -> Summary {
        let clock = ContinuousClock()
        let started = clock.now
        var summary = Summary()
        summary.dryRun = options.dryRun
        summary.runKey = options.runKey
        let ids: [String]
        if options.dryRun {
            ids = try store.itemIDs(matching: options.filter)
            summary.total = ids.count
        } else {
            let state = try store.beginReprocess(runKey: options.runKey, arguments: "\(options)", filter: options.filter)
            summary.resumed = state.resumed
            summary.total = state.total
            summary.alreadyDone = state.done
            if state.resumed { try finishInterruptedFileSteps(runKey: options.runKey) }
            ids = try store.pendingReprocessItems(runKey: options.runKey)
        }
        let tracker = ProgressTracker(total: summary.total, done: summary.alreadyDone, report: progress)
        // Texts are pipelined: a batch's commit (SQLite, mostly I/O) runs while the next batch is read and judged.
        // Batches still commit in order, one at a time, and images wait for the text commit before them.
        var committing: Task<Void, any Error>?
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = Array(ids[start..<min(start + 500, ids.count)])
            let snapshots = try store.textSnapshots(ids: chunk)
            let texts = snapshots.filter { $0.kind == .text }
            let updates = await reprocessTexts(texts, options: options, summary: &summary)
            try await committing?.value
            committing = nil
            if !texts.isEmpty {
                if options.dryRun {
                    tracker.advance(by: texts.count)
                } else {
                    let store = store
                    let runKey = options.runKey
                    committing = Task {
                        try await store.commitTextReprocessBatch(runKey: runKey, updates: updates, done: texts.map(\.id))
                        tracker.advance(by: texts.count)
                    }
                }
            }
            let pictureIDs = snapshots.filter { $0.kind == .image }.map(\.id)
            if pictureIDs.isEmpty { continue }
            try await committing?.value
            committing = nil
            let pictures = try store.items(ids: pictureIDs).sorted { $0.id < $1.id }
            try await reprocessImages(pictures, options: options, summary: &summary, tracker: tracker)
        }
        try await committing?.value
        if !options.dryRun { try store.finishReprocess(runKey: options.runKey) }
        summary.processed = ids.count
        summary.seconds = (clock.now - started).milliseconds / 1000
        summary.itemsPerSecond = summary.seconds > 0 ? Double(ids.count) / summary.seconds : 0
        return summary
    }

    /// A run killed between a commit and its deletions leaves files the committed rows no longer point at;
    /// an image that is no longer approved must not keep a served output.
    private func finishInterruptedFileSteps(runKey: String) throws {
        let done = try store.items(ids: try store.doneReprocessItems(runKey: runKey)).filter { $0.kind == .image }
        for item in done {
            let parts = item.id.split(separator: "/").map(String.init)
            guard parts.count == 2 else { continue }
            let approved = root.approved.appendingPathComponent(parts[0]).appendingPathComponent("\(parts[1]).jpg")
            let thumbnail = root.thumbnails.appendingPathComponent(parts[0]).appendingPathComponent("\(parts[1]).jpg")
            if item.status != .approved {
                try? FileOps.remove(approved)
                try? FileOps.remove(thumbnail)
            } else {
                for folder in [root.quarantine, root.review, root.rejected] {
                    let kept = folder.appendingPathComponent(parts[0])
                    for name in (try? FileManager.default.contentsOfDirectory(atPath: kept.path)) ?? []
                    where (name as NSString).deletingPathExtension == parts[1] {
                        try? FileOps.remove(kept.appendingPathComponent(name))
                    }
                }
            }
        }
    }

    // MARK: Text

    /// One text item judged again: what changed, and per-stage counts.
    private struct TextJudgement: Sendable {
        var id: String
        var verdict: TextVerdict?
        var priority: PriorityVerdict?
        var stages: [String] = []
        /// How each stage came out for this item (nil: not run); no per-item dictionary on this hot path.
        var textOutcome: ImageReprocessing.Outcome?
        var priorityOutcome: ImageReprocessing.Outcome?
        var failure: String?
    }

    /// The filter and the scorer are pure, so a batch is judged on every core at once.
    private func judgeTexts(_ snapshots: [StatusStore.TextSnapshot], stages: [String]) async -> [TextJudgement] {
        let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, snapshots.count / 64))
        let size = (snapshots.count + parts - 1) / parts
        let filter = filter
        let priority = priority
        return await withTaskGroup(of: (Int, [TextJudgement]).self, returning: [TextJudgement].self) { group in
            for part in 0..<parts {
                let slice = Array(snapshots[min(part * size, snapshots.count)..<min((part + 1) * size, snapshots.count)])
                group.addTask {
                    var results: [TextJudgement] = []
                    results.reserveCapacity(slice.count)
                    for snapshot in slice {
                        guard let text = snapshot.text, snapshot.status != .rejected else { continue }
                        var judgement = TextJudgement(id: snapshot.id)
                        if stages.contains("text") {
                            do throws(TextInputError) {
                                let verdict = try filter.check(text)
                                if !StatusStore.matchesStored(verdict, snapshot.verdictJSON) {
                                    judgement.verdict = verdict
                                    judgement.stages.append("text")
                                    judgement.textOutcome = .changed
                                } else {
                                    judgement.textOutcome = .unchanged
                                }
                            } catch {
                                judgement.textOutcome = .failed
                                judgement.failure = "\(snapshot.id): \(error.message)"
                            }
                        }
                        if stages.contains("priority") {
                            let verdict = await priority.score(text, context: snapshot.context)
                            if !StatusStore.matchesStored(verdict, snapshot.priorityJSON) {
                                judgement.priority = verdict
                                judgement.stages.append("priority")
                                judgement.priorityOutcome = .changed
                            } else {
                                judgement.priorityOutcome = .unchanged
                            }
                        }
                        results.append(judgement)
                    }
                    return (part, results)
                }
            }
            var parts: [(Int, [TextJudgement])] = []
            for await part in group { parts.append(part) }
            return parts.sorted { $0.0 < $1.0 }.flatMap(\.1)
        }
    }

    /// Judges a batch of texts, counts the outcome in `summary` and returns the store updates to commit.
    private func reprocessTexts(_ snapshots: [StatusStore.TextSnapshot], options: Options, summary: inout Summary) async
        -> [StatusStore.TextUpdate] {
        if snapshots.isEmpty { return [] }
        // Judged on the light snapshots; only the changed columns are written back.
        var pending: [String: (verdict: TextVerdict?, priority: PriorityVerdict?, stages: [String])] = [:]
        for judgement in await judgeTexts(snapshots, stages: options.stages) {
            if let outcome = judgement.textOutcome { summary.stages["text", default: StageCounts()].add(outcome) }
            if let outcome = judgement.priorityOutcome { summary.stages["priority", default: StageCounts()].add(outcome) }
            if let failure = judgement.failure { summary.failures.append(failure) }
            if !judgement.stages.isEmpty { pending[judgement.id] = (judgement.verdict, judgement.priority, judgement.stages) }
        }
        var updates: [StatusStore.TextUpdate] = []
        for snapshot in snapshots {
            guard let change = pending[snapshot.id] else { continue }
            var status = snapshot.status
            var reason = snapshot.reason
            if let verdict = change.verdict {
                status = verdict.allowed ? .approved : .blocked
                reason = verdict.allowed ? nil : verdict.reason
            }
            let stage = change.stages.joined(separator: ",")
            let why = status != snapshot.status ? "\(snapshot.status.rawValue) → \(status.rawValue): \(reason ?? "allowed by the current wordlists")"
                : "verdict details changed (\(stage))"
            updates.append(StatusStore.TextUpdate(id: snapshot.id, from: snapshot.status, status: status, reason: reason,
                                                  verdict: change.verdict, priority: change.priority, stage: stage, why: why))
            note(id: snapshot.id, from: snapshot.status, to: status, stage: stage, why: why, options: options, summary: &summary)
        }
        return updates
    }

    // MARK: Images

    private func reprocessImages(_ items: [Item], options: Options, summary: inout Summary, tracker: ProgressTracker) async throws {
        if items.isEmpty { return }
        let images = images
        let store = store
        let limit = max(1, options.concurrency)
        let results = await withTaskGroup(of: ImageReprocessing.Result.self, returning: [ImageReprocessing.Result].self) { group in
            var results: [ImageReprocessing.Result] = []
            var running = 0
            for item in items {
                if running >= limit, let result = await group.next() {
                    results.append(result)
                    running -= 1
                }
                group.addTask {
                    let result = await images.reprocess(item, stages: options.stages, dryRun: options.dryRun)
                    if !options.dryRun {
                        do {
                            let changes = result.updated.map { [($0, item.status, result.stageLabel, result.why)] } ?? []
                            try store.commitReprocessBatch(runKey: options.runKey, changed: changes, done: [item.id])
                            result.finalize()
                        } catch {
                            var failed = result
                            failed.failure = "\(item.id): not recorded: \(error)"
                            tracker.advance(by: 1)
                            return failed
                        }
                    }
                    tracker.advance(by: 1)
                    return result
                }
                running += 1
            }
            for await result in group { results.append(result) }
            return results
        }
        for result in results {
            for (stage, outcome) in result.stages { summary.stages[stage, default: StageCounts()].add(outcome) }
            if let failure = result.failure { summary.failures.append(failure) }
            if let updated = result.updated {
                note(id: updated.id, from: result.original.status, to: updated.status, stage: result.stageLabel, why: result.why,
                     options: options, summary: &summary)
            }
        }
    }

    /// Counts a status move and lists it (all of them in a dry run, at most 1000 otherwise).
    private func note(id: String, from: ItemStatus, to: ItemStatus, stage: String, why: String, options: Options, summary: inout Summary) {
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
