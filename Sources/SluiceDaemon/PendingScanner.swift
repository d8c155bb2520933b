import Crypto
import Foundation
import SluiceCore

/// One entry found under pending/, already judged by name alone.
public struct PendingUpload: Sendable, Equatable, Hashable {
    public enum Identity: Sendable, Equatable, Hashable {
        case valid(userId: String, imageId: String)
        /// Never opened or decoded: rejected for the reason given.
        case invalid(reason: String)
    }

    public var url: URL
    /// The user folder's name as found (may be invalid).
    public var userFolder: String
    public var fileName: String
    public var identity: Identity

    /// Store id: `{userId}/{imageId}` for valid names, the raw relative path otherwise.
    public var itemID: String {
        switch identity {
        case let .valid(userId, imageId): Identifiers.imageItemID(userId: userId, imageId: imageId)
        case .invalid: "\(userFolder)/\(fileName)"
        }
    }

    public var userId: String {
        switch identity {
        case let .valid(userId, _): userId
        case .invalid: userFolder
        }
    }
}

/// Lists pending/ without following links or opening files.
public struct PendingScanner: Sendable {
    public let root: DataRoot

    public init(root: DataRoot) { self.root = root }

    /// Names a writer is still busy with: dotfiles, `*.part`, `*.tmp`.
    public static func isInProgress(_ name: String) -> Bool {
        name.hasPrefix(".") || name.hasSuffix(".part") || name.hasSuffix(".tmp")
    }

    public func scan() -> [PendingUpload] {
        var uploads: [PendingUpload] = []
        let fm = FileManager.default
        guard let top = try? fm.contentsOfDirectory(atPath: root.pending.path) else { return [] }
        for name in top.sorted() where !Self.isInProgress(name) {
            let url = root.pending.appendingPathComponent(name)
            switch Self.fileType(url) {
            case .directory:
                let userProblem = Identifiers.problem(with: name, role: "user folder")
                guard let inner = try? fm.contentsOfDirectory(atPath: url.path) else { continue }
                for fileName in inner.sorted() where !Self.isInProgress(fileName) {
                    let file = url.appendingPathComponent(fileName)
                    let identity: PendingUpload.Identity
                    if let userProblem {
                        identity = .invalid(reason: "bad name: \(userProblem)")
                    } else {
                        identity = Self.identify(file: file, fileName: fileName, userId: name)
                    }
                    uploads.append(PendingUpload(url: file, userFolder: name, fileName: fileName, identity: identity))
                }
            case .symlink:
                uploads.append(PendingUpload(url: url, userFolder: "_pending", fileName: name,
                                             identity: .invalid(reason: "pending/\(name) is a symbolic link; links are never followed")))
            case .regular, .other:
                uploads.append(PendingUpload(url: url, userFolder: "_pending", fileName: name,
                                             identity: .invalid(reason: "pending/\(name) is not inside a user folder (expected pending/{userId}/{imageId})")))
            case .missing:
                continue
            }
        }
        return uploads
    }

    static func identify(file: URL, fileName: String, userId: String) -> PendingUpload.Identity {
        switch fileType(file) {
        case .symlink: return .invalid(reason: "upload is a symbolic link; links are never followed")
        case .directory: return .invalid(reason: "upload is a folder where an image file belongs")
        case .other: return .invalid(reason: "upload is not a regular file")
        case .regular, .missing: break
        }
        var imageId = fileName
        if let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex {
            let ext = String(fileName[fileName.index(after: dot)...])
            imageId = String(fileName[..<dot])
            let extOK = (1...10).contains(ext.utf8.count) && ext.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }
            if !extOK { return .invalid(reason: "bad name: extension \"\(ext.prefix(20))\" is not 1–10 letters or digits") }
        }
        if let problem = Identifiers.problem(with: imageId, role: "imageId") { return .invalid(reason: "bad name: \(problem)") }
        return .valid(userId: userId, imageId: imageId)
    }

    enum FileType { case regular, directory, symlink, other, missing }

    static func fileType(_ url: URL) -> FileType {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        case S_IFLNK: return .symlink
        default: return .other
        }
    }

    /// A safe file-name segment for rejected/: the name itself when valid, else a hash-based stand-in.
    static func safeSegment(_ raw: String) -> String {
        if Identifiers.isValidSegment(raw) { return raw }
        let digest = SHA256.hash(data: Data(raw.utf8)).prefix(6).map { String(format: "%02x", $0) }.joined()
        return "invalid-\(digest)"
    }
}
