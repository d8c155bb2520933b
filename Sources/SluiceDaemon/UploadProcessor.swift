import Foundation
import Logging
import SluiceCore
import SluicePipeline

/// Takes one pending upload to a verdict: read it, run the image pipeline (which writes approved outputs), put
/// the files where `OutputLayout` says, commit the row, then finish the pending file. Every step is safe to
/// repeat after a crash: a pending file whose committed verdict has the same content hash is finished instead
/// of judged twice.
public struct UploadProcessor: Sendable {
    let store: any StatusStore
    let pipeline: ImagePipeline
    let maxBytes: Int
    let sampler: AuditSampler
    let logger: Logger

    public init(store: any StatusStore, pipeline: ImagePipeline, maxBytes: Int, sampler: AuditSampler = AuditSampler(rate: 0), logger: Logger) {
        self.sampler = sampler
        self.store = store
        self.pipeline = pipeline
        self.maxBytes = maxBytes
        self.logger = logger
    }

    /// Processes one upload; returns the status it ended with, or nil when it vanished or must be retried later.
    @discardableResult
    /// `stillHeld` is asked right before the verdict is committed: false (another daemon took the upload over
    /// because this one's claim expired) leaves it to that daemon instead of judging it twice.
    public func handle(_ upload: PendingUpload, stillHeld: @Sendable () async -> Bool = { true }) async -> ItemStatus? {
        do {
            return try await process(upload, stillHeld: stillHeld)
        } catch {
            logger.error("upload not finished, will retry on the next scan", metadata: ["item": "\(upload.itemID)", "error": "\(error)"])
            return nil
        }
    }

    private func process(_ upload: PendingUpload, stillHeld: @Sendable () async -> Bool) async throws -> ItemStatus? {
        func reject(_ upload: PendingUpload, reason: String, hash: String?, bytes: Int?) async throws -> ItemStatus? {
            guard await stillHeld() else { return lost(upload) }
            return try await self.reject(upload, reason: reason, hash: hash, bytes: bytes)
        }
        guard let image = upload.image else {
            guard case let .invalid(reason) = upload.identity else { return nil }
            return try await reject(upload, reason: reason, hash: nil, bytes: nil)
        }
        let bytes: Data
        let identity: FileIdentity
        do {
            (bytes, identity) = try FileOps.readRegularFileAndIdentity(upload.url, limit: maxBytes, waitingForWriters: true)
        } catch .beingWritten {
            // Written in place rather than renamed in: judged once its writer closes it (inotify says so).
            logger.info("upload still open for writing; judged once it is closed", metadata: ["item": "\(upload.itemID)"])
            return nil
        } catch let .notRegular(what) {
            return try await reject(upload, reason: "upload \(what)", hash: nil, bytes: nil)
        } catch let .tooLarge(size) {
            return try await reject(upload, reason: "file is \(size) bytes, over the \(maxBytes) byte limit (limits.maxBytes)", hash: nil, bytes: size)
        } catch let .io(error) {
            if FileType(at: upload.url) == .missing { return nil }
            throw error
        }
        let hash = ContentHash.sha256(bytes)
        let existing = try await store.item(image.itemID)

        // Already judged before a crash? Finish what was left instead of judging twice.
        if let existing, existing.status.isFinal, existing.contentHash == hash, try await finishInterrupted(existing, upload: upload) {
            return existing.status
        }

        let received = try await store.markReceived(image.itemID, kind: .image, userId: image.userId, contentHash: hash, sourceBytes: bytes.count)
        // Erasure removes files before rows: a file gone (or replaced) by now was erased (or re-sent) after it was read,
        // and is not judged from memory; from here on an erasure finds the row, and the verdict is recorded only while
        // the row is there.
        let now = FileIdentity.of(upload.url)
        guard now == identity else {
            // Removed (erased): the row just made for it would outlive the erasure, and a re-upload of the same bytes
            // would be taken for this one; it goes (with a tombstone, as erasure leaves). Replaced: the new file is
            // judged next, under the same row.
            if now == nil, existing == nil {
                _ = try await store.eraseItems([image.itemID], by: "daemon", reason: "the upload was removed while it was read", at: Date())
            }
            logger.notice("upload removed or replaced while it was read; not judged now", metadata: ["item": "\(image.itemID)"])
            return nil
        }
        let run = await pipeline.run(ImageUpload(image: image, bytes: bytes, contentHash: hash), context: StageContext(mode: .intake, current: existing))
        // A fresh record: nothing of an earlier verdict carries over but the history, and a person's decision
        // when the bytes are the ones they decided on.
        let base = Item(id: image.itemID, kind: .image, userId: image.userId, status: .pending, attempts: received.attempts,
                        createdAt: received.createdAt, updatedAt: Date(),
                        decision: existing?.contentHash == hash ? existing?.decision : nil)
        guard var item = run.item(from: base, scope: .upload) else { return nil }
        item.timings = ImagePipeline.timings(of: run)
        let move = pipeline.layout.move(from: existing, to: item, source: .pending(upload, format: item.format.flatMap(ImageFormat.init(rawValue:)),
                                                                                 judged: JudgedFile(identity: identity, bytes: bytes)))
        guard await stillHeld() else { return lost(upload) }
        try move.prepare()
        // A bank match that decided names the bank's hash in the verdict event; a reused classification its item.
        var detail = item.match.flatMap { $0.acted && $0.action != .allow ? "\($0.reason), bank hash \($0.hash.hex)" : nil }
        if let reused = item.reused {
            detail = [item.reason, "classification reused from \(reused.item) (distance \(reused.distance))"].compactMap { $0 }.joined(separator: "; ")
        }
        guard try await store.recordUploadVerdict(move.item, stage: run.decidedBy, detail: detail) else {
            // Erased while it was judged: its row is gone, and nothing of it may stay (the outputs were written before
            // the commit; erasure sweeps its folders once more after the rows, for a verdict committed just before).
            for file in pipeline.layout.files(of: image) where !pipeline.layout.isPending(file) { try? FileOps.remove(file) }
            logger.notice("upload erased while it was judged; its verdict and outputs are dropped", metadata: ["item": "\(image.itemID)"])
            return nil
        }
        try move.finish()
        // With banks.autoAddBlocked, a blocked image's hash joins the bank of removed images.
        if item.status == .blocked { await pipeline.matcher?.imageBlocked(move.item) }
        // A share of the machine's approvals goes to a person (the console's audit queue).
        if item.status == .approved, item.decision == nil, sampler.picks(image.itemID, contentHash: hash) {
            try await store.addAuditSample(image.itemID, at: Date())
        }
        logger.info("verdict", metadata: ["item": "\(image.itemID)", "status": "\(item.status.rawValue)", "reason": "\(item.reason ?? "")"])
        return item.status
    }

    private func lost(_ upload: PendingUpload) -> ItemStatus? {
        logger.warning("another daemon took this upload over (this one's claim expired); leaving it to that one",
                       metadata: ["item": "\(upload.itemID)"])
        return nil
    }

    /// Records a rejection and moves the entry to rejected/ without ever opening it as an image.
    private func reject(_ upload: PendingUpload, reason: String, hash: String?, bytes: Int?) async throws -> ItemStatus? {
        let id = upload.itemID
        let now = Date()
        // Gone since it was found (erased): nothing to record, and a row made now would outlive the erasure.
        guard FileType(at: upload.url) != .missing else { return nil }
        let previous = try await store.item(id)
        let item = Item(id: id, kind: .image, userId: upload.userId, status: .rejected, reason: reason, sourceBytes: bytes,
                        contentHash: hash, attempts: (previous?.attempts ?? 0) + 1, createdAt: previous?.createdAt ?? now, updatedAt: now)
        let move = pipeline.layout.move(from: previous, to: item, source: .pending(upload, format: nil))
        try await store.recordVerdict(move.item, stage: "ingest")
        try move.finish()
        logger.info("verdict", metadata: ["item": "\(id)", "status": "rejected", "reason": "\(reason)"])
        return .rejected
    }

    /// After a crash between commit and finish: completes the file step. False when outputs are missing and the
    /// upload must be judged again.
    private func finishInterrupted(_ existing: Item, upload: PendingUpload) async throws -> Bool {
        let layout = pipeline.layout
        if existing.status == .approved {
            let paths = [existing.outputs.approved, existing.outputs.thumbnail].compactMap { $0 }
            guard paths.count == 2, paths.allSatisfy({ FileManager.default.fileExists(atPath: layout.absolute($0).path) }) else {
                return false
            }
        }
        let format = existing.format.flatMap(ImageFormat.init(rawValue:))
        try layout.move(from: existing, to: existing, source: .pending(upload, format: format)).finish()
        try await store.appendEvent(ItemEvent(itemId: existing.id, type: "finalized", toStatus: existing.status,
                                              detail: "pending file finished after an interrupted run"))
        logger.info("finished interrupted item", metadata: ["item": "\(existing.id)", "status": "\(existing.status.rawValue)"])
        return true
    }
}
