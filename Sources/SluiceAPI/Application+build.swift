import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Prometheus
import SluiceCore
import SluiceDaemon
import SluiceImaging
import SluiceStore
import SluiceText

/// Everything the routes use, assembled once.
public struct APIServices: Sendable {
    public let config: PipelineConfig
    public let store: StatusStore
    public let filter: ProfanityFilter
    public let priority: any PriorityEngine
    public let captions: Result<any CaptionProvider, CaptionUnavailableReason>
    public let processor: any ImageProcessor
    public let pool: CPUPool
    /// This process's metrics (HTTP requests; provider calls when swift-metrics is bootstrapped with it).
    public let metrics: PrometheusCollectorRegistry

    public init(config: PipelineConfig, store: StatusStore, filter: ProfanityFilter, priority: any PriorityEngine,
                captions: Result<any CaptionProvider, CaptionUnavailableReason>, processor: any ImageProcessor, pool: CPUPool,
                metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.config = config
        self.store = store
        self.filter = filter
        self.priority = priority
        self.captions = captions
        self.processor = processor
        self.pool = pool
        self.metrics = metrics
    }

    /// Loads the store, wordlists, priority engine, caption provider and image processor the config names.
    public static func load(config: PipelineConfig, environment: [String: String], logger: Logger,
                            metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) throws -> APIServices {
        let store = try StatusStore(path: config.store.path)
        let filter = try ProfanityFilter.load(config.text)
        let priority = try ImageDaemon.priorityEngine(config: config, environment: environment, logger: logger)
        let processor = try VipsImageProcessor(maxPixels: config.limits.maxPixels, failOn: config.limits.failOn,
                                               maxMetadataBytes: config.limits.maxMetadataBytes)
        return APIServices(config: config, store: store, filter: filter, priority: priority,
                           captions: ImageDaemon.captionProvider(config: config.caption, environment: environment, logger: logger),
                           processor: processor, pool: CPUPool(threads: config.concurrency.effectiveCPU), metrics: metrics)
    }
}

/// Builds the HTTP application; tests call this directly with in-memory config and services.
public func buildApplication(services: APIServices, environment: [String: String], port: Int? = nil,
                             now: @escaping @Sendable () -> Date = Date.init,
                             logger: Logger = Logger(label: "sluice.api")) -> some ApplicationProtocol {
    let router = buildRouter(services: services, environment: environment, now: now)
    return Application(router: router,
                       server: .http1(configuration: .init(additionalChannelHandlers: [ProtocolErrorEnvelopeHandler()])),
                       configuration: .init(address: .hostname(services.config.api.host, port: port ?? services.config.api.port),
                                            serverName: "sluice"),
                       logger: logger)
}

/// Every route: method, path and handler, registered from this one list.
func routeList(_ routes: Routes) -> [(method: HTTPRequest.Method, path: String, handler: @Sendable (Request, APIContext) async throws -> Response)] {
    [
        (.get, "/healthz", routes.health),
        (.get, "/metrics", routes.metricsText),
        (.get, "/v1/items/:id", routes.textItem),
        (.get, "/v1/items/:id/:imageId", routes.imageItem),
        (.get, "/v1/images/:folder/:userId/:file", routes.image),
        (.post, "/v1/uploads/:userId", routes.upload),
        (.post, "/v1/functions/:name", routes.callable),
        (.post, "/:projectId/:region/:name", routes.callable),
        (.post, "/api/generateCaption", routes.generateCaption),
    ]
}

public func buildRouter(services: APIServices, environment: [String: String],
                        now: @escaping @Sendable () -> Date = Date.init) -> Router<APIContext> {
    let tokens = Set((environment[services.config.api.appTokensEnv] ?? "").split(separator: ",")
        .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    let secret = environment[services.config.api.jwtSecretEnv].flatMap { $0.isEmpty ? nil : Data($0.utf8) }
    let routes = Routes(services: services, now: now, health: HealthProbe(config: services.config))
    let list = routeList(routes)
    let table = RouteTable(entries: list.map { .init(method: $0.method, path: $0.path) })
    let router = Router(context: APIContext.self)
    router.add(middleware: RequestMetricsMiddleware(registry: services.metrics))
    router.add(middleware: ErrorEnvelopeMiddleware(routes: table))
    router.add(middleware: AuthMiddleware(appTokens: tokens, jwtSecret: secret, trustForwardedFor: services.config.api.trustForwardedFor,
                                          now: now))
    for route in list {
        let handler = route.handler
        router.on(RouterPath(route.path), method: route.method) { request, context in try await handler(request, context) }
    }
    return router
}
