import Hummingbird
import NIOCore
import ServiceLifecycle

/// Starts a Hummingbird router on a free loopback port.
enum LoopbackServer {
    /// A server that is running, and how to stop it.
    struct Running: Sendable {
        let port: Int
        let group: ServiceGroup

        /// Shuts the server down gracefully: it stops accepting, finishes the requests it has and closes. Cancelling
        /// the task that runs it instead can trap in NIO ("Deinited NIOAsyncWriter without calling finish()",
        /// apple/swift-nio#2813) when a connection was accepted but not yet handed to the server: it stopped a whole
        /// `swift test` run once, in a clean-clone `.ci/run`.
        func stop() {
            let group = group
            Task { await group.triggerGracefulShutdown() }
        }
    }

    /// `bytes` as a response body that drips: the first byte at once (with the head), then one every `seconds`.
    static func dripping(_ bytes: [UInt8], every seconds: Double) -> ResponseBody {
        ResponseBody { writer in
            for (index, byte) in bytes.enumerated() {
                if index > 0 { try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000)) }
                try await writer.write(ByteBuffer(bytes: [byte]))
            }
            try await writer.finish(nil)
        }
    }

    static func start(_ router: Router<BasicRequestContext>, name: String) async -> Running {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(router: router,
                              configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: name),
                              onServerRunning: { channel in
                                  continuation.yield(channel.localAddress?.port ?? 0)
                                  continuation.finish()
                              })
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: app.logger))
        Task { try await group.run() }
        var port = 0
        for await value in ports { port = value }
        return Running(port: port, group: group)
    }
}
