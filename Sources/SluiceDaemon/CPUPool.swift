import NIOPosix

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

    public func shutdown() async {
        try? await pool.shutdownGracefully()
    }
}
