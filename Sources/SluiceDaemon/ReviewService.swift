import Foundation
import SluiceCore
import SluiceStore

/// Human decisions on items in review: approving produces the approved outputs from the kept original,
/// blocking moves it to quarantine. Who, when and the note are recorded with a `review` event.
public struct ReviewService: Sendable {
    let root: DataRoot
    let store: StatusStore
    let processor: any ImageProcessor
    let options: ImageOptions
    let maxBytes: Int

    public init(config: PipelineConfig, store: StatusStore, processor: any ImageProcessor) {
        root = DataRoot(config.dataRoot)
        self.store = store
        self.processor = processor
        options = ImageOptions(config: config)
        maxBytes = config.limits.maxBytes
    }

    public enum Decision: String, Sendable { case approve, block }

    public func decide(_ id: String, _ decision: Decision, by: String, note: String?) throws -> Item {
        guard let item = try store.item(id: id) else { throw ReviewError(message: "no item with id \"\(id)\"") }
        guard item.status == .review else {
            throw ReviewError(message: "\(id) is \(item.status.rawValue), not in review")
        }
        var updated = item
        updated.review = ReviewDecision(by: by, at: Date(), note: note)
        updated.updatedAt = Date()
        var obsolete: [URL] = []
        switch decision {
        case .approve:
            updated.status = .approved
            updated.reason = "approved by \(by)" + (note.map { ": \($0)" } ?? "")
            if item.kind == .image {
                guard let original = item.original.map(root.absolute) else { throw ReviewError(message: "\(id) has no original to approve") }
                let bytes: Data
                do { bytes = try FileOps.readRegularFile(original, limit: maxBytes) } catch {
                    throw ReviewError(message: "cannot read \(root.relative(original)): \(error)")
                }
                let image: ProcessedImage
                do throws(ImagingError) {
                    image = try processor.decodeChecked(bytes, format: try processor.sniff(bytes), options: options)
                } catch {
                    throw ReviewError(message: "\(id) cannot be approved: \(error.message)")
                }
                let (userId, imageId) = try Self.split(id)
                let approved = root.approved.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg")
                let thumbnail = root.thumbnails.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg")
                try FileOps.writeAtomically(image.approvedJPEG, to: approved)
                try FileOps.writeAtomically(image.thumbnailJPEG, to: thumbnail)
                updated.outputs = ItemOutputs(approved: root.relative(approved), thumbnail: root.relative(thumbnail),
                                              approvedBytes: image.approvedJPEG.count, thumbnailBytes: image.thumbnailJPEG.count)
                updated.exif = updated.exif ?? image.exif
                updated.original = nil
                obsolete.append(original)
            }
        case .block:
            updated.status = .blocked
            updated.reason = "blocked by \(by)" + (note.map { ": \($0)" } ?? "")
            if item.kind == .image, let original = item.original.map(root.absolute) {
                let (userId, _) = try Self.split(id)
                let kept = root.quarantine.appendingPathComponent(userId).appendingPathComponent(original.lastPathComponent)
                let bytes: Data
                do { bytes = try Data(contentsOf: original) } catch {
                    throw ReviewError(message: "cannot read \(root.relative(original)): \((error as NSError).localizedDescription)")
                }
                try FileOps.writeAtomically(bytes, to: kept)
                updated.original = root.relative(kept)
                obsolete.append(original)
            }
        }
        try store.recordReview(updated, from: item.status)
        for file in obsolete { try? FileOps.remove(file) }
        return updated
    }

    static func split(_ id: String) throws -> (String, String) {
        let parts = id.split(separator: "/").map(String.init)
        guard parts.count == 2 else { throw ReviewError(message: "\(id) is not an image id (userId/imageId)") }
        return (parts[0], parts[1])
    }
}

public struct ReviewError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
