import Foundation
import Logging
import SluiceCore
import SluiceProviders
import SluiceTesting
import SluiceText
import MetricsTestKit
import Testing

@Suite struct OpenAIModerationTests {
    @Test func requestShapeAndMapping() async throws {
        let server = try await FakeJSONServer.start { _, _ in
            .init(body: #"{"id":"modr-1","model":"omni-moderation-latest","results":[{"flagged":true,"categories":{"sexual":true},"category_scores":{"sexual":0.92,"violence":0.2,"violence/graphic":0.55,"self-harm":0.01,"harassment":0.0},"category_applied_input_types":{"sexual":["image"]}}]}"#)
        }
        defer { server.stop() }
        var vision = VisionConfig()
        vision.provider = .openAIModeration
        vision.endpoint = server.baseURL + "/v1"
        vision.apiKeyEnv = "OPENAI_TEST_KEY"
        let provider = OpenAIModerationProvider(config: vision, environment: ["OPENAI_TEST_KEY": "sk-9"], logger: Logger(label: "test"))
        let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
        let result = try await provider.classify(jpeg)
        #expect(result == SafeSearch(adult: .veryLikely, spoof: .unknown, medical: .veryUnlikely, violence: .likely, racy: .veryLikely))
        let request = try #require(server.received.first)
        #expect(request.path == "/v1/moderations")
        #expect(request.headers["authorization"] == "Bearer sk-9")
        let body = try #require(request.json)
        #expect(body["model"] as? String == "omni-moderation-latest")
        let input = try #require((body["input"] as? [[String: Any]])?.first)
        #expect(input["type"] as? String == "image_url")
        let url = try #require((input["image_url"] as? [String: Any])?["url"] as? String)
        #expect(url.hasPrefix("data:image/jpeg;base64,"))
        #expect(Data(base64Encoded: String(url.dropFirst(23))) == jpeg)
    }

    @Test(arguments: [(0.0, Likelihood.veryUnlikely), (0.099, .veryUnlikely), (0.1, .unlikely), (0.3, .possible), (0.5, .likely),
                      (0.79, .likely), (0.8, .veryLikely), (1.0, .veryLikely)])
    func cutPoints(score: Double, expected: Likelihood) {
        #expect(OpenAIModerationProvider.likelihood(score) == expected)
    }
}
