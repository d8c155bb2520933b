import Foundation

/// One entry found under pending/, already judged by its name alone.
public struct PendingUpload: Sendable, Equatable, Hashable {
    public enum Identity: Sendable, Equatable, Hashable {
        case valid(ImageRef)
        /// Never opened or decoded: rejected for the reason given.
        case invalid(reason: String)
    }

    public var url: URL
    /// The user folder's name as found (may be invalid).
    public var userFolder: String
    public var fileName: String
    public var identity: Identity

    public init(url: URL, userFolder: String, fileName: String, identity: Identity) {
        self.url = url
        self.userFolder = userFolder
        self.fileName = fileName
        self.identity = identity
    }

    /// Store id: `{userId}/{imageId}` for valid names, the raw relative path otherwise.
    public var itemID: ItemID {
        switch identity {
        case let .valid(image): image.itemID
        case .invalid: ItemID("\(userFolder)/\(fileName)")
        }
    }

    /// The unit a daemon claims before judging this upload (`WorkLeases`).
    public var workUnit: String { "upload:\(itemID.rawValue)" }

    public var image: ImageRef? {
        if case let .valid(image) = identity { return image }
        return nil
    }

    public var userId: String { image?.userId ?? userFolder }

    /// The stand-in user folder of entries put straight into pending/ (not in a user folder): `@` is outside the user
    /// id alphabet, so their items (`@pending/loose.jpg`) and kept files (`rejected/@pending/`) never meet a user's.
    public static let looseFolder = "@pending"

    /// Names a writer is still busy with: dotfiles, `*.part`, `*.tmp`.
    public static func isInProgress(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return name.hasPrefix(".") || lowered.hasSuffix(".part") || lowered.hasSuffix(".tmp")
    }

    /// Judges a file name inside a user folder: `{imageId}` or `{imageId}.{ext}` with a 1–10 character extension.
    public static func identify(fileName: String, userId: String, type: FileType) -> Identity {
        switch type {
        case .symlink: return .invalid(reason: "upload is a symbolic link; links are never followed")
        case .directory: return .invalid(reason: "upload is a folder where an image file belongs")
        case .other: return .invalid(reason: "upload is not a regular file")
        case .regular, .missing: break
        }
        var imageId = fileName
        if let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex {
            let ext = String(fileName[fileName.index(after: dot)...])
            imageId = String(fileName[..<dot])
            let extOK = (1...10).contains(ext.utf8.count)
                && ext.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }
            if !extOK { return .invalid(reason: "bad name: extension \"\(ext.prefix(20))\" is not 1–10 letters or digits") }
        }
        if let problem = Identifiers.problem(with: imageId, role: "imageId") { return .invalid(reason: "bad name: \(problem)") }
        if let problem = Identifiers.problem(with: userId, role: "user folder") { return .invalid(reason: "bad name: \(problem)") }
        guard let image = ImageRef(userId: userId, imageId: imageId) else { return .invalid(reason: "bad name") }
        return .valid(image)
    }
}

/// What is at a path, without following a link.
public enum FileType: Sendable {
    case regular, directory, symlink, other, missing

    public init(at url: URL) {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            self = .missing
            return
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFLNK: self = .symlink
        default: self = .other
        }
    }
}
