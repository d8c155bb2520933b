import Foundation
import SluiceCore
import SluiceTesting
import Testing

/// `sluice check-text --labelled` and `sluice priority --labelled`, as an operator runs them: the figures from a
/// small labelled file, and a clear error naming file and line for a bad one.
@Suite struct LabelledEvaluationTests {
    func write(_ root: TemporaryDataRoot, _ name: String, _ lines: [String]) throws -> String {
        let file = root.url.appendingPathComponent(name)
        try Data((lines.joined(separator: "\n") + "\n").utf8).writeClosingOnExec(to: file)
        return file.path
    }

    @Test func textFiguresFromALabelledFile() async throws {
        let root = try TemporaryDataRoot()
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let file = try write(root, "set.jsonl", [
            #"{"text": "what the f.u.c.k is wrong with you", "label": "hostile", "category": "profanity", "listed": true}"#,
            #"{"text": "i know where you live", "label": "hostile", "category": "threat", "listed": false}"#,
            #"{"text": "i dont want to be here anymore", "label": "concern"}"#,
            #"{"text": "see you at the cocktail bar in Scunthorpe", "label": "clean", "category": "clean-scunthorpe"}"#,
            #"{"text": "holy shit that goal", "label": "clean"}"#,
        ])
        let result = try await shell(TestEnvironment.sluiceBinary, ["check-text", "--config", config.path, "--labelled", file, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(figures["classifier"] as? String == "none")
        #expect(figures["lines"] as? Int == 5 && figures["flagged"] as? Int == 2)
        #expect(figures["hostileRecall"] as? Double == 0.5 && figures["unlistedHostileRecall"] as? Double == 0)
        #expect(figures["concernRecall"] as? Double == 0 && figures["cleanFlagRate"] as? Double == 0.5 && figures["precision"] as? Double == 0.5)
        let categories = try #require(figures["categories"] as? [String: [Int]])
        #expect(categories["threat"] == [0, 1] && categories["profanity"] == [1, 1] && categories["concern"] == [0, 1])
    }

    @Test(arguments: [
        (#"{"text": "hi", "label": "spam"}"#, #"set.jsonl:2: label "spam" is not hostile, concern or clean"#),
        (#"{"text": "hi"}"#, #"set.jsonl:2: not a labelled line {"text", "label", "category"?, "listed"?}"#),
        ("not json", "set.jsonl:2: not a labelled line"),
    ])
    func aBadLabelledLineNamesFileAndLine(line: String, expected: String) async throws {
        let root = try TemporaryDataRoot()
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let file = try write(root, "set.jsonl", [#"{"text": "ok", "label": "clean"}"#, line])
        let result = try await shell(TestEnvironment.sluiceBinary, ["check-text", "--config", config.path, "--labelled", file])
        #expect(result.status != 0)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
    }

    @Test func priorityFiguresSayWhichEngineAnswered() async throws {
        let root = try TemporaryDataRoot()
        let config = try root.writeConfigFile(endpoint: "http://127.0.0.1:9/v1")
        let file = try write(root, "bands.jsonl", [
            #"{"text": "water is pouring through the ceiling, help", "band": "high"}"#,
            #"{"text": "can you send the figures by friday?", "band": "medium"}"#,
            #"{"text": "how was the holiday? 😂", "band": "low"}"#,
            #"{"text": "any update??", "context": "thinking of getting mum a cookbook", "band": "high"}"#,
        ])
        let result = try await shell(TestEnvironment.sluiceBinary, ["priority", "--config", config.path, "--labelled", file, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(figures["lines"] as? Int == 4 && figures["correct"] as? Int == 3 && figures["swaps"] as? Int == 1)
        #expect(figures["engines"] as? [String: Int] == ["rules": 4])
        let bad = try write(root, "bad.jsonl", [#"{"text": "x", "band": "urgent"}"#])
        let failed = try await shell(TestEnvironment.sluiceBinary, ["priority", "--config", config.path, "--labelled", bad])
        #expect(failed.status != 0 && failed.stderr.contains(#"bad.jsonl:1: band "urgent" is not high, medium or low"#), "\(failed.stderr)")
    }
}
