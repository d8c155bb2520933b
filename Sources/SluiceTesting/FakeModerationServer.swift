import Foundation

/// A stand-in for OpenAI's moderation endpoint with a text input (and `Providers/local-text`): answers
/// `POST /v1/moderations` whose body is exactly `{"model": string, "input": string}` with all 13 omni-moderation
/// categories, scored by the test's function of the text; any other request shape gets a 400 naming what was
/// wrong, so a test passes only if the adapter sends what the real endpoint expects.
public final class FakeModerationServer: Sendable {
    public static let categories = ["harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
                                    "self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence",
                                    "violence/graphic"]

    let server: FakeJSONServer
    public var baseURL: String { server.baseURL + "/v1" }
    /// Every request as sent.
    public var received: [FakeJSONServer.Received] { server.received }
    /// The texts it was asked about, in order.
    public var texts: [String] { received.compactMap { $0.json?["input"] as? String } }

    /// `scores` gives the non-zero scores for a text; `failure` (when it returns a reply) answers instead. With `held`,
    /// each answer waits for it first, given the text asked about (a test's gate).
    public static func start(scores: @escaping @Sendable (String) -> [String: Double],
                             failure: @escaping @Sendable (String, Int) -> FakeJSONServer.Reply? = { _, _ in nil },
                             held: (@Sendable (String) async -> Void)? = nil) async throws -> FakeModerationServer {
        FakeModerationServer(server: try await FakeJSONServer.start { request, index in
            if let problem = problem(request) {
                return .init(status: 400, body: #"{"error":{"message":"\#(problem)","type":"invalid_request_error","param":null,"code":null}}"#)
            }
            let text = request.json?["input"] as? String ?? ""
            if let reply = failure(text, index) { return reply }
            let given = scores(text)
            var scored: [String: Double] = [:]
            for category in categories { scored[category] = given[category] ?? 0 }
            let result: [String: Any] = [
                "flagged": scored.values.contains { $0 >= 0.5 },
                "categories": scored.mapValues { $0 >= 0.5 },
                "category_scores": scored,
                "category_applied_input_types": Dictionary(uniqueKeysWithValues: categories.map { ($0, ["text"]) }),
            ]
            let body: [String: Any] = ["id": "modr-\(index)", "model": request.json?["model"] as? String ?? "", "results": [result]]
            let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
            var reply = FakeJSONServer.Reply(bytes: data)
            if let held { reply.held = { await held(text) } }
            return reply
        })
    }

    init(server: FakeJSONServer) { self.server = server }

    public func stop() { server.stop() }

    static func problem(_ request: FakeJSONServer.Received) -> String? {
        guard request.method == "POST" else { return "method \(request.method) not allowed" }
        guard request.path == "/v1/moderations" else { return "unknown path \(request.path)" }
        guard request.headers["content-type"]?.hasPrefix("application/json") == true else { return "content-type must be application/json" }
        guard let json = request.json else { return "body is not a JSON object" }
        guard Set(json.keys) == ["model", "input"] else { return "body keys must be model and input, got \(json.keys.sorted())" }
        guard json["model"] is String else { return "model must be a string" }
        guard json["input"] is String else { return "input must be a string for one text" }
        return nil
    }
}
