import Hummingbird
import Prometheus

/// `sluice_http_requests_total{route,method,status}` and `sluice_http_request_duration_seconds{route}`, labelled
/// by the matched route pattern (never the raw path, so ids do not explode the label set).
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let registry: PrometheusCollectorRegistry
    static var buckets: [Duration] {
        [.microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
         .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5)]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        var status = 500
        defer {
            let route = context.endpointPath ?? "unmatched"
            registry.makeCounter(descriptor: .init(metricName: "sluice_http_requests_total", helpText: "HTTP requests by route, method and status"),
                                 labels: [("route", route), ("method", request.method.rawValue), ("status", "\(status)")]).increment()
            registry.makeDurationHistogram(descriptor: .init(metricName: "sluice_http_request_duration_seconds",
                                                             helpText: "HTTP request latency by route"),
                                           labels: [("route", route)], buckets: Self.buckets).record(ContinuousClock.now - started)
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
