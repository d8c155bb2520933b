import Foundation
import NIOCore
import SluiceCore
@testable import SluiceProviders
import SluiceTesting
import Testing

/// Nothing is approved without a classification: every provider failure ends in review with the reason.
@Suite(.serialized) struct FailClosedTests {
    /// Each failure, and the reason the item is held with: the kind of failure, never the provider's own words (they
    /// are served to the item's owner; the provider's text is in the log).
    static let failures: [(String, FakeVisionServer.Reply, String)] = [
        ("http500", .http(status: 500, body: #"{"error":{"code":500,"message":"backend exploded"}}"#), "google-vision answered HTTP 500"),
        ("http503", .http(status: 503, body: "unavailable"), "google-vision answered HTTP 503"),
        ("http403", .http(status: 403, body: #"{"error":{"code":403,"message":"API key not valid"}}"#), "google-vision answered HTTP 403"),
        ("garbage", .http(status: 200, body: "<html>oops</html>"), "google-vision answered in an unexpected format"),
        ("wrongtypes", .http(status: 200, body: #"{"responses":[{"safeSearchAnnotation":{"adult":7}}]}"#), "google-vision answered in an unexpected format"),
        ("badlikelihood", .http(status: 200, body: #"{"responses":[{"safeSearchAnnotation":{"adult":"NOPE"}}]}"#), "google-vision answered in an unexpected format"),
        ("empty", .http(status: 200, body: #"{"responses":[{}]}"#), "google-vision answered in an unexpected format"),
        ("noresponses", .http(status: 200, body: #"{}"#), "google-vision answered in an unexpected format"),
        ("imageerror", .imageError(code: 3, message: "Bad image data."), "google-vision could not read the image"),
        ("timeout", .delayed(seconds: 6, then: .safeSearch(cleanResult)), "google-vision did not answer in time"),
        // A clean answer whose body drips for about 40 s: the timeout covers the body, so it is not waited out.
        ("slowbody", .dripped(every: 0.25, result: cleanResult), "google-vision did not answer in time"),
    ]
    static let providersOwnWords = ["backend exploded", "unavailable", "API key", "oops", "NOPE", "Bad image data", "safeSearchAnnotation"]

    @Test(arguments: failures.map(\.0))
    func providerFailureSendsToReview(name: String) async throws {
        let (_, reply, expected) = try #require(Self.failures.first { $0.0 == name })
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.start { _, _ in reply }
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "img.jpg")
        // A timeout short enough to keep the slow case quick, long enough that the others' loopback answers
        // (retried ones included) never time out on a loaded machine.
        let store = try await runOnce(root, server: server) { $0.vision.timeoutSeconds = 2 }
        let item = try #require(try await store.item("u/img"))
        #expect(item.status == .review)
        #expect(item.reason?.hasPrefix("not classified, held for review: \(expected)") == true, "\(item.reason ?? "nil")")
        #expect(!Self.providersOwnWords.contains { item.reason?.contains($0) == true }, "\(item.reason ?? "nil")")
        #expect(!root.exists("approved/u/img.jpg") && !root.exists("thumbnails/u/img.jpg"))
        #expect(root.exists("review/u/img.jpg"))
    }

    /// For health, any answer counts as soon as its head arrives: a provider that answers and then drips its body is
    /// reachable, and the probe does not wait for the body (80 s here).
    @Test func aProviderThatAnswersThenDripsIsReachable() async throws {
        let server = try await FakeJSONServer.start { _, _ in .init(status: 200, body: String(repeating: " ", count: 400), dripEvery: 0.2) }
        defer { server.stop() }
        let started = ContinuousClock.now
        #expect(await ProviderHTTP.unreachable(server.baseURL + "/v1/images:annotate", timeout: .seconds(5)) == nil)
        #expect(ContinuousClock.now - started < .seconds(40), "the body was waited for")
    }

    @Test func retryableFailuresAreRetriedThenSucceed() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.start { _, index in
            switch index {
            case 0: .http(status: 429, body: "slow down", headers: ["Retry-After": "0"])
            case 1: .http(status: 502, body: "bad gateway")
            default: .safeSearch(cleanResult)
            }
        }
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "img.jpg")
        let store = try await runOnce(root, server: server) { $0.vision.maxAttempts = 3 }
        #expect(try await store.item("u/img")?.status == .approved)
        #expect(server.received.count == 3)
    }

    @Test func nonRetryableFailureIsNotRetried() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.start { _, _ in .http(status: 400, body: "bad request") }
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "img.jpg")
        let store = try await runOnce(root, server: server) { $0.vision.maxAttempts = 4 }
        #expect(try await store.item("u/img")?.status == .review)
        #expect(server.received.count == 1)
    }

    /// Port 9 (discard) on loopback: nothing listens there, and unlike a stopped fake server's port no other test's
    /// server can be given it while this one runs (a reused port once answered "approve" here under load).
    /// A refused connection is an answer: the upload is held without waiting out the request timeout on each attempt
    /// (10 minutes here, so the time limit fails the test if it did; the four attempts' backoff takes a few seconds).
    @Test(.timeLimit(.minutes(2))) func unreachableProviderFailsClosed() async throws {
        let root = try TemporaryDataRoot()
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "img.jpg")
        let store = try await runOnce(root, endpoint: "http://127.0.0.1:9/v1") { $0.vision.timeoutSeconds = 600; $0.vision.maxAttempts = 4 }
        let item = try #require(try await store.item("u/img"))
        #expect(item.status == .review)
        #expect(item.reason == "not classified, held for review: google-vision could not be reached (after 4 attempts)", "\(item.reason ?? "")")
        #expect(root.exists("review/u/img.jpg"))
        // The whole account (for the log and reprocess's output) names the address and the system's error.
        var vision = VisionConfig()
        vision.endpoint = "http://127.0.0.1:9/v1"
        vision.apiKeyEnv = nil
        do {
            _ = try await GoogleVisionProvider(config: vision, environment: [:]).classify(Data([0xFF, 0xD8, 0xFF]))
            Issue.record("classified by nobody")
        } catch {
            #expect(error.description.contains("unreachable at http://127.0.0.1:9") && error.description.contains("Connection refused (errno 111)"),
                    "\(error.description)")
        }
    }

    /// A provider answering with a redirect is not followed (the image and the key's headers would go to another
    /// host): held for review, naming where it pointed, without a retry.
    @Test func aRedirectIsNotFollowed() async throws {
        let root = try TemporaryDataRoot()
        let elsewhere = try await FakeVisionServer.always(cleanResult)
        defer { elsewhere.stop() }
        let server = try await FakeVisionServer.start { _, _ in
            .http(status: 307, body: "", headers: ["Location": elsewhere.endpoint + "/images:annotate?key=leaked"])
        }
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "img.jpg")
        let store = try await runOnce(root, server: server)
        let item = try #require(try await store.item("u/img"))
        #expect(item.status == .review)
        #expect(item.reason == "not classified, held for review: google-vision answered HTTP 307", "\(item.reason ?? "")")
        var vision = VisionConfig()
        vision.endpoint = server.endpoint
        vision.apiKeyEnv = nil
        do {
            _ = try await GoogleVisionProvider(config: vision, environment: [:]).classify(Data([0xFF, 0xD8, 0xFF]))
            Issue.record("classified after a redirect")
        } catch {
            #expect(error.description.contains("HTTP 307: redirects are not followed (Location: \(elsewhere.endpoint)/images:annotate)"), "\(error.description)")
            #expect(!error.description.contains("leaked"))
        }
        #expect(server.received.count == 2, "a redirect is not retried: the daemon's call and the direct one")
        #expect(elsewhere.received.isEmpty)
    }

    @Test func apiKeyIsSentAsQueryAndNeverStored() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.start { _, _ in .http(status: 500, body: "key=sekrit-key-123 rejected") }
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "img.jpg")
        var config = root.config(endpoint: server.endpoint)
        config.vision.apiKeyEnv = "TEST_VISION_KEY"
        let provider = GoogleVisionProvider(config: config.vision, environment: ["TEST_VISION_KEY": "sekrit-key-123"])
        let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
        do {
            _ = try await provider.classify(jpeg)
            Issue.record("classified despite HTTP 500")
        } catch {
            #expect(!error.description.contains("sekrit"), "\(error.description)")
            #expect(error.status == 500)
        }
        #expect(server.received.first?.query == "key=sekrit-key-123")
    }

    @Test func bearerTokenIsSentAsAuthorization() async throws {
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        var vision = VisionConfig()
        vision.endpoint = server.endpoint + "/"
        vision.apiKeyEnv = nil
        vision.bearerTokenEnv = "TOKEN"
        let provider = GoogleVisionProvider(config: vision, environment: ["TOKEN": "tok-1"])
        let result = try await provider.classify(try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg")))
        #expect(result == cleanResult)
        #expect(server.received.first?.headers["authorization"] == "Bearer tok-1")
        #expect(server.received.first?.query == nil)
        #expect(server.problems.isEmpty, "\(server.problems)")
    }
}
