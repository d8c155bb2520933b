import Foundation
import SluiceCore

/// One stored image re-judged: classify (and policy) from the stored image, caption when approved, and the
/// file moves its new verdict needs. `finalize()` deletes what the committed row no longer points at.
struct ImageReprocessing: Sendable {
    /// How one stage came out for one item; texts use it too.
    enum Outcome: Sendable { case changed, unchanged, failed }

    struct Result: Sendable {
        var original: Item
        var updated: Item?
        var stages: [String: Outcome] = [:]
        var failure: String?
        var stageLabel = ""
        var why = ""
        /// Files to delete once the new row is committed.
        var obsolete: [URL] = []

        func finalize() {
            for file in obsolete { try? FileOps.remove(file) }
        }
    }

    let root: DataRoot
    let processor: any ImageProcessor
    let vision: any VisionProvider
    let policy: ModerationPolicy
    let options: ImageOptions
    let maxBytes: Int
    let caption: CaptionStage

    func reprocess(_ item: Item, stages: [String], dryRun: Bool) async -> Result {
        var result = Result(original: item)
        guard let userId = item.id.split(separator: "/").first.map(String.init),
              let imageId = item.id.split(separator: "/").last.map(String.init),
              Identifiers.isValidSegment(userId), Identifiers.isValidSegment(imageId), item.status != .pending else { return result }
        let source: URL? = switch item.status {
        case .approved: item.outputs.approved.map(root.absolute)
        default: item.original.map(root.absolute)
        }
        var updated = item
        var changedStages: [String] = []
        var processed: ProcessedImage?

        if stages.contains("classify") {
            guard let source, let bytes = try? FileOps.readRegularFile(source, limit: maxBytes) else {
                result.stages["classify"] = .failed
                result.failure = "\(item.id): stored image \(source.map(root.relative) ?? "(none)") is missing or unreadable"
                return result
            }
            let image: ProcessedImage
            do throws(ImagingError) {
                image = try processor.decodeChecked(bytes, format: try processor.sniff(bytes), options: options)
            } catch {
                result.stages["classify"] = .failed
                result.failure = "\(item.id): \(error.message)"
                return result
            }
            processed = image
            let safeSearch: SafeSearch
            do throws(ProviderError) {
                safeSearch = try await vision.classify(image.classifyJPEG)
            } catch {
                // Fail closed: the item stays exactly as it was.
                result.stages["classify"] = .failed
                result.failure = "\(item.id): re-classification failed, kept as \(item.status.rawValue): \(error.description)"
                return result
            }
            let decision = policy.decide(safeSearch)
            let (status, reason): (ItemStatus, String?) = switch decision {
            case .approve: (.approved, nil)
            case let .block(reason): (.blocked, reason)
            case let .review(reason): (.review, reason)
            }
            if status != item.status || safeSearch != item.safeSearch || reason != item.reason {
                updated.status = status
                updated.reason = reason
                updated.safeSearch = safeSearch
                updated.provider = vision.name
                changedStages.append("classify")
                result.stages["classify"] = .changed
            } else {
                result.stages["classify"] = .unchanged
            }
            if status != item.status, !dryRun {
                do {
                    try moveFiles(item: item, to: &updated, userId: userId, imageId: imageId, image: image, result: &result)
                } catch {
                    result.stages["classify"] = .failed
                    result.failure = "\(item.id): files could not follow the new verdict, kept as \(item.status.rawValue): \(error)"
                    result.obsolete = []
                    return result
                }
            }
        }

        if stages.contains("caption"), updated.status == .approved {
            var jpeg = processed?.classifyJPEG
            if jpeg == nil, let approved = updated.outputs.approved.map(root.absolute),
               let bytes = try? FileOps.readRegularFile(approved, limit: maxBytes),
               let format = try? processor.sniff(bytes) {
                jpeg = try? processor.process(bytes, format: format, options: options).classifyJPEG
            }
            if let jpeg, case let .proceed(outcome) = await caption.run(jpeg) {
                if outcome.caption?.caption != item.caption?.caption?.caption || outcome.skipped != item.caption?.skipped {
                    updated.caption = outcome
                    changedStages.append("caption")
                    result.stages["caption"] = outcome.error == nil ? .changed : .failed
                } else {
                    result.stages["caption"] = .unchanged
                }
            } else {
                result.stages["caption"] = .failed
            }
        }

        guard !changedStages.isEmpty else { return result }
        updated.updatedAt = Date()
        result.updated = updated
        result.stageLabel = changedStages.joined(separator: ",")
        result.why = updated.status != item.status
            ? "\(item.status.rawValue) → \(updated.status.rawValue): \(updated.reason ?? "approved by the current policy")"
            : "verdict details changed (\(result.stageLabel))"
        return result
    }

    /// Copies files into place for the new status; what the old status pointed at is deleted after the commit.
    private func moveFiles(item: Item, to updated: inout Item, userId: String, imageId: String, image: ProcessedImage,
                           result: inout Result) throws {
        let approvedURL = root.approved.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg")
        let thumbnailURL = root.thumbnails.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg")
        if updated.status == .approved {
            try FileOps.writeAtomically(image.approvedJPEG, to: approvedURL)
            try FileOps.writeAtomically(image.thumbnailJPEG, to: thumbnailURL)
            updated.outputs = ItemOutputs(approved: root.relative(approvedURL), thumbnail: root.relative(thumbnailURL),
                                          approvedBytes: image.approvedJPEG.count, thumbnailBytes: image.thumbnailJPEG.count)
            if let original = item.original { result.obsolete.append(root.absolute(original)) }
            updated.original = nil
            return
        }
        let folder = updated.status == .blocked ? root.quarantine : updated.status == .review ? root.review : root.rejected
        if item.status == .approved {
            // The approved JPEG (metadata-free) is what is kept once the original is gone.
            let kept = folder.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg")
            try FileOps.writeAtomically(try Data(contentsOf: approvedURL), to: kept)
            updated.original = root.relative(kept)
            updated.outputs = ItemOutputs()
            result.obsolete += [approvedURL, thumbnailURL]
        } else if let original = item.original {
            let from = root.absolute(original)
            let to = folder.appendingPathComponent(userId).appendingPathComponent(from.lastPathComponent)
            try FileOps.writeAtomically(try Data(contentsOf: from), to: to)
            updated.original = root.relative(to)
            if from.standardizedFileURL != to.standardizedFileURL { result.obsolete.append(from) }
        }
    }
}
