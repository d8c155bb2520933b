import Foundation
import SluiceCore
@testable import SluiceProviders
import SluiceTesting
import Testing

@Suite struct RetryStateTests {
    let policy = RetryState.Policy(maxAttempts: 4, initialBackoff: 1, maxBackoff: 8)
    let serverError = ProviderError(kind: .http, message: "HTTP 500", status: 500)

    @Test func backoffGrowsExponentiallyWithJitterAndCaps() {
        var state = RetryState(policy: policy)
        var delays: [(Double, Double)] = []
        for _ in 1...3 {
            state.beginAttempt()
            guard case let .retry(low) = state.decide(after: serverError, unitRandom: 0),
                  case let .retry(high) = state.decide(after: serverError, unitRandom: 0.999_999)
            else { Issue.record("expected a retry"); return }
            delays.append((low, high))
        }
        #expect(delays.map(\.0) == [0.5, 1, 2])
        #expect(delays.map { ($0.1 * 1000).rounded() / 1000 } == [1, 2, 4])
        state.beginAttempt()
        #expect(state.decide(after: serverError, unitRandom: 0.5) == .giveUp(reason: "gave up after 4 attempts"))
    }

    @Test func capAppliesToLongBackoffs() {
        var state = RetryState(policy: RetryState.Policy(maxAttempts: 10, initialBackoff: 1, maxBackoff: 3))
        for _ in 1...6 { state.beginAttempt() }
        #expect(state.decide(after: serverError, unitRandom: 0.999_999) == .retry(afterSeconds: 3 * 0.5 + 3 * 0.5 * 0.999_999))
    }

    @Test func retryAfterIsHonouredAndBounded() {
        var state = RetryState(policy: policy)
        state.beginAttempt()
        let limited = ProviderError(kind: .http, message: "429", status: 429, retryAfter: 5)
        #expect(state.decide(after: limited, unitRandom: 0) == .retry(afterSeconds: 5))
        let tooLong = ProviderError(kind: .http, message: "429", status: 429, retryAfter: 120)
        #expect(state.decide(after: tooLong, unitRandom: 0) == .giveUp(reason: "provider asked to retry after 120 s, beyond the 8 s limit"))
    }

    @Test(arguments: [
        (ProviderError(kind: .http, message: "", status: 400), false),
        (ProviderError(kind: .http, message: "", status: 404), false),
        (ProviderError(kind: .http, message: "", status: 429), true),
        (ProviderError(kind: .http, message: "", status: 503), true),
        (ProviderError(kind: .timeout, message: ""), true),
        (ProviderError(kind: .connection, message: ""), true),
        (ProviderError(kind: .malformedResponse, message: ""), false),
        (ProviderError(kind: .imageError, message: ""), false),
    ])
    func whatIsRetried(error: ProviderError, retried: Bool) {
        var state = RetryState(policy: policy)
        state.beginAttempt()
        if case .retry = state.decide(after: error, unitRandom: 0.5) {
            #expect(retried)
        } else {
            #expect(!retried)
        }
    }

    @Test func retryAfterParsesSecondsAndDates() {
        #expect(ProviderHTTP.parseRetryAfter("7") == 7)
        #expect(ProviderHTTP.parseRetryAfter("soon") == nil)
        let future = Date().addingTimeInterval(30)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let parsed = ProviderHTTP.parseRetryAfter(formatter.string(from: future)) ?? -1
        #expect(parsed > 25 && parsed <= 30)
    }
}
