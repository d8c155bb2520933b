import Crypto
import Foundation
import Logging
import SluiceCore
import SluiceStore

/// Takes one pending upload to a verdict: read, judge, write outputs, commit the row, then finalise the
/// pending file. Every step is safe to repeat after a crash.
public struct ImageItemProcessor: Sendable {
    let root: DataRoot
    let store: StatusStore
    let pipeline: ImagePipeline
    let limits: LimitsConfig
    let providerName: String
    let caption: CaptionStage
    let logger: Logger
    private let writeTimer = StageTimers.make("write")
    private let captionTimer = StageTimers.make("caption")

    public init(config: PipelineConfig, store: StatusStore, pipeline: ImagePipeline, providerName: String,
                captionProvider: Result<any CaptionProvider, CaptionUnavailableReason>, logger: Logger) {
        root = DataRoot(config.dataRoot)
        self.store = store
        self.pipeline = pipeline
        limits = config.limits
        self.providerName = providerName
        caption = CaptionStage(provider: captionProvider)
        self.logger = logger
    }

    /// Processes one upload; returns the status it ended with, or nil when it vanished or must be retried later.
    @discardableResult
    public func handle(_ upload: PendingUpload) async -> ItemStatus? {
        do {
            return try await process(upload)
        } catch {
            logger.error("upload not finished, will retry on the next scan", metadata: ["item": "\(upload.itemID)", "error": "\(error)"])
            return nil
        }
    }

    private func process(_ upload: PendingUpload) async throws -> ItemStatus? {
        guard case let .valid(userId, imageId) = upload.identity else {
            guard case let .invalid(reason) = upload.identity else { return nil }
            return try reject(upload, reason: reason, hash: nil, bytes: nil)
        }
        let id = upload.itemID
        let bytes: Data
        do {
            bytes = try FileOps.readRegularFile(upload.url, limit: limits.maxBytes)
        } catch let .notRegular(what) {
            return try reject(upload, reason: "upload \(what)", hash: nil, bytes: nil)
        } catch let .tooLarge(size) {
            return try reject(upload, reason: "file is \(size) bytes, over the \(limits.maxBytes) byte limit (limits.maxBytes)", hash: nil, bytes: size)
        } catch let .io(error) {
            if PendingScanner.fileType(upload.url) == .missing { return nil }
            throw error
        }
        let hash = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()

        // Already judged before a crash? Finish what was left instead of judging twice.
        if let existing = try store.item(id: id), existing.status.isFinal, existing.contentHash == hash,
           try finishInterrupted(existing, upload: upload) {
            return existing.status
        }

        let received = try store.markReceived(id: id, kind: .image, userId: userId, contentHash: hash, sourceBytes: bytes.count)
        let judgement = await pipeline.judge(bytes)
        var item = Item(id: id, kind: .image, userId: userId, status: judgement.verdict.status, reason: judgement.verdict.reason,
                        provider: judgement.safeSearch == nil ? nil : providerName, safeSearch: judgement.safeSearch,
                        exif: judgement.image?.exif, format: judgement.format?.rawValue,
                        width: judgement.image?.width ?? judgement.header?.width,
                        height: judgement.image?.height ?? judgement.header?.height,
                        sourceBytes: bytes.count, contentHash: hash, timings: judgement.timings,
                        attempts: received.attempts, createdAt: received.createdAt, updatedAt: Date())
        var verdict = judgement.verdict
        var stage = judgement.decidedBy

        if verdict == .approved, let image = judgement.image {
            let clock = ContinuousClock()
            let start = clock.now
            let approved = root.approved.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg")
            let thumbnail = root.thumbnails.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg")
            do throws(FileOpError) {
                try FileOps.writeAtomically(image.approvedJPEG, to: approved)
                try FileOps.writeAtomically(image.thumbnailJPEG, to: thumbnail)
                item.outputs = ItemOutputs(approved: root.relative(approved), thumbnail: root.relative(thumbnail),
                                           approvedBytes: image.approvedJPEG.count, thumbnailBytes: image.thumbnailJPEG.count)
                item.timings.writeMs = (clock.now - start).milliseconds
                writeTimer.record(clock.now - start)
            } catch {
                verdict = .review(reason: "approved but outputs could not be written: \(error)")
                stage = "write"
                item.status = .review
                item.reason = verdict.reason
            }
            let captionStart = clock.now
            let captioned = verdict == .approved ? await caption.run(image.classifyJPEG) : nil
            if captioned != nil { captionTimer.record(clock.now - captionStart) }
            if case let .proceed(outcome)? = captioned {
                item.caption = outcome
            }
        }
        if verdict != .approved {
            try removeOutputs(userId: userId, imageId: imageId)
            item.original = root.relative(destination(for: verdict.status, upload: upload, format: judgement.format))
        }
        try store.recordVerdict(item, stage: stage)
        try finalize(upload, as: item)
        logger.info("verdict", metadata: ["item": "\(id)", "status": "\(item.status.rawValue)", "reason": "\(item.reason ?? "")"])
        return item.status
    }

    /// Records a rejection and moves the entry to rejected/ without ever opening it as an image.
    private func reject(_ upload: PendingUpload, reason: String, hash: String?, bytes: Int?) throws -> ItemStatus {
        let id = upload.itemID
        let now = Date()
        let previous = try store.item(id: id)
        let item = Item(id: id, kind: .image, userId: upload.userId, status: .rejected, reason: reason,
                        original: root.relative(destination(for: .rejected, upload: upload, format: nil)),
                        sourceBytes: bytes, contentHash: hash, attempts: (previous?.attempts ?? 0) + 1,
                        createdAt: previous?.createdAt ?? now, updatedAt: now)
        try store.recordVerdict(item, stage: "ingest")
        try finalize(upload, as: item)
        logger.info("verdict", metadata: ["item": "\(id)", "status": "rejected", "reason": "\(reason)"])
        return .rejected
    }

    /// The pending file's last step: removed when approved, otherwise moved next to the verdict.
    private func finalize(_ upload: PendingUpload, as item: Item) throws {
        if item.status == .approved {
            try FileOps.remove(upload.url)
        } else if let original = item.original {
            try FileOps.move(upload.url, to: root.absolute(original))
        }
    }

    /// After a crash between commit and finalise: completes the file step. False when outputs are missing
    /// and the upload must be judged again.
    private func finishInterrupted(_ existing: Item, upload: PendingUpload) throws -> Bool {
        if existing.status == .approved {
            let paths = [existing.outputs.approved, existing.outputs.thumbnail].compactMap { $0 }
            guard paths.count == 2, paths.allSatisfy({ FileManager.default.fileExists(atPath: root.absolute($0).path) }) else {
                return false
            }
        }
        try finalize(upload, as: existing)
        try store.appendEvent(ItemEvent(itemId: existing.id, type: "finalized", toStatus: existing.status,
                                        detail: "pending file finished after an interrupted run"))
        logger.info("finished interrupted item", metadata: ["item": "\(existing.id)", "status": "\(existing.status.rawValue)"])
        return true
    }

    private func removeOutputs(userId: String, imageId: String) throws {
        try FileOps.remove(root.approved.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg"))
        try FileOps.remove(root.thumbnails.appendingPathComponent(userId).appendingPathComponent("\(imageId).jpg"))
    }

    /// Where the original goes for a non-approved verdict: `{folder}/{userId}/{imageId}.{ext}`.
    private func destination(for status: ItemStatus, upload: PendingUpload, format: ImageFormat?) -> URL {
        let folder: URL = switch status {
        case .blocked: root.quarantine
        case .review: root.review
        default: root.rejected
        }
        switch upload.identity {
        case .valid:
            let name = upload.fileName.contains(".") || format == nil ? upload.fileName : "\(upload.fileName).\(format?.fileExtension ?? "bin")"
            return folder.appendingPathComponent(upload.userFolder).appendingPathComponent(name)
        case .invalid:
            return folder.appendingPathComponent(PendingScanner.safeSegment(upload.userFolder))
                .appendingPathComponent(PendingScanner.safeSegment(upload.fileName))
        }
    }
}
