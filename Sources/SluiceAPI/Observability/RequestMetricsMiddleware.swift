import Hummingbird
import Prometheus
import Synchronization

/// `sluice_http_requests_total{route,method,status}` and `sluice_http_request_duration_seconds{route}`, labelled
/// by the matched route pattern (never the raw path, so ids do not explode the label set).
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let handles: RequestMetricHandles

    init(registry: PrometheusCollectorRegistry) {
        handles = RequestMetricHandles(registry: registry)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        var status = 500
        defer {
            let (counter, histogram) = handles.metrics(route: context.endpointPath ?? "unmatched", method: request.method, status: status)
            counter.increment()
            histogram.record(ContinuousClock.now - started)
        }
        do {
            let response = try await next(request, context)
            status = response.status.code
            return response
        } catch let error as any HTTPResponseError {
            status = error.status.code
            throw error
        }
    }
}

/// The registry's counter and histogram of each route, method and status, kept once made: the registry finds a
/// metric by name and sorted labels under its lock, which every request paid before (~2% of a `validate_text`).
final class RequestMetricHandles: Sendable {
    struct Key: Hashable {
        var route: String
        var method: HTTPRequest.Method
        var status: Int
    }

    static var buckets: [Duration] {
        [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
         .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5)]
    }

    private let registry: PrometheusCollectorRegistry
    private let made = Mutex<[Key: (Counter, DurationHistogram)]>([:])

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func metrics(route: String, method: HTTPRequest.Method, status: Int) -> (Counter, DurationHistogram) {
        let key = Key(route: route, method: method, status: status)
        if let found = made.withLock({ $0[key] }) { return found }
        let counter = registry.makeCounter(descriptor: .init(metricName: "sluice_http_requests_total", helpText: "HTTP requests by route, method and status"),
                                           labels: [("route", route), ("method", method.rawValue), ("status", "\(status)")])
        let histogram = registry.makeDurationHistogram(descriptor: .init(metricName: "sluice_http_request_duration_seconds",
                                                                         helpText: "HTTP request latency by route"),
                                                       labels: [("route", route)], buckets: Self.buckets)
        made.withLock { $0[key] = (counter, histogram) }
        return (counter, histogram)
    }
}
