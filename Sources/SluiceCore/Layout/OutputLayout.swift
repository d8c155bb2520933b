import Foundation

/// The one place that knows the on-disk contract under `dataRoot`: every path an item's files take, and the
/// file steps of a change of status. The daemon, reprocessing, human decisions, erasure and the API's uploads
/// all go through it.
///
/// | status | files |
/// |---|---|
/// | approved | `approved/{userId}/{imageId}.jpg`, `thumbnails/{userId}/{imageId}.jpg` |
/// | blocked, review, rejected | the original in `quarantine/`, `review/`, `rejected/` `{userId}/{file}` |
/// | pending | `pending/{userId}/{file}` |
public struct OutputLayout: Sendable, Equatable {
    public let root: DataRoot

    public init(root: DataRoot) { self.root = root }
    public init(dataRoot: URL) { root = DataRoot(dataRoot) }

    // MARK: Paths

    public func approved(_ image: ImageRef) -> URL {
        root.approved.appendingPathComponent(image.userId).appendingPathComponent("\(image.imageId).jpg")
    }

    public func thumbnail(_ image: ImageRef) -> URL {
        root.thumbnails.appendingPathComponent(image.userId).appendingPathComponent("\(image.imageId).jpg")
    }

    /// Where originals of a status are kept: quarantine/ (blocked), review/, rejected/; nil for approved and pending.
    public func keptFolder(for status: ItemStatus) -> URL? {
        switch status {
        case .blocked: root.quarantine
        case .review: root.review
        case .rejected: root.rejected
        case .approved, .pending: nil
        }
    }

    /// Where a pending upload's original goes for a verdict that is not `approved`: `{folder}/{userId}/{file}`,
    /// with the sniffed extension added when the upload had none; names that are not safe become `invalid-<hash>`.
    public func kept(_ upload: PendingUpload, status: ItemStatus, format: ImageFormat?) -> URL {
        let folder = keptFolder(for: status) ?? root.rejected
        switch upload.identity {
        case .valid:
            let name = upload.fileName.contains(".") || format == nil ? upload.fileName : "\(upload.fileName).\(format?.fileExtension ?? "bin")"
            return folder.appendingPathComponent(upload.userFolder).appendingPathComponent(name)
        case .invalid:
            let user = upload.userFolder == PendingUpload.looseFolder ? upload.userFolder : Self.safeSegment(upload.userFolder)
            return folder.appendingPathComponent(user).appendingPathComponent(Self.safeFileName(upload.fileName))
        }
    }

    public func pendingFolder(for userId: String) -> URL { root.pending.appendingPathComponent(userId) }

    /// Files waiting in pending/ under this image's id: `{imageId}` or `{imageId}.{ext}` (names still being
    /// written are not counted).
    public func pendingUploads(of image: ImageRef) -> [URL] {
        let folder = pendingFolder(for: image.userId)
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
            .filter { !PendingUpload.isInProgress($0) && ($0 == image.imageId || ($0 as NSString).deletingPathExtension == image.imageId) }
            .map { folder.appendingPathComponent($0) }
    }

    /// A path relative to the data root, as stored and shown.
    public func relative(_ file: URL) -> String { root.relative(file) }
    public func absolute(_ relative: String) -> URL { root.absolute(relative) }

    /// A safe file name: `{segment}` or `{segment}.{ext}` (1–10 letters or digits) as it is, else a hash-based
    /// stand-in (a `loose.png` put straight into pending/ keeps its name in rejected/@pending/).
    public static func safeFileName(_ raw: String) -> String {
        let parts = raw.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 2, Identifiers.isValidSegment(String(parts[0])), (1...10).contains(parts[1].count),
           parts[1].unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }) {
            return raw
        }
        return safeSegment(raw)
    }

    /// A safe file-name segment: the name itself when valid, else a hash-based stand-in.
    public static func safeSegment(_ raw: String) -> String {
        if Identifiers.isValidSegment(raw) { return raw }
        return "invalid-" + ContentHash.sha256Prefix(Data(raw.utf8), bytes: 6)
    }

    // MARK: Writes

    /// An upload from the API into `pending/{userId}/{imageId}.{ext}`: temp → fsync → rename, so the daemon never
    /// sees half a file. Fails when that name is already pending.
    public func writeUpload(_ data: Data, as image: ImageRef, fileExtension: String) throws(FileOpError) -> URL {
        let destination = pendingFolder(for: image.userId).appendingPathComponent("\(image.imageId).\(fileExtension)")
        if !pendingUploads(of: image).isEmpty {
            throw FileOpError("write upload", relative(destination), reason: "an upload with that name is already pending")
        }
        try FileOps.writeAtomically(data, to: destination)
        return destination
    }

    /// The approved image and its thumbnail, each temp → fsync → rename; the outputs as the item records them.
    public func writeOutputs(approved jpeg: Data, thumbnail: Data, for image: ImageRef) throws(FileOpError) -> ItemOutputs {
        let approvedURL = approved(image)
        let thumbnailURL = self.thumbnail(image)
        try FileOps.writeAtomically(jpeg, to: approvedURL)
        try FileOps.writeAtomically(thumbnail, to: thumbnailURL)
        return ItemOutputs(approved: relative(approvedURL), thumbnail: relative(thumbnailURL),
                           approvedBytes: jpeg.count, thumbnailBytes: thumbnail.count)
    }

    // MARK: Status moves

    /// Where an item's image bytes are before a change of status.
    public enum Source: Sendable {
        /// An upload still in pending/ (the daemon): moved or removed only after the commit, because its presence
        /// with a committed content hash is how a restart finds an interrupted item.
        ///
        /// `judged` is the file that was read and judged (its identity and bytes): when the name holds another file by
        /// the time the verdict is committed (the upload was re-sent under the same id meanwhile), the judged bytes
        /// are kept from memory and the new file stays in pending/ to be judged on its own.
        case pending(PendingUpload, format: ImageFormat?, judged: JudgedFile? = nil)
        /// The item's own stored files: the approved output, or the kept original (reprocessing, human decisions).
        case stored
    }

    /// The files of `current` (nil for a new item) changing to `updated`'s status. Approved outputs are written by
    /// the pipeline's write stage before this; the move sets `original`/`outputs` for the new placement and lists
    /// the steps around the store commit.
    public func move(from current: Item?, to updated: Item, source: Source) -> StatusMove {
        var item = updated
        guard updated.kind == .image else { return StatusMove(item: item) }
        switch source {
        case let .pending(upload, format, judged):
            // The kept original of an earlier upload under this id, unless the new one takes its very place.
            let earlier = current?.original.map(absolute)
            if updated.status == .approved {
                item.original = nil
                return StatusMove(item: item, after: [judged.map { .removePending(upload.url, $0.identity) } ?? .remove(upload.url)]
                                      + (earlier.map { [.remove($0)] } ?? []))
            }
            let kept = kept(upload, status: updated.status, format: format)
            item.original = relative(kept)
            item.outputs = ItemOutputs()
            var after: [StatusMove.Step] = []
            if let earlier, earlier.standardizedFileURL != kept.standardizedFileURL { after.append(.remove(earlier)) }
            // An earlier approval of the same id must not stay served.
            if let image = upload.image { after += [.remove(approved(image)), .remove(thumbnail(image))] }
            after.append(judged.map { .movePending(upload.url, to: kept, $0) } ?? .move(upload.url, to: kept))
            return StatusMove(item: item, after: after)
        case .stored:
            guard let current, current.status != updated.status, let image = updated.id.image else { return StatusMove(item: item) }
            if updated.status == .approved {
                item.original = nil
                return StatusMove(item: item, after: current.original.map { [.remove(absolute($0))] } ?? [])
            }
            guard let folder = keptFolder(for: updated.status) else { return StatusMove(item: item) }
            if current.status == .approved {
                // The approved JPEG (metadata-free) is what is kept once the original is gone.
                let kept = folder.appendingPathComponent(image.userId).appendingPathComponent("\(image.imageId).jpg")
                item.original = relative(kept)
                item.outputs = ItemOutputs()
                return StatusMove(item: item, before: [.copy(approved(image), to: kept)],
                                  after: [.remove(approved(image)), .remove(thumbnail(image))])
            }
            guard let original = current.original.map(absolute) else { return StatusMove(item: item) }
            let kept = folder.appendingPathComponent(image.userId).appendingPathComponent(original.lastPathComponent)
            item.original = relative(kept)
            return StatusMove(item: item, before: [.copy(original, to: kept)],
                              after: kept.standardizedFileURL == original.standardizedFileURL ? [] : [.remove(original)])
        }
    }

    /// Every file the contract keeps for an image, whatever its status: outputs, kept originals (any extension)
    /// and pending uploads. What erasure removes.
    public func files(of image: ImageRef) -> [URL] {
        var found = [approved(image), thumbnail(image)].filter { FileManager.default.fileExists(atPath: $0.path) }
        for folder in [root.quarantine, root.review, root.rejected] {
            let kept = folder.appendingPathComponent(image.userId)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: kept.path)) ?? []
            where name == image.imageId || (name as NSString).deletingPathExtension == image.imageId {
                found.append(kept.appendingPathComponent(name))
            }
        }
        return found + pendingUploads(of: image)
    }

    /// Whether `file` is in pending/ (an upload not judged yet).
    public func isPending(_ file: URL) -> Bool {
        file.standardizedFileURL.path.hasPrefix(root.pending.standardizedFileURL.path + "/")
    }

    /// A user's folder in every part of the contract (pending/, approved/, thumbnails/, quarantine/, review/,
    /// rejected/), where it exists. What erasing a user removes.
    public func folders(ofUser userId: String) -> [URL] {
        guard Identifiers.isValidSegment(userId) else { return [] }
        return [root.pending, root.approved, root.thumbnails, root.quarantine, root.review, root.rejected]
            .map { $0.appendingPathComponent(userId, isDirectory: true) }
            .filter { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// Files of a committed item that its row no longer points at, e.g. after a run was killed between a commit
    /// and its deletions: the outputs of an item that is not approved, kept originals of an approved one.
    public func strays(of item: Item) -> [URL] {
        guard item.kind == .image, let image = item.id.image else { return [] }
        if item.status != .approved { return [approved(image), thumbnail(image)] }
        var found: [URL] = []
        for folder in [root.quarantine, root.review, root.rejected] {
            let kept = folder.appendingPathComponent(image.userId)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: kept.path)) ?? []
            where (name as NSString).deletingPathExtension == image.imageId {
                found.append(kept.appendingPathComponent(name))
            }
        }
        return found
    }
}

/// The file steps of one item's change of status, around the store commit: `prepare()` puts new files in place
/// without removing anything the committed row may still point at; `finish()` removes or moves what the new
/// row no longer points at. Both may be repeated after a crash.
public struct StatusMove: Sendable {
    public enum Step: Sendable, Equatable {
        case copy(URL, to: URL)
        case move(URL, to: URL)
        case remove(URL)
        /// A pending upload: removed when it is still the file that was judged; otherwise left for its own judgement.
        case removePending(URL, FileIdentity)
        /// A pending upload kept: moved when it is still the file that was judged; otherwise the judged bytes are
        /// written in its place from memory and the new file is left in pending/.
        case movePending(URL, to: URL, JudgedFile)
    }

    /// The item with `original` and `outputs` set for its new placement: what to commit.
    public var item: Item
    public var before: [Step]
    public var after: [Step]

    public init(item: Item, before: [Step] = [], after: [Step] = []) {
        self.item = item
        self.before = before
        self.after = after
    }

    public func prepare() throws(FileOpError) {
        for step in before { try Self.run(step) }
    }

    public func finish() throws(FileOpError) {
        for step in after { try Self.run(step) }
    }

    private static func run(_ step: Step) throws(FileOpError) {
        switch step {
        case let .copy(source, destination):
            let data: Data
            do { data = try Data(contentsOf: source) } catch {
                throw FileOpError("read", source.path, reason: (error as NSError).localizedDescription)
            }
            try FileOps.writeAtomically(data, to: destination)
        case let .move(source, destination):
            try FileOps.move(source, to: destination)
        case let .remove(file):
            try FileOps.remove(file)
        case let .removePending(file, identity):
            if FileIdentity.of(file) == identity { try FileOps.remove(file) }
        case let .movePending(file, destination, judged):
            switch FileIdentity.of(file) {
            case judged.identity?:
                try FileOps.move(file, to: destination)
            case nil:
                // Removed since it was read (erased): not brought back from memory.
                break
            case _?:
                // Replaced since it was read: what was judged is kept from memory.
                try FileOps.writeAtomically(judged.bytes, to: destination)
            }
        }
    }
}

/// The pending file a verdict was made on: which file it was, and its bytes.
public struct JudgedFile: Sendable, Equatable {
    public var identity: FileIdentity
    public var bytes: Data

    public init(identity: FileIdentity, bytes: Data) {
        self.identity = identity
        self.bytes = bytes
    }
}
