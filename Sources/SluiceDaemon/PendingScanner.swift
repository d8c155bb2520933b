import Foundation
import SluiceCore

/// Lists pending/ without following links or opening files; each entry judged by its name alone.
public struct PendingScanner: Sendable {
    public let root: DataRoot

    public init(root: DataRoot) { self.root = root }

    /// What is ready in pending/; with `includingOpenForWriting`, also files written in place whose writer still
    /// holds them open (what a `run --once` leaves behind is counted that way).
    public func scan(includingOpenForWriting: Bool = false) -> [PendingUpload] {
        var uploads: [PendingUpload] = []
        let fm = FileManager.default
        guard let top = try? fm.contentsOfDirectory(atPath: root.pending.path) else { return [] }
        for name in top.sorted() where !PendingUpload.isInProgress(name) {
            let url = root.pending.appendingPathComponent(name)
            switch FileType(at: url) {
            case .directory:
                let userProblem = Identifiers.problem(with: name, role: "user folder")
                guard let inner = try? fm.contentsOfDirectory(atPath: url.path) else { continue }
                for fileName in inner.sorted() where !PendingUpload.isInProgress(fileName) {
                    let file = url.appendingPathComponent(fileName)
                    // Written in place and still open: left for the scan its writer's close brings.
                    if !includingOpenForWriting, FileOps.isRecentlyWrittenAndOpen(file) { continue }
                    let identity: PendingUpload.Identity = if let userProblem {
                        .invalid(reason: "bad name: \(userProblem)")
                    } else {
                        PendingUpload.identify(fileName: fileName, userId: name, type: FileType(at: file))
                    }
                    uploads.append(PendingUpload(url: file, userFolder: name, fileName: fileName, identity: identity))
                }
            case .symlink:
                uploads.append(PendingUpload(url: url, userFolder: PendingUpload.looseFolder, fileName: name,
                                             identity: .invalid(reason: "pending/\(name) is a symbolic link; links are never followed")))
            case .regular, .other:
                uploads.append(PendingUpload(url: url, userFolder: PendingUpload.looseFolder, fileName: name,
                                             identity: .invalid(reason: "pending/\(name) is not inside a user folder (expected pending/{userId}/{imageId})")))
            case .missing:
                continue
            }
        }
        return uploads
    }
}
