import Foundation
import SluiceCore

extension Reprocessor {
    /// One stored image judged again: what changed, per stage, and the file steps still to take after the commit.
    struct ImageResult: Sendable {
        var original: Item
        var updated: Item?
        var stages: [String: Outcome] = [:]
        var failure: String?
        var keptByHumanDecision = false
        var stageLabel = ""
        var why = ""
        /// Deletions once the new row is committed.
        var move: StatusMove?
    }

    /// `stillHeld` is asked before each image's commit: false (another process took the batch over) leaves the
    /// image to that process, and the image is counted as failed here ("claim lost").
    func reprocessImages(_ items: [Item], options: Options, summary: inout Summary, tracker: ProgressTracker,
                         stillHeld: @escaping @Sendable () async -> Bool = { true }) async throws {
        if items.isEmpty { return }
        let store = store
        let limit = max(1, options.concurrency)
        let results = await withTaskGroup(of: ImageResult.self, returning: [ImageResult].self) { group in
            var results: [ImageResult] = []
            var running = 0
            for item in items {
                if running >= limit, let result = await group.next() {
                    results.append(result)
                    running -= 1
                }
                group.addTask {
                    var result = await reprocess(item, options: options)
                    if !options.dryRun, !(await stillHeld()) {
                        result.failure = "\(item.id): not recorded: another process took this batch over (claim lost)"
                        result.move = nil
                    } else if !options.dryRun {
                        do {
                            let changes = result.updated.map { [ReprocessChange(item: $0, from: item.status, stage: result.stageLabel, why: result.why)] } ?? []
                            try await store.commitReprocess(runKey: options.runKey, changes: changes, done: [item.id])
                            try? result.move?.finish()
                            if let updated = result.updated, updated.status == .blocked { await images.matcher?.imageBlocked(updated) }
                        } catch {
                            result.failure = "\(item.id): not recorded: \(error)"
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
            if result.keptByHumanDecision { summary.keptByHumanDecision += 1 }
            if let updated = result.updated {
                note(id: updated.id, from: result.original.status, to: updated.status, stage: result.stageLabel, why: result.why,
                     options: options, summary: &summary)
            }
        }
    }

    /// Runs the image pipeline on one stored item from its stored file: the approved JPEG, or the kept original.
    func reprocess(_ item: Item, options: Options) async -> ImageResult {
        var result = ImageResult(original: item)
        guard let image = item.id.image, item.status != .pending else { return result }
        if item.decidedStatus != nil, !options.includeHumanDecisions {
            result.keptByHumanDecision = true
            return result
        }
        let classify = options.stages.contains("classify")
        let match = options.stages.contains("match")
        let caption = options.stages.contains("caption") && (classify || item.status == .approved)
        guard classify || caption || match else { return result }
        let label = classify ? "classify" : match ? "match" : "caption"
        let layout = images.layout
        let source = item.status == .approved ? item.outputs.approved.map(layout.absolute) : item.original.map(layout.absolute)
        guard let source, let bytes = try? FileOps.readRegularFile(source, limit: maxBytes) else {
            result.stages[label] = .failed
            result.failure = "\(item.id): stored image \(source.map(layout.relative) ?? "(none)") is missing or unreadable"
            return result
        }
        var context = options.context
        context.current = item
        let run = await images.run(ImageUpload(image: image, bytes: bytes), context: context)
        guard var updated = run.item(from: item, scope: .rejudge) else {
            result.stages[label] = .failed
            result.failure = "\(item.id): \(run.keptBecause ?? "not judged")"
            return result
        }
        var changedStages: [String] = []
        // The banks as they are now (a list imported today finds old uploads); hashes missing from items judged
        // before Sluice hashed images are filled in.
        if match {
            let decidedByMatch = run.decidedBy == "match"
            if updated.match != item.match || updated.pdq != item.pdq || (decidedByMatch && updated.status != item.status) {
                changedStages.append("match")
                result.stages["match"] = .changed
            } else {
                result.stages["match"] = .unchanged
            }
        }
        if classify {
            if updated.status != item.status || updated.safeSearch != item.safeSearch || updated.reason != item.reason {
                changedStages.append("classify")
                result.stages["classify"] = .changed
            } else {
                result.stages["classify"] = .unchanged
            }
        }
        if caption, updated.status == .approved, case let .completed(captioned) = run.end, let outcome = captioned.outcome {
            if outcome.caption?.caption != item.caption?.caption?.caption || outcome.skipped != item.caption?.skipped {
                changedStages.append("caption")
                result.stages["caption"] = outcome.error == nil ? .changed : .failed
            } else {
                updated.caption = item.caption
                result.stages["caption"] = .unchanged
            }
        }
        guard !changedStages.isEmpty else { return result }
        updated.updatedAt = Date()
        if updated.status != item.status, !options.dryRun {
            let move = layout.move(from: item, to: updated, source: .stored)
            do throws(FileOpError) {
                try move.prepare()
            } catch {
                result.stages[label] = .failed
                result.failure = "\(item.id): files could not follow the new verdict, kept as \(item.status.rawValue): \(error)"
                return result
            }
            updated = move.item
            result.move = move
        }
        result.updated = updated
        result.stageLabel = changedStages.joined(separator: ",")
        result.why = updated.status != item.status
            ? "\(item.status.rawValue) → \(updated.status.rawValue): \(updated.reason ?? "approved by the current policy")"
            : "verdict details changed (\(result.stageLabel))"
        if run.decidedBy == "match", let match = updated.match, match.acted { result.why += ", bank hash \(match.hash.hex)" }
        return result
    }
}
