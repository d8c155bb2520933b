#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Test files are written through a descriptor opened with `O_CLOEXEC`.
///
/// Foundation's `Data.write(to:)` and `FileManager.copyItem` open without it, and `Process` (which the suites use to run
/// `sluice`) closes in the child only the descriptors that were open when it looked, just before spawning. A file
/// another test wrote at that moment could stay open for writing in that child for as long as it ran, and the daemon
/// under test takes such a file for one its writer has not finished (an upload or a queue file is left for the next
/// scan): CI once lost an upload of `run --once` that way.
public extension Data {
    func writeClosingOnExec(to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ChildSafeWriteError(operation: "open", path: url.path, code: errno) }
        defer { close(fd) }
        try withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(fd, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw ChildSafeWriteError(operation: "write", path: url.path, code: errno)
                }
                offset += written
            }
        }
    }
}

public extension FileManager {
    /// `copyItem` for a regular file, through `Data.writeClosingOnExec`.
    func copyClosingOnExec(at source: URL, to destination: URL) throws {
        guard !fileExists(atPath: destination.path) else {
            throw ChildSafeWriteError(operation: "copy (destination exists)", path: destination.path, code: EEXIST)
        }
        try Data(contentsOf: source).writeClosingOnExec(to: destination)
    }
}

public extension FileHandle {
    /// A new empty file held open for writing (a writer still at work), through a descriptor opened with `O_CLOEXEC`.
    static func creatingClosingOnExec(_ url: URL) throws -> FileHandle {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ChildSafeWriteError(operation: "open", path: url.path, code: errno) }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }
}

public struct ChildSafeWriteError: Error, CustomStringConvertible {
    public let operation: String
    public let path: String
    public let code: Int32
    public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}
