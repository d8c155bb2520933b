#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Progress on stderr: a live bar with counts, rate and ETA on a terminal; a plain line every few seconds
/// otherwise (logs, CI).
final class ProgressRenderer: Sendable {
    private struct State {
        var lastDraw = 0.0
        var lastDone = 0
    }

    private let label: String
    private let interactive: Bool
    private let started = Date()
    private let state = Mutex(State())

    init(label: String) {
        self.label = label
        interactive = isatty(STDERR_FILENO) == 1
    }

    func update(done: Int, total: Int) {
        let now = Date().timeIntervalSince(started)
        let line: String? = state.withLock { state in
            let interval = interactive ? 0.1 : 5
            guard now - state.lastDraw >= interval || done == total else { return nil }
            state.lastDraw = now
            state.lastDone = done
            let rate = now > 0 ? Double(done) / now : 0
            let remaining = rate > 0 ? Double(total - done) / rate : 0
            let percent = total > 0 ? Double(done) / Double(total) * 100 : 100
            let counts = "\(done)/\(total) \(String(format: "%.0f", percent))% \(String(format: "%.1f", rate))/s ETA \(Self.duration(remaining))"
            if interactive {
                let width = 30
                let filled = total > 0 ? min(width, width * done / total) : width
                return "\r\(label) [\(String(repeating: "█", count: filled))\(String(repeating: "░", count: width - filled))] \(counts)\u{1B}[K"
            }
            return "\(label): \(counts)\n"
        }
        if let line { FileHandle.standardError.write(Data(line.utf8)) }
    }

    func finish() {
        if interactive { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    static func duration(_ seconds: Double) -> String {
        let value = Int(seconds.rounded())
        return value >= 3600 ? "\(value / 3600)h\(value % 3600 / 60)m" : value >= 60 ? "\(value / 60)m\(value % 60)s" : "\(value)s"
    }
}
