import Foundation
import SluiceCore
import Testing

/// The JSON texts the stores keep for verdicts: `sluice reprocess` compares them as text, so the same verdict must
/// always give these exact bytes (keys sorted, no whitespace, the escapes below), and they must read back as the
/// verdict.
@Suite struct CanonicalJSONTests {
    @Test func aTextVerdictIsWrittenByteForByte() throws {
        let verdict = TextVerdict(allowed: false, reason: "Content contains prohibited terms: fuck",
                                  matches: [TextMatch(term: "fuck", category: "sexual", severity: .severe, start: 59, end: 63),
                                            TextMatch(term: "a\"b", category: "x\\y", severity: .mild, start: 0, end: 1_234_567_890_123)],
                                  censored: "quote \" back \\ tab \t nl \n cr \r ctl \u{01}\u{1F} ls \u{2028} ps \u{2029} … é 😀 /")
        let expected = #"{"allowed":false,"censored":"quote \" back \\ tab \t nl \n cr \r ctl \u0001\u001f ls \u2028 ps \u2029 … é 😀 /","#
            + #""matches":[{"category":"sexual","end":63,"severity":"severe","start":59,"term":"fuck"},"#
            + #"{"category":"x\\y","end":1234567890123,"severity":"mild","start":0,"term":"a\"b"}],"#
            + #""reason":"Content contains prohibited terms: fuck"}"#
        #expect(verdict.canonicalJSON == expected)
        #expect(try JSONDecoder().decode(TextVerdict.self, from: Data(verdict.canonicalJSON.utf8)) == verdict)
        let allowed = TextVerdict(allowed: true, reason: nil, matches: [], censored: "")
        #expect(allowed.canonicalJSON == #"{"allowed":true,"censored":"","matches":[],"reason":null}"#)
    }

    @Test func aPriorityVerdictIsWrittenByteForByte() throws {
        let full = PriorityVerdict(urgencyScore: 87, reason: "Urgent: \"now\"", urgencyIndicators: ["urgent: help", "exclamations: !!!", ""],
                                   engine: "rules", fallbackReason: "llm: timed out\n", confidence: "high", timeframe: "immediate",
                                   category: "info", recommendedAction: "Respond now.")
        #expect(full.canonicalJSON == #"{"category":"info","confidence":"high","engine":"rules","fallbackReason":"llm: timed out\n","#
            + #""isUrgent":true,"priority":"high","reason":"Urgent: \"now\"","recommendedAction":"Respond now.","timeframe":"immediate","#
            + #""urgencyIndicators":["urgent: help","exclamations: !!!",""],"urgencyScore":87}"#)
        #expect(try JSONDecoder().decode(PriorityVerdict.self, from: Data(full.canonicalJSON.utf8)) == full)
        let bare = PriorityVerdict(urgencyScore: 0, reason: "", urgencyIndicators: [], engine: "rules")
        #expect(bare.canonicalJSON == #"{"engine":"rules","isUrgent":false,"priority":"low","reason":"","urgencyIndicators":[],"urgencyScore":0}"#)
    }
}
