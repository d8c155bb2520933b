import Foundation
import SluiceCore
import SluiceTesting
import SluiceText
import Testing

/// The profanity filter as a user sees it: verdicts, matches pointing at the typed characters, censoring.
@Suite struct TextFilterTests {
    static let filter: ProfanityFilter = {
        let directory = TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists")
        do {
            return try ProfanityFilter.load(TextConfig(wordlistsDirectory: directory))
        } catch {
            fatalError("wordlists do not load: \(error)")
        }
    }()

    static func fixtureLines(_ name: String) -> [String] {
        let url = TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Fixtures/text/\(name)")
        return ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    static let evasions: [(String, String)] = fixtureLines("evasions.tsv").compactMap { line in
        let parts = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        return parts.count >= 2 ? (parts[0], parts[1]) : nil
    }

    @Test func evasionFixturesAreThere() {
        #expect(Self.evasions.count >= 40)
        #expect(Self.fixtureLines("innocent.txt").count >= 100)
    }

    @Test(arguments: evasions)
    func evasionIsCaught(input: String, term: String) throws {
        let verdict = try Self.filter.check("you are such a \(input) today")
        #expect(verdict.matches.contains { $0.term == term || $0.term.contains(term) }, "\(input) → \(verdict.matches.map(\.term))")
    }

    @Test(arguments: fixtureLines("innocent.txt"))
    func innocentTextIsAllowedUnmarked(text: String) throws {
        let verdict = try Self.filter.check(text)
        #expect(verdict.allowed, "\(text): \(verdict.reason ?? "")")
        #expect(verdict.matches.isEmpty, "\(text): \(verdict.matches.map(\.term))")
    }

    /// The filter reuses its buffers between messages: a verdict must not depend on what was checked before it or
    /// beside it. Every fixture line (and a long one among short ones), checked four times by 8 tasks at once in a
    /// shuffled order, gets exactly the verdict a new filter gave it checking them one by one in file order.
    @Test func verdictsDoNotDependOnWhatWasCheckedBeforeOrAlongside() async throws {
        let texts = Self.evasions.map { "you are such a \($0.0) today" } + Self.fixtureLines("innocent.txt")
            + [String(repeating: "a perfectly ordinary sentence, ", count: 200) + "then shit", "ok", "shit"]
        let fresh = try ProfanityFilter.load(TextConfig(wordlistsDirectory: TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists")))
        var expected: [String: TextVerdict] = [:]
        for text in texts where expected[text] == nil { expected[text] = try fresh.check(text) }
        let verdicts = expected
        let filter = Self.filter
        var generator = SystemRandomNumberGenerator()
        let order = (0..<4).flatMap { _ in texts }.shuffled(using: &generator)
        let mismatches = try await withThrowingTaskGroup(of: [String].self) { group in
            for lane in 0..<8 {
                group.addTask {
                    var wrong: [String] = []
                    for text in order.enumerated().filter({ $0.offset % 8 == lane }).map(\.element) where try filter.check(text) != verdicts[text] {
                        wrong.append(text)
                    }
                    return wrong
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }

    @Test func scunthorpeFamily() throws {
        for text in ["Scunthorpe United won", "The assassin left", "Our class went to a cocktail bar", "My therapist said so",
                     "Dick Van Dyke sang", "Essex and Sussex", "shiitake mushrooms", "Niger and Nigeria", "a classic grape"] {
            let verdict = try Self.filter.check(text)
            #expect(verdict.allowed && verdict.matches.isEmpty, "\(text): \(verdict.matches.map(\.term))")
        }
    }

    @Test func blockedVerdictUsesSeedWordingAndCensorsTheUsersCharacters() throws {
        let text = "what the f.u.c.k is this sh1t"
        let verdict = try Self.filter.check(text)
        #expect(!verdict.allowed)
        #expect(verdict.reason?.hasPrefix("Content contains prohibited terms: ") == true)
        #expect(verdict.reason?.contains("fuck") == true && verdict.reason?.contains("shit") == true)
        let utf16 = Array(text.utf16)
        let spans = verdict.matches.map { String(decoding: utf16[$0.start..<$0.end], as: UTF16.self) }
        #expect(spans == ["f.u.c.k", "sh1t"])
        #expect(verdict.censored == "what the ******* is this ****")
    }

    @Test func offsetsAreUTF16EvenWithEmojiAndInvisibles() throws {
        let text = "👍🏽 ok ｆｕｃｋ and f\u{200B}uck"
        let verdict = try Self.filter.check(text)
        let utf16 = Array(text.utf16)
        let spans = verdict.matches.map { String(decoding: utf16[$0.start..<$0.end], as: UTF16.self) }
        #expect(spans == ["ｆｕｃｋ", "f\u{200B}uck"])
        #expect(verdict.censored == "👍🏽 ok **** and ****")
    }

    /// Control characters show nothing: inside a word they are skipped like a zero-width joiner (as separators
    /// they split "fu\u{1}ck" into two harmless halves), and the censored text drops them inside a match.
    @Test(arguments: ["\u{0}", "\u{1}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}"])
    func controlCharactersInsideAWordDoNotSplitIt(control: String) throws {
        let text = "so fu\(control)ck"
        let verdict = try Self.filter.check(text)
        #expect(!verdict.allowed, "\(control.unicodeScalars.map { String($0.value, radix: 16) }): \(verdict)")
        #expect(verdict.matches.first?.start == 3 && verdict.matches.first?.end == 8, "\(verdict.matches)")
        #expect(verdict.censored == "so ****")
        // After a leet symbol too, and between two.
        for evasion in ["sh!\(control)t", "$\(control)hit", "a$\(control)$hole"] {
            #expect(try !Self.filter.check("you \(evasion)").allowed, "\(evasion.unicodeScalars.map { String($0.value, radix: 16) })")
        }
        // Tab and line breaks (NEL included) still separate words.
        #expect(try Self.filter.check("so fu\tck").allowed && Self.filter.check("so fu\nck").allowed && Self.filter.check("so fu\u{85}ck").allowed)
    }

    @Test func mildTermsAreAllowedButMarked() throws {
        let verdict = try Self.filter.check("damn, that was close")
        #expect(verdict.allowed)
        #expect(verdict.matches.first?.severity == .mild)
        #expect(verdict.reason?.hasPrefix("Content contains mild language") == true)
    }

    @Test func actionsComeFromConfig() throws {
        var config = TextConfig(wordlistsDirectory: TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists"))
        config.actions = [.mild: .block, .strong: .mark, .severe: .block, .slur: .block]
        let strict = try ProfanityFilter.load(config)
        #expect(try strict.check("damn").allowed == false)
        #expect(try strict.check("shit").allowed == true)
        config.actions[.mild] = .ignore
        let lax = try ProfanityFilter.load(config)
        #expect(try lax.check("damn").matches.isEmpty)
    }

    @Test func operatorListsAndAllowlistsAreLoaded() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-words-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("# house rules\nfrobnicate\tstrong\tother\tword\n".utf8).writeClosingOnExec(to: folder.appendingPathComponent("house.tsv"))
        try Data("shitake\nassassin\n".utf8).writeClosingOnExec(to: folder.appendingPathComponent("allow.txt"))
        var config = TextConfig(wordlistsDirectory: TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists"))
        config.wordlists = [folder.appendingPathComponent("house.tsv")]
        config.allowlists = [folder.appendingPathComponent("allow.txt")]
        let filter = try ProfanityFilter.load(config)
        #expect(try filter.check("do not FROBNICATE").allowed == false)

        try Data("bad\tterrible\tother\tword\n".utf8).writeClosingOnExec(to: folder.appendingPathComponent("broken.tsv"))
        config.wordlists = [folder.appendingPathComponent("broken.tsv")]
        do {
            _ = try ProfanityFilter.load(config)
            Issue.record("a bad severity was accepted")
        } catch {
            #expect(error.description.contains("broken.tsv line 1"))
            #expect(error.description.contains("severity \"terrible\""))
        }
    }

    @Test func badInputGetsAClearError() throws {
        #expect(throws: TextInputError(.empty, "text is empty")) { try Self.filter.check("") }
        #expect(throws: TextInputError(.empty, "text is only whitespace")) { try Self.filter.check(" \n\t ") }
        let long = String(repeating: "a", count: 10_001)
        #expect(throws: TextInputError(.tooLong, "text is 10001 characters long, over the 10000 limit (text.maxLength)")) {
            try Self.filter.check(long)
        }
        #expect(throws: TextInputError(.invalidUTF8, "text is not valid UTF-8")) {
            try Self.filter.check(utf8: [0x66, 0xFF, 0x75, 0x63, 0x6B])
        }
        // NUL bytes, RTL overrides and zalgo still get a verdict.
        #expect(try Self.filter.check("f\u{0}u\u{0}c\u{0}k").allowed == false)
        #expect(try Self.filter.check("\u{202E}kcuf\u{202C} hello").matches.isEmpty)
        let zalgo = "f̵̢̛u̸͔̓c̷̡͝k̶̰̈́ this"
        let verdict = try Self.filter.check(zalgo)
        #expect(!verdict.allowed)
        #expect(!verdict.censored.contains("f") && verdict.censored.hasSuffix(" this"))
    }

    /// Over `text.maxLength` is refused by its length (before any matching), naming the limit; under a raised limit
    /// the same megabyte is judged, and a term at its very end is still found.
    @Test func aMegabyteOfTextIsRejectedForItsLengthOrJudged() throws {
        let big = String(repeating: "hello world ", count: 90_000)
        let error = #expect(throws: TextInputError.self) { try Self.filter.check(big) }
        #expect(error?.kind == .tooLong)
        #expect(error?.message.contains("10000") == true, "\(error?.message ?? "")")
        var config = TextConfig(wordlistsDirectory: TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists"))
        config.maxLength = 1_000_000
        let roomy = try ProfanityFilter.load(config)
        let verdict = try roomy.check(String(big.prefix(999_000)) + " shit")
        #expect(!verdict.allowed)
    }

    @Test func everyNaughtyStringGetsAVerdictOrAClearError() throws {
        let data = try Data(contentsOf: TestEnvironment.fixture("text/blns.json"))
        let strings = try #require(try JSONSerialization.jsonObject(with: data) as? [String])
        #expect(strings.count > 500)
        var verdicts = 0
        for string in strings {
            do {
                let verdict = try Self.filter.check(string)
                verdicts += 1
                #expect(verdict.censored.unicodeScalars.count <= string.unicodeScalars.count)
                for match in verdict.matches { #expect(match.start >= 0 && match.end <= string.utf16.count && match.start < match.end) }
            } catch {
                #expect(error.kind == .empty, "\(string.debugDescription): \(error)")
            }
        }
        #expect(verdicts >= strings.count - 5)
    }
}
