import AsyncHTTPClient
import NIOCore
import Logging

extension HTTPClient {
    /// The client every provider adapter shares: `HTTPClient.shared`'s settings with a connection pool of
    /// `providerConnectionsPerHost` per host. The shared client's pool keeps 8 connections per host, which capped a
    /// 200 ms vision provider at 40 calls/s whatever `vision.maxInFlight` allowed; each adapter's in-flight limit
    /// (`maxInFlight`) is what bounds the calls, not the pool. Made once for the process and never shut down, like
    /// `.shared`.
    ///
    /// A connection that cannot be made fails its requests at once (`retryConnectionEstablishment` off) and an attempt
    /// gives up after `providerConnectTimeout`: with the shared settings the pool kept re-dialling a refused port until
    /// each request's own deadline, so a stopped provider cost every upload `maxAttempts` × `timeoutSeconds` before it
    /// was held for review (a minute for one upload with the defaults). The adapters' own retries (`ResilientCaller`,
    /// with backoff and the circuit breaker) decide what happens next.
    ///
    /// No read timeout: each request carries its own deadline (the adapter's `timeoutSeconds`, up to 600 s for a vision,
    /// caption or thread LLM and 120 s for a webhook), and the shared settings' 90 s between two reads would have cut a
    /// slow local LLM (or a webhook receiver given 120 s) short with "read timeout" before its configured time.
    ///
    /// Redirects are not followed: an answer of 3xx is an error naming where it pointed. Followed, a redirect to another
    /// host would have resent the image or the signed webhook body there, with the API key headers that are not
    /// `Authorization` (`x-api-key`, `x-goog-api-key`).
    public static let providers: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.connectionPool = .init(idleTimeout: .seconds(600), concurrentHTTP1ConnectionsPerHostSoftLimit: providerConnectionsPerHost)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = providerConnectTimeout
        configuration.timeout.read = nil
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration,
                          backgroundActivityLogger: Logger(label: "sluice.http", factory: { _ in SwiftLogNoOpLogHandler() }))
    }()

    /// Connections per provider host (a `maxInFlight` above it waits for a free connection).
    public static let providerConnectionsPerHost = 64

    /// How long one attempt to open a connection to a provider may take (the shared settings allow 90 s).
    public static let providerConnectTimeout = TimeAmount.seconds(5)
}
