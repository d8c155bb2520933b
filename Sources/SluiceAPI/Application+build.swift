import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SluiceCore
import SluiceDaemon
import SluiceStore
import SluiceText

/// Everything the routes use, assembled once.
public struct APIServices: Sendable {
    public let config: PipelineConfig
    public let store: StatusStore
    public let filter: ProfanityFilter
    public let priority: any PriorityEngine

    public init(config: PipelineConfig, store: StatusStore, filter: ProfanityFilter, priority: any PriorityEngine) {
        self.config = config
        self.store = store
        self.filter = filter
        self.priority = priority
    }

    /// Loads the store, wordlists and priority engine the config names.
    public static func load(config: PipelineConfig, environment: [String: String], logger: Logger) throws -> APIServices {
        let store = try StatusStore(path: config.store.path)
        let filter = try ProfanityFilter.load(config.text)
        let priority = try ImageDaemon.priorityEngine(config: config, environment: environment, logger: logger)
        return APIServices(config: config, store: store, filter: filter, priority: priority)
    }
}

/// Builds the HTTP application; tests call this directly with in-memory config and services.
public func buildApplication(services: APIServices, environment: [String: String], port: Int? = nil,
                             now: @escaping @Sendable () -> Date = Date.init,
                             logger: Logger = Logger(label: "sluice.api")) -> some ApplicationProtocol {
    let router = buildRouter(services: services, environment: environment, now: now)
    return Application(router: router,
                       configuration: .init(address: .hostname(services.config.api.host, port: port ?? services.config.api.port),
                                            serverName: "sluice"),
                       logger: logger)
}

public func buildRouter(services: APIServices, environment: [String: String],
                        now: @escaping @Sendable () -> Date = Date.init) -> Router<APIContext> {
    let tokens = Set((environment[services.config.api.appTokensEnv] ?? "").split(separator: ",")
        .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    let secret = environment[services.config.api.jwtSecretEnv].flatMap { $0.isEmpty ? nil : Data($0.utf8) }
    let router = Router(context: APIContext.self)
    router.add(middleware: ErrorEnvelopeMiddleware())
    router.add(middleware: AuthMiddleware(appTokens: tokens, jwtSecret: secret, now: now))
    let routes = Routes(services: services, now: now)
    router.get("/healthz", use: routes.health)
    router.get("/v1/items/:id", use: routes.textItem)
    router.get("/v1/items/:id/:imageId", use: routes.imageItem)
    router.get("/v1/images/:folder/:userId/:file", use: routes.image)
    router.post("/v1/uploads/:userId", use: routes.upload)
    router.post("/v1/functions/:name", use: routes.callable)
    router.post("/:project/:region/:name", use: routes.callable)
    return router
}
