import Foundation
import SluicePipeline
import SluiceTesting
import Testing

/// The spam signals a message's text gives (`spam.links`, `spam.counters` of links and mentions, `spam.repeats`) are
/// defined over its characters; ASCII text is read byte by byte. Every signal must give its definition's answer for
/// every text: the definitions below are the character-level rules, and the texts are every line of the text
/// fixtures, every ASCII character, hand-picked edge cases and generated text made of the characters links and
/// mentions are built from.
@Suite struct MessageSignalsTests {
    static func links(_ text: String) -> [String] {
        var hosts: [String] = []
        for token in text.split(whereSeparator: { $0.isWhitespace || "<>()[]{}\"'".contains($0) }) where token.utf8.contains(UInt8(ascii: ".")) {
            var candidate = Substring(token.lowercased())
            if let scheme = candidate.range(of: "://") {
                guard candidate[..<scheme.lowerBound].allSatisfy({ $0.isLetter }) else { continue }
                candidate = candidate[scheme.upperBound...]
            } else if !(candidate.hasPrefix("www.") || candidate.contains("/")) {
                continue
            }
            let host = candidate.prefix { $0 != "/" && $0 != "?" && $0 != "#" && $0 != ":" }.trimmingCharacters(in: CharacterSet(charactersIn: ".,;!"))
            let labels = host.split(separator: ".")
            guard labels.count >= 2, let tld = labels.last, tld.count >= 2, tld.allSatisfy({ $0.isLetter }),
                  host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) else { continue }
            hosts.append(host)
        }
        return hosts
    }

    static func mentions(_ text: String) -> Int {
        text.split(whereSeparator: { $0.isWhitespace }).filter { $0.count > 1 && $0.hasPrefix("@") }.count
    }

    static func longestRun(_ text: String) -> Int {
        var longest = 0
        var current = 0
        var previous: Character?
        for character in text where !character.isWhitespace {
            current = character == previous ? current + 1 : 1
            previous = character
            longest = max(longest, current)
        }
        return longest
    }

    /// Every line of the repository's text fixtures (messages, chats, evasions, innocent sentences).
    static func fixtureLines() throws -> [String] {
        let folder = TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Fixtures")
        var lines: [String] = []
        for name in (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []).sorted()
        where [".jsonl", ".txt", ".tsv"].contains(where: name.hasSuffix) {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            lines += text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        }
        return lines
    }

    /// Text made of what links and mentions are made of: letters of both cases, digits, dots, slashes, schemes,
    /// `www.`, separators, trimmed punctuation, `@`, repeated letters and line breaks (CR LF among them).
    static func generated(count: Int) -> [String] {
        let pieces = ["a", "B", "z", "Q", "0", "7", ".", "..", "/", "://", "http://", "HTTPS://", "www.", "WWW.", " ", "\t", "\r\n",
                      "\n", "\u{0B}", "\u{0C}", ",", ";", "!", "?", "#", ":", "-", "_", "@", "@@", "(", ")", "<", ">", "[", "]",
                      "{", "}", "\"", "'", "com", "EXAMPLE", "co.uk", "x1", "aaa", "ZZZZ", "!!!", "🙏", "é", "ß", "\u{0301}", "İ"]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        return (0..<count).map { index in
            // Half of them ASCII only (the pieces before the emoji), half with any piece.
            let usable = index % 2 == 0 ? pieces.count - 5 : pieces.count
            return (0..<(1 + next(24))).map { _ in pieces[next(usable)] }.joined()
        }
    }

    static func texts() throws -> [String] {
        var texts = ["", "see https://Docs.Example.org/setup, or www.example.com.", "mail me at a@b.co", "http://x.y", "ftp1://a.bc",
                     "://example.com/", "(https://example.org/path)", "\"www.example.io\"", "a.b/c", "site.c0m/x", "a..b/", "x.yz!/",
                     "@sam @kai @ @@", "@\r\n@x", "soooo gooood", "aa aa", "a\r\na", "🙏🙏🙏", "e\u{0301}e\u{0301}", "İİ.com/x",
                     "HTTP://EXAMPLE.COM:8080/a?b#c", "www.example.com;", "!!!.example.com/", "example.com/..."]
        texts += (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        texts.append(String(String.UnicodeScalarView((0..<128).compactMap { UnicodeScalar($0) })))
        texts += try fixtureLines()
        texts += generated(count: 10_000)
        return texts
    }

    @Test func everySignalGivesItsDefinitionsAnswer() throws {
        var failures = 0
        for text in try Self.texts() where failures < 10 {
            let links = MessageSignals.links(in: text), mentions = MessageSignals.mentions(in: text)
            let run = MessageSignals.longestRun(in: text)
            #expect(links == Self.links(text), "links in \(text.debugDescription)")
            #expect(mentions == Self.mentions(text), "mentions in \(text.debugDescription)")
            #expect(run == Self.longestRun(text), "longest run in \(text.debugDescription)")
            if links != Self.links(text) || mentions != Self.mentions(text) || run != Self.longestRun(text) { failures += 1 }
        }
    }

    @Test func signalsOfPlainMessages() {
        #expect(MessageSignals.links(in: "see https://Docs.Example.org/setup, or www.example.com. thanks") == ["docs.example.org", "www.example.com"])
        #expect(MessageSignals.links(in: "the end. a new sentence.") == [])
        #expect(MessageSignals.mentions(in: "@sam @kai meeting moved, mail a@b.co @") == 2)
        #expect(MessageSignals.longestRun(in: "soooo good") == 4)
        #expect(MessageSignals.longestRun(in: "aa aa") == 4, "whitespace is skipped, not counted")
    }
}
