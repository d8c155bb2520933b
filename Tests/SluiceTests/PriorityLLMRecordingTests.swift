import Foundation
import SluiceCore
import SluiceProviders
import SluiceTesting
import Testing

/// `priority.engine: "llm"` measured on held-out files by replaying recorded answers (tune-16 … tune-29 were
/// heldout-11 … heldout-24 when they were recorded)
/// (`Tests/Fixtures/priority/llm-recordings/`, made with `scripts/bench_quality/llm_replay.py record`): the recording
/// must still match what the engine sends (a changed prompt, model name or labelled line is a miss and fails here,
/// saying to record again), and the engine replaying it must keep the figures README quotes.
@Suite struct PriorityLLMRecordingTests {
    static let fixtures = TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Fixtures/priority")
    static let model = "claude-helper-agent"

    struct Recording: Decodable {
        struct Message: Decodable, Equatable {
            var role: String
            var content: String
        }

        var key: String
        var model: String
        var messages: [Message]
        var status: Int
        var body: String
    }

    /// Answers a request from the recording when its model and messages are exactly a recorded one; 404 otherwise,
    /// like `llm_replay.py replay`.
    static func replay() async throws -> FakeJSONServer {
        let file = fixtures.appendingPathComponent("llm-recordings/\(model).jsonl")
        let recordings = try PriorityModelTests.lines(file, as: Recording.self)
        let byUserMessage = Dictionary(recordings.map { ($0.messages.last?.content ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        return try await FakeJSONServer.start { request, _ in
            guard let body = request.json, let sent = body["messages"] as? [[String: String]],
                  let recording = byUserMessage[sent.last?["content"] ?? ""], recording.model == body["model"] as? String,
                  recording.messages == sent.map({ Recording.Message(role: $0["role"] ?? "", content: $0["content"] ?? "") }) else {
                return .init(status: 404, body: #"{"error":{"message":"not recorded","type":"not_recorded"}}"#)
            }
            return .init(status: recording.status, body: recording.body)
        }
    }

    @Test(arguments: [("tune-16", 0.95), ("tune-17", 0.94), ("tune-18", 0.93), ("tune-19", 0.93), ("tune-20", 0.87), ("tune-21", 0.93),
                      ("tune-22", 0.91), ("tune-23", 0.93), ("tune-24", 0.94), ("tune-25", 0.97), ("tune-26", 0.97), ("tune-27", 0.94), ("tune-28", 0.94), ("tune-29", 0.91), ("heldout-25", 0.95), ("heldout-26", 0.94)])
    func theLLMEngineReplayingItsRecordingKeepsItsFigures(file: String, floor: Double) async throws {
        let server = try await Self.replay()
        defer { server.stop() }
        let engine = PriorityTests.llm(server, model: Self.model)
        let lines = try PriorityModelTests.lines(Self.fixtures.appendingPathComponent("\(file).jsonl"), as: PriorityModelTests.Labelled.self)
        let (right, swaps) = await PriorityModelTests.tally(lines) { line in
            let verdict = await engine.score(line.text, context: line.context)
            #expect(verdict.engine == "llm", """
                \(file) \(line.id) was not answered from the recording (\(verdict.fallbackReason ?? "")): the prompt, the model name \
                or the line changed; record again with scripts/bench_quality/llm_replay.py record
                """)
            #expect(verdict.category != nil && verdict.timeframe != nil && verdict.confidence != nil && verdict.recommendedAction != nil,
                    "\(line.id): the recorded answer's optional fields are kept")
            return verdict.priority
        }
        #expect(lines.count == 170)
        #expect(Double(right) / Double(lines.count) >= floor, "\(file): \(right)/\(lines.count)")
        #expect(swaps == 0, "\(file)")
        #expect(server.received.count == lines.count, "one request a line: a 404 is not retried")
    }
}
