import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SluiceCore

/// Builds the HTTP application; tests call this directly with in-memory config and services.
public func buildApplication(services: APIServices, environment: [String: String], port: Int? = nil,
                             now: @escaping @Sendable () -> Date = Date.init,
                             logger: Logger = Logger(label: "sluice.api")) -> some ApplicationProtocol {
    // Rate-limit windows live in this process's memory and are exchanged with the store in the background.
    let ledger = RateLimitLedger(services: services, now: now)
    let router = buildRouter(services: services, environment: environment, now: now, rateLimits: ledger)
    return Application(responder: HeadAsGetResponder(base: router.buildResponder()),
                       server: .http1(configuration: .init(additionalChannelHandlers: [ProtocolErrorEnvelopeHandler()])),
                       configuration: .init(address: .hostname(services.config.api.host, port: port ?? services.config.api.port),
                                            serverName: "sluice"),
                       services: [ledger],
                       logger: logger)
}

/// The routes, grouped by concern: items, files, uploads, callables, captions, health and metrics.
func routeCollections(services: APIServices, now: @escaping @Sendable () -> Date, rateLimits: RateLimitLedger) -> [RouteCollection<APIContext>] {
    let limits = RateLimits(ledger: rateLimits, config: services.config.limits.rate, now: now)
    let metrics = MetricsRoutes(services: services, now: now)
    let health = HealthRoutes(services: services, probe: HealthProbe(targets: services.providers), metrics: metrics, now: now)
    return [
        health.collection(),
        metrics.collection(),
        ItemRoutes(services: services, now: now).collection(),
        FileRoutes(services: services).collection(),
        UploadRoutes(services: services, limits: limits).collection(),
        CallableRoutes(services: services, limits: limits, health: health, now: now).collection(),
        CaptionRoutes(services: services, limits: limits, now: now).collection(),
        ReportRoutes(services: services, now: now).collection(),
        BankRoutes(services: services).collection(),
        RelationRoutes(services: services, now: now).collection(),
    ]
}

public func buildRouter(services: APIServices, environment: [String: String],
                        now: @escaping @Sendable () -> Date = Date.init) -> Router<APIContext> {
    buildRouter(services: services, environment: environment, now: now, rateLimits: RateLimitLedger(services: services, now: now))
}

func buildRouter(services: APIServices, environment: [String: String], now: @escaping @Sendable () -> Date,
                 rateLimits: RateLimitLedger) -> Router<APIContext> {
    let tokens = Set((environment[services.config.api.appTokensEnv] ?? "").split(separator: ",")
        .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    let secret = environment[services.config.api.jwtSecretEnv].flatMap { $0.isEmpty ? nil : Data($0.utf8) }
    let collections = routeCollections(services: services, now: now, rateLimits: rateLimits)
    // What is registered, so a known path with the wrong method can answer 405 with `Allow`.
    let registered = Router(context: APIContext.self)
    for collection in collections { registered.addRoutes(collection) }
    let table = RouteTable(entries: registered.routes.map { .init(method: $0.method, path: $0.path.description) })

    let router = Router(context: APIContext.self)
    router.add(middleware: RequestMetricsMiddleware(registry: services.metrics))
    router.add(middleware: ErrorEnvelopeMiddleware(routes: table))
    let users = UserTokenVerifier(secret: secret, config: services.config.api.auth, now: now)
    router.add(middleware: AuthMiddleware(appTokens: tokens, users: users, trustForwardedFor: services.config.api.trustForwardedFor))
    for collection in collections { router.addRoutes(collection) }
    do {
        let pages = try ConsolePages.load()
        ConsoleRoutes(services: services, pages: pages, accounts: ReviewerAccounts(store: services.store), now: now).add(to: router)
    } catch {
        let message = "the review console cannot start: \(error)"
        router.get("/console/**", use: { _, _ in ConsolePages.plainError(.serviceUnavailable, message) })
    }
    return router
}
