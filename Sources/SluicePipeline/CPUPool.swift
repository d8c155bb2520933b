import NIOPosix
import SluiceCore

/// A fixed set of threads for CPU-bound libvips work, so decodes never pile up on the async executor.
public struct CPUPool: Sendable {
    private let pool: NIOThreadPool

    public init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }

    /// Runs imaging work on the pool; the pool itself failing (shut down) is `nil`.
    public func imaging<T: Sendable>(_ body: @escaping @Sendable () throws(ImagingError) -> T) async -> Result<T, ImagingError>? {
        try? await run { () -> Result<T, ImagingError> in
            do throws(ImagingError) { return .success(try body()) } catch { return .failure(error) }
        }
    }

    /// Why a stage could not run its imaging work.
    public static let unavailable = "image worker pool unavailable"

    public func shutdown() async {
        try? await pool.shutdownGracefully()
    }
}
