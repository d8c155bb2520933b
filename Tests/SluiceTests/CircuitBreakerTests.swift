import Foundation
import Logging
import SluiceCore
import SluiceProviders
import SluiceTesting
import SluiceText
import MetricsTestKit
import Testing

@Suite struct CircuitBreakerTests {
    let policy = CircuitBreaker.Policy(failureThreshold: 3, openSeconds: 10)

    @Test func opensAfterConsecutiveFailuresAndProbesAfterTheWait() {
        var breaker = CircuitBreaker(policy: policy)
        #expect(breaker.admit(now: 0) == .allowed)
        breaker.recordFailure(now: 0)
        breaker.recordFailure(now: 1)
        #expect(breaker.state == .closed(consecutiveFailures: 2))
        breaker.recordSuccess()
        #expect(breaker.state == .closed(consecutiveFailures: 0), "a success resets the count")
        for second in 2...4 { breaker.recordFailure(now: Double(second)) }
        #expect(breaker.state == .open(until: 14))
        #expect(breaker.admit(now: 10) == .rejected(retryInSeconds: 4))
        #expect(breaker.admit(now: 14) == .probe)
        #expect(breaker.state.name == "half-open")
        #expect(breaker.admit(now: 14.5) == .rejected(retryInSeconds: 0), "only one probe at a time")
        breaker.recordSuccess()
        #expect(breaker.state == .closed(consecutiveFailures: 0))
    }

    @Test func failedProbeReopens() {
        var breaker = CircuitBreaker(policy: policy)
        for _ in 0..<3 { breaker.recordFailure(now: 0) }
        #expect(breaker.admit(now: 10) == .probe)
        breaker.recordFailure(now: 10)
        #expect(breaker.state == .open(until: 20))
        #expect(breaker.admit(now: 19) == .rejected(retryInSeconds: 1))
    }

    @Test func neutralOutcomeFreesTheProbeSlot() {
        var breaker = CircuitBreaker(policy: policy)
        for _ in 0..<3 { breaker.recordFailure(now: 0) }
        #expect(breaker.admit(now: 10) == .probe)
        breaker.recordNeutral()
        #expect(breaker.admit(now: 10) == .probe)
    }

    @Test func openCircuitFailsFastWithoutCallingTheProvider() async throws {
        let server = try await FakeJSONServer.start { _, _ in .init(status: 503, body: #"{"error":{"message":"down"}}"#) }
        defer { server.stop() }
        var vision = VisionConfig()
        vision.provider = .openAIModeration
        vision.endpoint = server.baseURL + "/v1"
        vision.apiKeyEnv = nil
        vision.maxAttempts = 1
        vision.breakerFailures = 2
        vision.breakerOpenSeconds = 60
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let provider = OpenAIModerationProvider(config: vision, environment: [:], logger: logger)
        for _ in 0..<2 { _ = try? await provider.classify(Data([0xFF, 0xD8, 0xFF])) }
        #expect(server.received.count == 2)
        do {
            _ = try await provider.classify(Data([0xFF, 0xD8, 0xFF]))
            Issue.record("no error")
        } catch {
            #expect(error.kind == .circuitOpen)
            #expect(error.description.contains("circuit is open"))
        }
        #expect(server.received.count == 2, "an open circuit sends nothing")
        #expect(await provider.caller.breaker.state.name == "open")
    }
}
