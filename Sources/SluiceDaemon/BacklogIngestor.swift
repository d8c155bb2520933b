import Foundation
import SluiceCore

/// Brings an existing image backlog into pending/: a flat folder for one user, or `{userId}/{file}` folders.
/// Names and formats are checked the way the daemon checks them; files are copied atomically (dotfile, then
/// rename) and the source is never changed. Files already ingested (same content hash) or already pending
/// are skipped, so an interrupted ingest can simply be run again.
public struct BacklogIngestor: Sendable {
    public struct Summary: Sendable, Codable, Equatable {
        public var copied = 0
        public var bytes = 0
        public var alreadyIngested = 0
        public var alreadyPending = 0
        public var rejected: [Rejection] = []
    }

    public struct Rejection: Sendable, Codable, Equatable {
        public var path: String
        public var reason: String
    }

    let layout: OutputLayout
    let store: any StatusStore
    let processor: any ImageProcessor
    let maxBytes: Int

    public init(config: PipelineConfig, store: any StatusStore, processor: any ImageProcessor) {
        layout = OutputLayout(dataRoot: config.dataRoot)
        self.store = store
        self.processor = processor
        maxBytes = config.limits.maxBytes
    }

    /// The files to consider, with the user each belongs to.
    public func plan(_ source: URL, user: String?) throws -> [(file: URL, user: String)] {
        let fm = FileManager.default
        let names = try fm.contentsOfDirectory(atPath: source.path).filter { !PendingUpload.isInProgress($0) }.sorted()
        if let user {
            return names.map { (source.appendingPathComponent($0), user) }
        }
        var result: [(URL, String)] = []
        for name in names {
            let folder = source.appendingPathComponent(name)
            guard FileType(at: folder) == .directory else {
                result.append((folder, ""))
                continue
            }
            let inner = (try? fm.contentsOfDirectory(atPath: folder.path)) ?? []
            for file in inner.sorted() where !PendingUpload.isInProgress(file) { result.append((folder.appendingPathComponent(file), name)) }
        }
        return result
    }

    public func ingest(_ source: URL, user: String?, progress: @Sendable (Int, Int) -> Void) async throws -> Summary {
        var summary = Summary()
        if let user, let problem = Identifiers.problem(with: user, role: "--user") { throw IngestError(message: "bad name: \(problem)") }
        let files = try plan(source, user: user)
        for (index, entry) in files.enumerated() {
            defer { progress(index + 1, files.count) }
            let shown = entry.file.path
            guard !entry.user.isEmpty else {
                summary.rejected.append(Rejection(path: shown, reason: "not inside a user folder (use --user for a flat folder)"))
                continue
            }
            if let problem = Identifiers.problem(with: entry.user, role: "user folder") {
                summary.rejected.append(Rejection(path: shown, reason: "bad name: \(problem)"))
                continue
            }
            let image: ImageRef
            switch PendingUpload.identify(fileName: entry.file.lastPathComponent, userId: entry.user, type: FileType(at: entry.file)) {
            case let .valid(valid):
                image = valid
            case let .invalid(reason):
                summary.rejected.append(Rejection(path: shown, reason: reason))
                continue
            }
            let bytes: Data
            do {
                bytes = try FileOps.readRegularFile(entry.file, limit: maxBytes)
            } catch let .tooLarge(size) {
                summary.rejected.append(Rejection(path: shown, reason: "file is \(size) bytes, over the \(maxBytes) byte limit (limits.maxBytes)"))
                continue
            } catch let .notRegular(what) {
                summary.rejected.append(Rejection(path: shown, reason: "upload \(what)"))
                continue
            } catch let .io(error) {
                summary.rejected.append(Rejection(path: shown, reason: error.description))
                continue
            }
            do throws(ImagingError) {
                _ = try processor.sniff(bytes)
            } catch {
                summary.rejected.append(Rejection(path: shown, reason: error.message))
                continue
            }
            let hash = ContentHash.sha256(bytes)
            if let existing = try await store.item(image.itemID), existing.contentHash == hash, existing.status.isFinal {
                summary.alreadyIngested += 1
                continue
            }
            let destination = layout.pendingFolder(for: image.userId).appendingPathComponent(entry.file.lastPathComponent)
            if FileManager.default.fileExists(atPath: destination.path) {
                summary.alreadyPending += 1
                continue
            }
            try FileOps.writeAtomically(bytes, to: destination)
            summary.copied += 1
            summary.bytes += bytes.count
        }
        return summary
    }
}

public struct IngestError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
