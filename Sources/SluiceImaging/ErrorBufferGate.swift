#if canImport(Glibc)
import Glibc
#endif
import SluiceCore
import Synchronization

/// A shared/exclusive gate around libvips steps: any number run at once on the shared side; a step on the
/// exclusive side runs alone, after the steps in flight finish, and new steps wait for it. Waiting is a short
/// sleep, which is fine for the only exclusive use (re-running a step that failed, which is rare).
final class ErrorBufferGate: Sendable {
    private struct State {
        var running = 0
        var exclusive = false
        var exclusiveWaiting = 0
    }

    private let state = Mutex(State())

    func shared<T>(_ body: () throws(ImagingError) -> T) throws(ImagingError) -> T {
        while !state.withLock({ state -> Bool in
            guard !state.exclusive, state.exclusiveWaiting == 0 else { return false }
            state.running += 1
            return true
        }) {
            usleep(200)
        }
        defer { state.withLock { $0.running -= 1 } }
        return try body()
    }

    func exclusive<T>(_ body: () throws(ImagingError) -> T) throws(ImagingError) -> T {
        state.withLock { $0.exclusiveWaiting += 1 }
        while !state.withLock({ state -> Bool in
            guard !state.exclusive, state.running == 0 else { return false }
            state.exclusive = true
            state.exclusiveWaiting -= 1
            return true
        }) {
            usleep(200)
        }
        defer { state.withLock { $0.exclusive = false } }
        return try body()
    }
}
