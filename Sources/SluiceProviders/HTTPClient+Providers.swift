import AsyncHTTPClient
import Logging

extension HTTPClient {
    /// The client every provider adapter shares: `HTTPClient.shared`'s settings with a connection pool of
    /// `providerConnectionsPerHost` per host. The shared client's pool keeps 8 connections per host, which capped a
    /// 200 ms vision provider at 40 calls/s whatever `vision.maxInFlight` allowed; each adapter's in-flight limit
    /// (`maxInFlight`) is what bounds the calls, not the pool. Made once for the process and never shut down, like
    /// `.shared`.
    public static let providers: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.connectionPool = .init(idleTimeout: .seconds(600), concurrentHTTP1ConnectionsPerHostSoftLimit: providerConnectionsPerHost)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration,
                          backgroundActivityLogger: Logger(label: "sluice.http", factory: { _ in SwiftLogNoOpLogHandler() }))
    }()

    /// Connections per provider host (a `maxInFlight` above it waits for a free connection).
    public static let providerConnectionsPerHost = 64
}
