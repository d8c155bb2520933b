import Foundation
import SluiceCore
import SluiceTesting
import Testing

/// Queue lines are read as JSON objects by `JSONLine.object`, which reads flat objects of plain strings itself and
/// gives everything else to `JSONSerialization`. Whichever reads a line, the outcome must be what
/// `JSONSerialization` alone gives: the same dictionary, or the same reason for refusing the line.
struct JSONLineTests {
    /// What `JSONSerialization` alone makes of a line, worded as `JSONLine` words its reasons.
    enum Outcome {
        case object(NSDictionary)
        case refused(String)
    }

    static func foundation(_ bytes: Data) -> Outcome {
        guard String(validating: bytes, as: UTF8.self) != nil else { return .refused("not valid UTF-8") }
        do {
            let value = try JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])
            guard let object = value as? [String: Any] else { return .refused("not a JSON object") }
            return .object(object as NSDictionary)
        } catch {
            let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String)
                .map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ". ")) }
            return .refused("not valid JSON" + (detail.map { " (\($0))" } ?? ""))
        }
    }

    static func expectSameAsFoundation(_ bytes: Data, _ comment: Comment? = nil) {
        let mine = JSONLine.object(bytes)
        switch (mine, foundation(bytes)) {
        case let (.success(object), .object(expected)):
            #expect((object as NSDictionary).isEqual(expected), comment)
            // The same Swift types too: strings as String, as ParseStage reads them.
            for (key, value) in object where expected[key] is String { #expect(value is String, comment) }
        case let (.failure(problem), .refused(expected)):
            #expect(problem.message.hasPrefix(expected), comment)
        default:
            Issue.record("JSONLine \(mine) but JSONSerialization \(foundation(bytes)): \(comment?.rawValue ?? "")")
        }
    }

    @Test func plainLinesAndTheirNearMissesReadAsJSONSerializationReadsThem() {
        let lines = [
            #"{"id": "t1", "userId": "u1", "text": "see you at the cocktail bar later", "kind": "message"}"#,
            #"{"id":"t1","userId":"u1","text":"no spaces"}"#,
            " \t{ \"id\" : \"t1\" ,\r\n \"text\" : \"spaced out\" } \t",
            "{}", " { } ", #"{"": ""}"#, #"{"text": "thanks, all good 🙏 — ünïcödé, 中文, עברית"}"#,
            #"{"text": "DEL \#u{7F} is plain"}"#,
            // Not plain: each is left to JSONSerialization, whatever it makes of it.
            #"{"text": "a \"quoted\" word"}"#, #"{"text": "tab\tescaped"}"#, #"{"text": "\u00e9"}"#, #"{"text": "\ud800 x"}"#,
            "{\"text\": \"raw tab\tinside\"}", "{\"text\": \"raw\u{01}control\"}",
            #"{"id": "a", "id": "b"}"#, #"{"id": 5}"#, #"{"id": null}"#, #"{"id": true}"#, #"{"m": ["a"]}"#, #"{"m": {"a": "b"}}"#,
            #"{"id": "a",}"#, #"{"id": "a"} x"#, #"{"id": "a""#, #"{"id" "a"}"#, #"{"id": "a" "b": "c"}"#, #"{id: "a"}"#,
            #"["a"]"#, #""a""#, "null", "5", "", "   ", "{", "}", #"{"id": "unterminated}"#,
            "\u{FEFF}{\"id\": \"bom\"}",
        ]
        for line in lines { Self.expectSameAsFoundation(Data(line.utf8), "\(line)") }
        // Invalid UTF-8 inside and outside a string.
        for bytes: [UInt8] in [[0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], [0x7B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x3A, 0x22, 0x22, 0x7D],
                               [0xC0, 0x7B, 0x7D], [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x22, 0x7D]] {
            Self.expectSameAsFoundation(Data(bytes), "\(bytes)")
        }
    }

    /// Every naughty string, as a value written raw (many of them then break the line) and written as
    /// `JSONSerialization` escapes it, and as a key.
    @Test func naughtyStringsReadAsJSONSerializationReadsThem() throws {
        let strings = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: TestEnvironment.fixture("text/blns.json"))) as? [String])
        try #require(strings.count > 400, "the naughty strings fixture is missing")
        for string in strings {
            Self.expectSameAsFoundation(Data(#"{"id": "n", "text": "\#(string)"}"#.utf8), "raw \(string)")
            Self.expectSameAsFoundation(Data(#"{"\#(string)": "key"}"#.utf8), "raw key \(string)")
            var object = ["id": "n", "text": string]
            object[string] = "k"
            let escaped = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            Self.expectSameAsFoundation(escaped, "escaped \(string)")
        }
    }
}
