#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A file-system operation that failed, naming the path and the OS reason.
public struct FileOpError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var reason: String

    public init(_ operation: String, _ path: String, errno code: Int32 = errno) {
        self.operation = operation
        self.path = path
        reason = String(cString: strerror(code))
    }

    public init(_ operation: String, _ path: String, reason: String) {
        self.operation = operation
        self.path = path
        self.reason = reason
    }

    public var description: String { "cannot \(operation) \(path): \(reason)" }
}

/// Crash-safe file primitives: temp file → fsync → rename → fsync folder. `OutputLayout` decides which files
/// go where; these do the writing.
public enum FileOps {
    public static let tempMarker = ".sluice-tmp-"

    /// Writes `data` to `destination` so that readers see either the old file or the whole new one.
    public static func writeAtomically(_ data: Data, to destination: URL) throws(FileOpError) {
        let folder = destination.deletingLastPathComponent()
        try makeFolder(folder)
        let temp = folder.appendingPathComponent(".\(destination.lastPathComponent)\(tempMarker)\(tempOwner)~\(UUID().uuidString)")
        let fd = open(temp.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw FileOpError("create", temp.path) }
        var ok = false
        defer {
            if !ok { unlink(temp.path) }
        }
        let written: Int = data.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, base + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return -1
                }
                offset += n
            }
            return offset
        }
        if written != data.count {
            let code = errno
            close(fd)
            throw FileOpError("write", temp.path, errno: code)
        }
        if fsync(fd) != 0 {
            let code = errno
            close(fd)
            throw FileOpError("fsync", temp.path, errno: code)
        }
        close(fd)
        guard rename(temp.path, destination.path) == 0 else { throw FileOpError("rename into place", destination.path) }
        ok = true
        syncFolder(folder)
    }

    /// Moves a file or folder (never following a link) to `destination`, replacing a file there.
    public static func move(_ source: URL, to destination: URL) throws(FileOpError) {
        try makeFolder(destination.deletingLastPathComponent())
        if rename(source.path, destination.path) != 0 {
            let code = errno
            if code == ENOTEMPTY || code == EEXIST || code == EISDIR || code == ENOTDIR {
                let alternative = destination.deletingLastPathComponent()
                    .appendingPathComponent(destination.lastPathComponent + "-" + String(UUID().uuidString.prefix(8)))
                guard rename(source.path, alternative.path) == 0 else { throw FileOpError("move to", alternative.path) }
            } else {
                throw FileOpError("move \(source.path) to", destination.path, errno: code)
            }
        }
        syncFolder(destination.deletingLastPathComponent())
        syncFolder(source.deletingLastPathComponent())
    }

    /// Moves `source` to the first of `candidates(1)`, `candidates(2)`, … that does not exist, without ever replacing
    /// a file: each is taken with link(2), which fails when the name exists (so a file another process put there
    /// between a check and a rename cannot be overwritten), then the source name is removed. A crash between the two
    /// leaves the file under both names, never under none. Returns where it went. On a file system without hard links it
    /// checks and renames instead.
    @discardableResult
    public static func moveKeepingExisting(_ source: URL, to candidates: (Int) -> URL) throws(FileOpError) -> URL {
        var attempt = 1
        try makeFolder(candidates(1).deletingLastPathComponent())
        while true {
            let destination = candidates(attempt)
            if link(source.path, destination.path) == 0 {
                syncFolder(destination.deletingLastPathComponent())
                if unlink(source.path) != 0, errno != ENOENT { throw FileOpError("remove", source.path) }
                syncFolder(source.deletingLastPathComponent())
                return destination
            }
            let code = errno
            guard attempt < 100_000 else { throw FileOpError("move \(source.path) to", destination.path, errno: code) }
            if code == EEXIST {
                attempt += 1
            } else if code == EPERM || code == ENOTSUP || code == EOPNOTSUPP || code == EMLINK {
                // A file system without hard links: check, then rename (the race is back, but only there).
                if FileType(at: destination) == .missing {
                    try move(source, to: destination)
                    return destination
                }
                attempt += 1
            } else {
                throw FileOpError("move \(source.path) to", destination.path, errno: code)
            }
        }
    }

    public static func remove(_ file: URL) throws(FileOpError) {
        if unlink(file.path) != 0, errno != ENOENT { throw FileOpError("remove", file.path) }
        syncFolder(file.deletingLastPathComponent())
    }

    public static func makeFolder(_ folder: URL) throws(FileOpError) {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw FileOpError("create folder", folder.path, reason: (error as NSError).localizedDescription)
        }
    }

    public static func syncFolder(_ folder: URL) {
        let fd = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }

    /// Reads a regular file without following links, refusing more than `limit` bytes.
    public static func readRegularFile(_ file: URL, limit: Int) throws(UploadReadError) -> Data {
        try readRegularFileAndIdentity(file, limit: limit).data
    }

    /// Whether another process has the open file `fd` (opened read-only) open for writing: Linux refuses a read lease
    /// on such a file (`EAGAIN`). Where leases cannot be taken (another owner without CAP_LEASE, a network file
    /// system) the answer is false. The lease, when taken, is let go at once.
    public static func isBeingWritten(_ fd: Int32) -> Bool {
        #if canImport(Glibc)
        // F_SETLEASE (F_LINUX_SPECIFIC_BASE + 0, <linux/fcntl.h>): Glibc declares it only under _GNU_SOURCE.
        let setLease: Int32 = 1024
        // While the lease is held, another process opening the file for writing makes the kernel send SIGIO, whose
        // default action ends the process: it is ignored (nothing here uses it).
        _ = signal(SIGIO, SIG_IGN)
        if fcntl(fd, setLease, Int32(F_RDLCK)) == 0 {
            _ = fcntl(fd, setLease, Int32(F_UNLCK))
            return false
        }
        return errno == EAGAIN
        #else
        return false
        #endif
    }

    /// Whether `file` was written in the last `seconds` and another process still has it open for writing: the cheap
    /// question a folder scan asks of every entry (one stat; the lease only for a recent file), so a file being
    /// written in place is neither claimed nor read until its writer closes it.
    public static func isRecentlyWrittenAndOpen(_ file: URL, seconds: Double = 10) -> Bool {
        // Anything but a regular file takes no lease (a link is not followed): `isBeingWritten` says false for it.
        guard let identity = FileIdentity.of(file), Date().timeIntervalSince1970 - Double(identity.modifiedSeconds) < seconds else { return false }
        return isBeingWritten(file)
    }

    /// Overwrites the lines of `file` that `matches` picks with spaces, in place: the same file keeps the same length,
    /// so the other lines keep their numbers and offsets, a process appending to it loses nothing, and a file renamed
    /// to its name meanwhile is not touched (nothing is renamed: the lines are read and written through one
    /// descriptor). A line is one ending in a newline (its `\r` kept), and the last line without one only when no
    /// other process has the file open for writing (a writer may be in the middle of it). Returns how many lines it
    /// blanked; a file that is gone, a link or not a regular file is left (0).
    @discardableResult
    public static func blankLinesInPlace(_ file: URL, where matches: (Data) -> Bool) throws(FileOpError) -> Int {
        let othersWriting = isBeingWritten(file)
        let fd = open(file.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT || errno == ELOOP { return 0 }
            throw FileOpError("open", file.path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return 0 }
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try FileHandle(fileDescriptor: fd, closeOnDealloc: false).readToEnd() ?? Data())
        } catch {
            throw FileOpError("read", file.path, reason: (error as NSError).localizedDescription)
        }
        var blanks: [Range<Int>] = []
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            let terminated = end < bytes.count
            let last = end > start && bytes[end - 1] == 0x0D ? end - 1 : end
            if (terminated || !othersWriting), last > start, matches(Data(bytes[start..<last])) { blanks.append(start..<last) }
            start = end + 1
        }
        for range in blanks {
            let spaces = [UInt8](repeating: 0x20, count: range.count)
            var done = 0
            while done < spaces.count {
                let written = spaces.withUnsafeBytes { buffer in
                    pwrite(fd, buffer.baseAddress.map { $0 + done }, spaces.count - done, off_t(range.lowerBound + done))
                }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw FileOpError("write", file.path)
                }
                done += written
            }
        }
        if !blanks.isEmpty, fsync(fd) != 0 { throw FileOpError("sync", file.path) }
        return blanks.count
    }

    /// `isBeingWritten` for a file by name (false when it cannot be opened).
    public static func isBeingWritten(_ file: URL) -> Bool {
        let fd = open(file.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return isBeingWritten(fd)
    }

    /// `readRegularFile`, with the identity of the file that was read (from the open descriptor). With
    /// `waitingForWriters`, a file another process still has open for writing is not read (`beingWritten`).
    public static func readRegularFileAndIdentity(_ file: URL, limit: Int, waitingForWriters: Bool = false) throws(UploadReadError) -> (data: Data, identity: FileIdentity) {
        let fd = open(file.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ELOOP { throw .notRegular("is a symbolic link") }
            throw .io(FileOpError("open", file.path))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io(FileOpError("stat", file.path)) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notRegular("is not a regular file") }
        if waitingForWriters, isBeingWritten(fd) { throw .beingWritten }
        let size = Int(info.st_size)
        guard size <= limit else { throw .tooLarge(size) }
        var data = Data(count: size)
        let read: Int = data.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.read(fd, base + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return -1
                }
                if n == 0 { break }
                offset += n
            }
            return offset
        }
        guard read >= 0 else { throw .io(FileOpError("read", file.path)) }
        if read < size { data.removeSubrange(read..<size) }
        return (data, FileIdentity(info))
    }

    /// Who writes a temp file: machine and process id (`{machine}~{pid}`, `ProcessIdentity`), so a sweep can tell a
    /// dead writer's file from one another daemon is writing right now.
    static var tempOwner: String { "\(ProcessIdentity.machine)~\(getpid())" }

    /// Deletes temp files a crash left behind under `folder` (recursively): those written on this host by a process
    /// that no longer runs, and any last written more than `olderThan` seconds ago (a writer on another host that
    /// died; shared folders are seen by several hosts).
    public static func removeOrphanTemps(under folder: URL, olderThan seconds: Double = 0) -> Int {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return 0 }
        var removed = 0
        let cutoff = Date().timeIntervalSince1970 - seconds
        for case let file as URL in enumerator {
            let name = file.lastPathComponent
            guard let marker = name.range(of: tempMarker) else { continue }
            let owner = name[marker.upperBound...].split(separator: "~")
            var orphan = false
            if owner.count == 3, let pid = Int32(owner[1]) {
                orphan = ProcessIdentity.isDead(machine: String(owner[0]), pid: pid)
            }
            if !orphan {
                var info = stat()
                orphan = lstat(file.path, &info) == 0 && Double(info.st_mtim.tv_sec) <= cutoff
            }
            if orphan, unlink(file.path) == 0 { removed += 1 }
        }
        return removed
    }
}

/// Why an upload could not be read.
public enum UploadReadError: Error, Sendable {
    case notRegular(String)
    case tooLarge(Int)
    case io(FileOpError)
    /// Another process has the file open for writing (written in place instead of renamed in): read it once it is
    /// closed.
    case beingWritten
}

/// Which file a name pointed at, and what it held then: device, inode, size and modification time. A name whose
/// identity changed was replaced (renamed over) or written to since.
public struct FileIdentity: Sendable, Equatable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var modifiedSeconds: Int
    public var modifiedNanoseconds: Int

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Darwin)
        modifiedSeconds = Int(info.st_mtimespec.tv_sec)
        modifiedNanoseconds = Int(info.st_mtimespec.tv_nsec)
        #else
        modifiedSeconds = Int(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
        #endif
    }

    /// The identity of what `file` names now (not following a link); nil when nothing is there.
    public static func of(_ file: URL) -> FileIdentity? {
        var info = stat()
        guard lstat(file.path, &info) == 0 else { return nil }
        return FileIdentity(info)
    }
}
