#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import SluiceCore
import Synchronization

/// Signals "something changed under pending/" from inotify (Linux), watching pending/ and every user folder.
/// Signals coalesce: consumers rescan on each one. A periodic rescan elsewhere covers queue overflows.
public final class DropFolderWatcher: Sendable {
    private let pending: URL
    private let extraFolders: [URL]
    private let stopped = Mutex(false)
    private let logger: Logger

    /// Watches pending/ and its user folders, plus `extraFolders` (e.g. queues/text) without recursion.
    public init(pending: URL, extraFolders: [URL] = [], logger: Logger) {
        self.pending = pending
        self.extraFolders = extraFolders
        self.logger = logger
    }

    /// Starts a watcher thread; the stream ends (and the thread exits) when the consumer goes away.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        #if os(Linux)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
            logger.warning("inotify unavailable; relying on periodic rescans", metadata: ["errno": "\(errno)"])
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.stopped.withLock { $0 = true } }
        // The first watches are in place before this returns: the caller's first scan comes after it, so a file
        // that lands between that scan and the watcher thread's start still raises an event.
        let watches = Self.initialWatches(fd: fd, pending: self.pending, extraFolders: self.extraFolders)
        let pending = pending
        let logger = logger
        let thread = Thread { [self] in
            self.watchLoop(fd: fd, watches: watches, pending: pending, continuation: continuation, logger: logger)
            close(fd)
        }
        thread.name = "sluice-inotify"
        thread.start()
        #endif
        return stream
    }

    #if os(Linux)
    private static let folderMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    /// Watches pending/, the extra folders and every user folder already in pending/; watch descriptor → path.
    private static func initialWatches(fd: Int32, pending: URL, extraFolders: [URL]) -> [Int32: String] {
        var watches: [Int32: String] = [:]
        addWatch(fd: fd, pending.path, to: &watches)
        for folder in extraFolders { addWatch(fd: fd, folder.path, to: &watches) }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: pending.path)) ?? [] {
            let path = pending.appendingPathComponent(name).path
            if FileType(at: URL(fileURLWithPath: path)) == .directory { addWatch(fd: fd, path, to: &watches) }
        }
        return watches
    }

    /// Watches the folder at `path`; a watch that cannot be added is left out (the periodic rescan covers it).
    private static func addWatch(fd: Int32, _ path: String, to watches: inout [Int32: String]) {
        let wd = inotify_add_watch(fd, path, folderMask)
        if wd >= 0 { watches[wd] = path }
    }

    private func watchLoop(fd: Int32, watches initial: [Int32: String], pending: URL, continuation: AsyncStream<Void>.Continuation,
                           logger: Logger) {
        var watches = initial
        let bufferSize = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
        defer { buffer.deallocate() }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while !stopped.withLock({ $0 }) {
            let ready = poll(&poller, 1, 250)
            if ready <= 0 { continue }
            let count = read(fd, buffer, bufferSize)
            if count <= 0 { continue }
            var offset = 0
            var changed = false
            while offset + MemoryLayout<inotify_event>.size <= count {
                let wd = buffer.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                let mask = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                let nameStart = offset + MemoryLayout<inotify_event>.size
                var name = ""
                if length > 0, nameStart + length <= count {
                    let bytes = UnsafeRawBufferPointer(start: buffer + nameStart, count: length)
                    name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                }
                if mask & UInt32(IN_Q_OVERFLOW) != 0 { changed = true }
                if let folder = watches[wd], mask & UInt32(IN_ISDIR) != 0, mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0,
                   folder == pending.path, !name.isEmpty {
                    Self.addWatch(fd: fd, pending.appendingPathComponent(name).path, to: &watches)
                }
                if mask & UInt32(IN_IGNORED) != 0 { watches[wd] = nil }
                if !name.isEmpty, !PendingUpload.isInProgress(name) { changed = true }
                if mask & UInt32(IN_ISDIR) != 0 { changed = true }
                offset = nameStart + length
            }
            if changed { continuation.yield(()) }
        }
        continuation.finish()
        logger.debug("inotify watcher stopped")
    }
    #endif
}
