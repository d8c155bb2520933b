import Foundation
import SluiceCore

extension Reprocessor {
    /// One text item judged again: what changed, and per-stage outcomes (no per-item dictionary on this hot path).
    struct TextJudgement: Sendable {
        /// Index of the snapshot in the batch.
        var index: Int
        var verdict: TextVerdict?
        var priority: PriorityVerdict?
        var stages: [String] = []
        var textOutcome: Outcome?
        var priorityOutcome: Outcome?
        var failure: String?
    }

    /// The text pipeline from the filter on, on every core at once (the filter and the rules scorer are pure).
    func judgeTexts(_ snapshots: [TextSnapshot], options: Options) async -> [TextJudgement] {
        let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, snapshots.count / 64))
        let size = (snapshots.count + parts - 1) / parts
        let pipeline = texts.judging
        let context = options.context
        let runsText = options.stages.contains("text")
        let runsPriority = options.stages.contains("priority")
        let keepsClassification = !options.stages.contains("classify-text")
        return await withTaskGroup(of: (Int, [TextJudgement]).self, returning: [TextJudgement].self) { group in
            for part in 0..<parts {
                let range = min(part * size, snapshots.count)..<min((part + 1) * size, snapshots.count)
                group.addTask {
                    var results: [TextJudgement] = []
                    results.reserveCapacity(range.count)
                    for index in range {
                        let snapshot = snapshots[index]
                        guard let text = snapshot.text else { continue }
                        var judgement = TextJudgement(index: index)
                        var message = ParsedMessage(id: snapshot.id, userId: "",
                                                    content: TextContent(text: text, context: snapshot.context, sentAt: snapshot.sentAt),
                                                    sentAt: snapshot.sentAt)
                        if keepsClassification, let json = snapshot.verdictJSON, json.contains(#""classifier":"#) {
                            message.storedClassification = (try? JSONDecoder().decode(TextVerdict.self, from: Data(json.utf8)))?.classifier
                        }
                        let run = await pipeline.run(message, context: context)
                        guard case let .completed(judged) = run.end else {
                            judgement.textOutcome = .failed
                            judgement.failure = "\(snapshot.id): \(run.keptBecause ?? "not judged")"
                            results.append(judgement)
                            continue
                        }
                        if runsText, let verdict = judged.filtered.verdict {
                            if !verdict.matches(storedJSON: snapshot.verdictJSON) {
                                judgement.verdict = verdict
                                judgement.stages.append("text")
                                judgement.textOutcome = .changed
                            } else {
                                judgement.textOutcome = .unchanged
                            }
                        }
                        if runsPriority, let priority = judged.priority {
                            if !priority.matches(storedJSON: snapshot.priorityJSON) {
                                judgement.priority = priority
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
    func reprocessTexts(_ snapshots: [TextSnapshot], options: Options, summary: inout Summary) async throws -> [TextUpdate] {
        if snapshots.isEmpty { return [] }
        var judged: [TextSnapshot] = []
        judged.reserveCapacity(snapshots.count)
        var decided: [ItemID] = []
        for snapshot in snapshots where snapshot.status != .rejected {
            if snapshot.humanDecided {
                guard options.includeHumanDecisions else {
                    summary.keptByHumanDecision += 1
                    continue
                }
                decided.append(snapshot.id)
            }
            judged.append(snapshot)
        }
        // Items a person decided: the standing-decision rule needs the whole decision (few, so read in full).
        let decisions = decided.isEmpty ? [:] : Dictionary(uniqueKeysWithValues: try await store.items(decided).map { ($0.id, $0) })
        var updates: [TextUpdate] = []
        for judgement in await judgeTexts(judged, options: options) {
            if let outcome = judgement.textOutcome { summary.stages["text", default: StageCounts()].add(outcome) }
            if let outcome = judgement.priorityOutcome { summary.stages["priority", default: StageCounts()].add(outcome) }
            if let failure = judgement.failure { summary.failures.append(failure) }
            guard !judgement.stages.isEmpty else { continue }
            let snapshot = judged[judgement.index]
            var status = snapshot.status
            var reason = snapshot.reason
            if let verdict = judgement.verdict {
                (status, reason) = verdict.outcome
                // The rules stage's block or hold (a block between users, a spam signal) stands: reprocessing re-runs
                // the filter, not the conversation's history.
                if let rules = snapshot.conversation {
                    (status, reason) = TextOutcome.combine(filterStatus: status, filterReason: reason, rules: rules)
                }
                switch StandingDecision.check(machine: status, machineReason: reason, current: decisions[snapshot.id],
                                              contentHash: nil, mode: .reprocess) {
                case .none: break
                case .stands: (status, reason) = (snapshot.status, snapshot.reason)
                case let .disputed(why): (status, reason) = (.review, why)
                }
            }
            let stage = judgement.stages.joined(separator: ",")
            let why = status != snapshot.status ? "\(snapshot.status.rawValue) → \(status.rawValue): \(reason ?? "allowed by the current wordlists")"
                : "verdict details changed (\(stage))"
            updates.append(TextUpdate(id: snapshot.id, from: snapshot.status, status: status, reason: reason,
                                      verdict: judgement.verdict, priority: judgement.priority, stage: stage, why: why))
            note(id: snapshot.id, from: snapshot.status, to: status, stage: stage, why: why, options: options, summary: &summary)
        }
        return updates
    }
}
