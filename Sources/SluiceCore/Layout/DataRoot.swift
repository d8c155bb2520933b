import Foundation

/// The on-disk contract under `dataRoot`.
public struct DataRoot: Sendable, Equatable {
    public let url: URL

    public init(_ url: URL) { self.url = url.standardizedFileURL }

    public var pending: URL { url.appendingPathComponent("pending", isDirectory: true) }
    public var approved: URL { url.appendingPathComponent("approved", isDirectory: true) }
    public var thumbnails: URL { url.appendingPathComponent("thumbnails", isDirectory: true) }
    public var quarantine: URL { url.appendingPathComponent("quarantine", isDirectory: true) }
    public var review: URL { url.appendingPathComponent("review", isDirectory: true) }
    public var rejected: URL { url.appendingPathComponent("rejected", isDirectory: true) }
    /// Text queue files waiting (`*.jsonl`), and those already read (`done/`).
    public var textQueue: URL { url.appendingPathComponent("queues/text", isDirectory: true) }
    public var finishedTextQueue: URL { textQueue.appendingPathComponent("done", isDirectory: true) }
    /// The fingerprints text queue files not yet in done/ were first recorded under (one small JSON file each).
    public var textQueueFingerprints: URL { textQueue.appendingPathComponent(".fingerprints", isDirectory: true) }

    public static let folderNames = ["pending", "approved", "thumbnails", "quarantine", "review", "rejected"]

    public func createFolders() throws {
        for name in Self.folderNames {
            try FileManager.default.createDirectory(at: url.appendingPathComponent(name, isDirectory: true),
                                                    withIntermediateDirectories: true)
        }
    }

    /// A path relative to the data root, as stored and shown.
    public func relative(_ file: URL) -> String {
        let base = url.path.hasSuffix("/") ? url.path : url.path + "/"
        let path = file.standardizedFileURL.path
        return path.hasPrefix(base) ? String(path.dropFirst(base.count)) : path
    }

    public func absolute(_ relative: String) -> URL { url.appendingPathComponent(relative) }
}
