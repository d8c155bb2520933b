import Hummingbird

/// Starts a Hummingbird router on a free loopback port; returns the port and the task running it.
enum LoopbackServer {
    static func start(_ router: Router<BasicRequestContext>, name: String) async -> (port: Int, task: Task<Void, any Error>) {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(router: router,
                              configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: name),
                              onServerRunning: { channel in
                                  continuation.yield(channel.localAddress?.port ?? 0)
                                  continuation.finish()
                              })
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var port = 0
        for await value in ports { port = value }
        return (port, task)
    }
}
