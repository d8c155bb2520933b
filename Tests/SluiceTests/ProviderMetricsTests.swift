import Foundation
import Logging
import SluiceCore
import SluiceProviders
import SluiceTesting
import SluiceText
import MetricsTestKit
import Testing

@Suite struct ProviderMetricsTests {
    @Test func circuitStateAndCallsAreVisibleInMetrics() async throws {
        let metrics = TestMetrics()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let caller = ResilientCaller(provider: "fake", retry: RetryState.Policy(maxAttempts: 2, initialBackoff: 0, maxBackoff: 0),
                                     breaker: CircuitBreaker.Policy(failureThreshold: 2, openSeconds: 60), maxInFlight: 1,
                                     logger: logger, metrics: metrics)
        for _ in 0..<3 {
            _ = try? await caller.call { () async throws(ProviderError) -> Int in
                throw ProviderError(kind: .http, message: "HTTP 503", status: 503)
            }
        }
        let gauge = try metrics.expectGauge("sluice_provider_circuit_state", [("provider", "fake")])
        #expect(gauge.values == [0, 2], "closed, then open")
        #expect(try metrics.expectCounter("sluice_provider_calls_total", [("provider", "fake"), ("outcome", "failure")]).totalValue == 2)
        #expect(try metrics.expectCounter("sluice_provider_calls_total", [("provider", "fake"), ("outcome", "rejected")]).totalValue == 1)
        #expect(try metrics.expectCounter("sluice_provider_retries_total", [("provider", "fake")]).totalValue == 2)
    }
}
