import SluiceCore
import Foundation

/// Evasion-resistant profanity matching without Scunthorpe false positives.
///
/// Text is folded (`TextNormalizer`), cut into words, leetspeak is read inside words that contain letters,
/// single letters split by spaces or punctuation are joined ("f.u.c.k"), and repeated letters are tried
/// collapsed ("fuuuuck"). Every word is then looked up once in a hash table of whole-word terms and phrases;
/// only terms marked `compound` are also searched inside longer words (one Aho–Corasick pass), and never inside
/// an allowlisted word. Matches point back at the user's UTF-16 offsets.
public struct ProfanityFilter: Sendable {
    public struct Options: Sendable, Equatable {
        public var actions: [Severity: SeverityAction]
        /// Longest text judged, in Unicode scalars.
        public var maxLength: Int

        public init(actions: [Severity: SeverityAction] = Options.standardActions, maxLength: Int = 10_000) {
            self.actions = actions
            self.maxLength = maxLength
        }

        /// Slurs, severe and strong terms block; mild terms are allowed but marked.
        public static let standardActions: [Severity: SeverityAction] = [.mild: .mark, .strong: .block, .severe: .block, .slur: .block]
    }

    private let entries: [WordlistEntry]
    /// Whole-word terms: open-addressing table keyed by the FNV hash of their letters.
    private let words: HashIndex
    private let wordScalars: [[UInt32]]
    /// Phrases (several words) keyed by the hash of their first word: word hashes and entry index.
    private let phrases: [UInt64: [(words: [UInt64], entry: Int)]]
    private let phraseStarts: HashIndex
    private let allowedWords: HashIndex
    private let allowedPhrases: [UInt64: [[UInt64]]]
    private let allowedPhraseStarts: HashIndex
    private let compounds: AhoCorasick
    /// Every first-word hash of interest (words, phrase starts, allowlisted words and phrase starts), so an
    /// ordinary word costs one probe.
    private let known: HashIndex
    public let options: Options

    public init(wordlist: Wordlist, options: Options = Options()) {
        self.options = options
        // Keep the most severe entry per term.
        var byTerm: [String: WordlistEntry] = [:]
        for entry in wordlist.entries {
            if let existing = byTerm[entry.term] {
                var merged = existing.severity >= entry.severity ? existing : entry
                if existing.match == .compound || entry.match == .compound { merged.match = .compound }
                byTerm[entry.term] = merged
            } else {
                byTerm[entry.term] = entry
            }
        }
        let entries = byTerm.values.sorted { $0.term < $1.term }
        var words = HashIndex()
        var wordScalars: [[UInt32]] = Array(repeating: [], count: entries.count)
        var phrases: [UInt64: [(words: [UInt64], entry: Int)]] = [:]
        var phraseStarts = HashIndex()
        var compoundRoots: [(pattern: [UInt8], value: Int)] = []
        for (index, entry) in entries.enumerated() {
            let parts = entry.term.split(separator: " ").map { Array($0.unicodeScalars.map(\.value)) }
            if parts.count == 1 {
                wordScalars[index] = parts[0]
                words.insert(Self.hash(parts[0], 0, parts[0].count), value: index)
                if entry.match == .compound, parts[0].allSatisfy({ $0 >= 0x61 && $0 <= 0x7A }) {
                    compoundRoots.append((parts[0].map { UInt8($0) }, index))
                }
            } else if let first = parts.first {
                let firstHash = Self.hash(first, 0, first.count)
                phrases[firstHash, default: []].append((parts.map { Self.hash($0, 0, $0.count) }, index))
                phraseStarts.insert(firstHash, value: 0)
            }
        }
        var allowedWords = HashIndex()
        var allowedPhrases: [UInt64: [[UInt64]]] = [:]
        var allowedPhraseStarts = HashIndex()
        for phrase in wordlist.allowed {
            let parts = phrase.split(separator: " ").map { Array($0.unicodeScalars.map(\.value)) }
            if parts.count == 1 {
                allowedWords.insert(Self.hash(parts[0], 0, parts[0].count), value: 0)
            } else if let first = parts.first {
                let firstHash = Self.hash(first, 0, first.count)
                allowedPhrases[firstHash, default: []].append(parts.map { Self.hash($0, 0, $0.count) })
                allowedPhraseStarts.insert(firstHash, value: 0)
                // "dick van dyke" glued together is as innocent as spaced.
                let glued = parts.flatMap { $0 }
                allowedWords.insert(Self.hash(glued, 0, glued.count), value: 0)
            }
        }
        self.entries = entries
        self.words = words
        self.wordScalars = wordScalars
        self.phrases = phrases
        self.phraseStarts = phraseStarts
        self.allowedWords = allowedWords
        self.allowedPhrases = allowedPhrases
        self.allowedPhraseStarts = allowedPhraseStarts
        compounds = AhoCorasick(patterns: compoundRoots)
        var known = HashIndex()
        for hash in words.allKeys + phraseStarts.allKeys + allowedWords.allKeys + allowedPhraseStarts.allKeys {
            known.insert(hash, value: 0)
        }
        self.known = known
    }

    public var termCount: Int { entries.count }

    /// Whether `check` would take the text (not empty, not over `text.maxLength`), without judging it: a caller that
    /// charges for judging (a rate limit) asks first.
    public func preflight(_ text: String) throws(TextInputError) {
        _ = try measured(text)
    }

    private func measured(_ text: String) throws(TextInputError) -> Bool {
        let (scalarCount, blank, ascii) = Self.measure(text)
        if blank { throw TextInputError(.empty, scalarCount == 0 ? "text is empty" : "text is only whitespace") }
        if scalarCount > options.maxLength {
            throw TextInputError(.tooLong, "text is \(scalarCount) characters long, over the \(options.maxLength) limit (text.maxLength)")
        }
        return ascii
    }

    /// Judges one message.
    public func check(_ text: String) throws(TextInputError) -> TextVerdict {
        let ascii = try measured(text)
        // Scratch memory lives only for this call (on the stack when it fits): nothing is allocated, shared or locked
        // for a message on the common path.
        if ascii, let verdict = text.utf8.withContiguousStorageIfAvailable({ bytes in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bytes.count) { chars in
                withUnsafeTemporaryAllocation(of: TextNormalizer.Kind.self, capacity: bytes.count) { kinds in
                    judge(text, units: TextNormalizer.foldASCII(bytes, chars: chars, kinds: kinds))
                }
            }
        }) {
            return verdict
        }
        return TextNormalizer.fold(text).withUnsafeBufferPointer { judge(text, units: $0) }
    }

    /// Cuts the folded units into words in scratch memory, then judges them.
    private func judge<Units: FoldedUnits>(_ text: String, units: Units) -> TextVerdict {
        let count = max(units.count, 1)
        return withUnsafeTemporaryAllocation(of: UInt32.self, capacity: count) { chars in
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: count) { charUnits in
                // Room for `fewSpans` words first (a temporary allocation stays on the stack up to 1 KiB); a message
                // with more words is cut again with room for the most it can have.
                let most = Tokenizer.spanCapacity(units: count)
                return compounds.withStepper { automaton in
                    if most > Self.fewSpans, let verdict = withUnsafeTemporaryAllocation(of: TokenSpan.self, capacity: Self.fewSpans, { spans in
                        Tokenizer.tokens(units, compounds: automaton, chars: chars, charUnits: charUnits, spans: spans)
                            .map { judge(text, units: units, tokens: $0) }
                    }) {
                        return verdict
                    }
                    return withUnsafeTemporaryAllocation(of: TokenSpan.self, capacity: most) { spans in
                        guard let tokens = Tokenizer.tokens(units, compounds: automaton, chars: chars, charUnits: charUnits, spans: spans) else {
                            preconditionFailure("a message of \(count) units made more than \(most) words")
                        }
                        return judge(text, units: units, tokens: tokens)
                    }
                }
            }
        }
    }

    private static let fewSpans = 1_024 / MemoryLayout<TokenSpan>.stride

    /// The matching itself, over a folded and tokenised message.
    private func judge<Units: FoldedUnits>(_ text: String, units: Units, tokens: TokenView) -> TextVerdict {
        var found: [TextMatch] = []
        var skipUntil = 0
        let spans = tokens.words
        for index in spans.indices {
            let span = spans[index]
            guard known.contains(span.hash) else {
                if index >= skipUntil, span.length >= 3 || span.trailing > 0,
                   let hit = lookupVariants(span, tokens: tokens, units: units) { found.append(hit) }
                continue
            }
            // Allowlisted phrases win over their words ("Dick Van Dyke").
            if allowedPhraseStarts.contains(span.hash), let candidates = allowedPhrases[span.hash] {
                for phrase in candidates where Self.matches(phrase, spans: spans, at: index) {
                    skipUntil = max(skipUntil, index + phrase.count)
                }
            }
            if index < skipUntil { continue }
            if phraseStarts.contains(span.hash), let candidates = phrases[span.hash] {
                for phrase in candidates where Self.matches(phrase.words, spans: spans, at: index) {
                    let last = spans[index + phrase.words.count - 1]
                    found.append(match(phrase.entry, start: units[Int(span.unitStart)].start, end: units[Int(last.unitEnd) - 1].end))
                }
            }
            if allowedWords.contains(span.hash) { continue }
            if let entry = lookupWord(tokens.chars, Int(span.charStart), Int(span.charEnd), hash: span.hash) {
                found.append(match(entry, start: units[Int(span.unitStart)].start, end: units[Int(span.unitEnd) - 1].end))
                continue
            }
            if let hit = lookupVariants(span, tokens: tokens, units: units) { found.append(hit) }
        }
        if found.isEmpty { return TextVerdict(allowed: true, reason: nil, matches: [], censored: text) }
        return verdict(text, matches: Self.dropOverlaps(found))
    }

    /// Scalar count, whether the text is empty or whitespace only, and whether it is all ASCII (a fast path).
    private static func measure(_ text: String) -> (count: Int, blank: Bool, ascii: Bool) {
        let ascii: (Int, Bool, Bool)? = text.utf8.withContiguousStorageIfAvailable { bytes in
            var blank = true
            for byte in bytes {
                // Non-ASCII, or a control character that shows nothing (read as part of the character before it, which
                // only the Unicode path can do): the Unicode path.
                if byte >= 0x80 || TextNormalizer.isInvisibleControl(UInt32(byte)) { return nil }
                if blank, byte != 0x20, byte != 0x09, byte != 0x0A, byte != 0x0D, byte != 0x0B, byte != 0x0C { blank = false }
            }
            return (bytes.count, blank, true)
        } ?? nil
        if let ascii { return ascii }
        var count = 0
        var blank = true
        for scalar in text.unicodeScalars {
            count += 1
            if blank, !scalar.properties.isWhitespace { blank = false }
        }
        return (count, blank, false)
    }

    // MARK: - Matching

    private func lookupWord(_ chars: UnsafeBufferPointer<UInt32>, _ start: Int, _ end: Int, hash: UInt64) -> Int? {
        var found: Int?
        words.forEach(hash) { candidate in
            let term = wordScalars[candidate]
            guard found == nil, term.count == end - start else { return }
            var equal = true
            for offset in 0..<term.count where term[offset] != chars[start + offset] {
                equal = false
                break
            }
            if equal { found = candidate }
        }
        return found
    }

    /// Repeated-letter forms of the word, then glued compounds, then the word with trailing leet symbols.
    private func lookupVariants<Units: FoldedUnits>(_ span: TokenSpan, tokens: TokenView, units: Units) -> TextMatch? {
        if let hit = lookupForms(span, tokens: tokens, units: units) { return hit }
        if let hit = lookupMasked(span, tokens: tokens, units: units) { return hit }
        guard span.trailing > 0 else { return nil }
        // "a$$": the word with the symbols after it read as letters.
        var chars = Array(tokens.chars[Int(span.charStart)..<Int(span.charEnd)])
        var charUnits = Array(tokens.charUnits[Int(span.charStart)..<Int(span.charEnd)])
        for position in Int(span.unitEnd)..<Int(span.unitEnd + span.trailing) {
            chars.append(TextNormalizer.leet(units[position].char) ?? units[position].char)
            charUnits.append(Int32(position))
        }
        let hash = Self.hash(chars, 0, chars.count)
        if allowedWords.contains(hash) { return nil }
        let whole = TokenSpan(charStart: 0, charEnd: Int32(chars.count), unitStart: span.unitStart,
                              unitEnd: span.unitEnd + span.trailing, hash: hash, longestRun: Int32(Self.longestRun(chars, 0, chars.count)))
        return chars.withUnsafeBufferPointer { chars in
            charUnits.withUnsafeBufferPointer { charUnits in
                if let entry = lookupWord(chars, 0, chars.count, hash: hash) {
                    return match(entry, start: units[Int(whole.unitStart)].start, end: units[Int(whole.unitEnd) - 1].end)
                }
                return lookupForms(whole, tokens: TokenView(chars: chars, charUnits: charUnits, words: UnsafeBufferPointer(start: nil, count: 0)),
                                   units: units)
            }
        }
    }

    /// The letters a '*' is tried as: the vowels people mask most first, so of equally severe readings the usual
    /// one is reported ("motherf*cker" is "motherfucker", not "motherfecker").
    private static let maskLetters: [UInt32] = Array("uiaoe".unicodeScalars.map(\.value)) + Array("bcdfghjklmnpqrstvwxyz".unicodeScalars.map(\.value))

    /// A word with one or two letters masked by '*' ("f*ck", "sh*tty", "motherf*cker", "f**k"): every letter is tried
    /// in each mask, and the most severe listed word (or compound inside it) that one of them spells is the match.
    /// At least two real letters are needed, so "***" and "a*" stay words of nothing; a star at either end of the
    /// word is emphasis, not a mask.
    private func lookupMasked<Units: FoldedUnits>(_ span: TokenSpan, tokens: TokenView, units: Units) -> TextMatch? {
        let start = Int(span.charStart)
        let end = Int(span.charEnd)
        // Almost no word has a '*' inside: it is looked for before anything is copied.
        guard end - start >= 3, span.mayHaveStar, tokens.chars[(start + 1)..<(end - 1)].contains(0x2A) else { return nil }
        var chars = Array(tokens.chars[start..<end])
        let slots = chars.indices.filter { chars[$0] == 0x2A }
        // Masks inside the word only: a star at either end is emphasis ("*hit*", "*sigh*"), not a hidden letter.
        guard (1...2).contains(slots.count), chars.count - slots.count >= 2,
              let firstSlot = slots.first, let lastSlot = slots.last, firstSlot > 0, lastSlot < chars.count - 1 else { return nil }
        var best: TextMatch?
        func consider() {
            let hash = Self.hash(chars, 0, chars.count)
            if allowedWords.contains(hash) { return }
            let hit: TextMatch? = chars.withUnsafeBufferPointer { chars in
                if let entry = lookupWord(chars, 0, chars.count, hash: hash) {
                    return match(entry, start: units[Int(span.unitStart)].start, end: units[Int(span.unitEnd) - 1].end)
                } else if chars.count >= 4, let (entry, from, to) = compounds.firstMatch(in: chars, 0, chars.count) {
                    return match(entry, start: units[Int(tokens.charUnits[start + from])].start,
                                 end: units[Int(tokens.charUnits[start + to - 1])].end)
                }
                return nil
            }
            if let hit, best.map({ hit.severity > $0.severity }) ?? true { best = hit }
        }
        for first in Self.maskLetters {
            chars[slots[0]] = first
            guard slots.count == 2 else {
                consider()
                continue
            }
            for second in Self.maskLetters {
                chars[slots[1]] = second
                consider()
            }
        }
        return best
    }

    private func lookupForms<Units: FoldedUnits>(_ span: TokenSpan, tokens: TokenView, units: Units) -> TextMatch? {
        let start = Int(span.charStart)
        let end = Int(span.charEnd)
        guard end - start >= 3 else { return nil }
        let wholeStart = units[Int(span.unitStart)].start
        let wholeEnd = units[Int(span.unitEnd) - 1].end
        let chars = tokens.chars
        // A repeated letter counts only when stretched to three or more ("fuuuuck", "asssss"); plain doubles are
        // spelling ("rapping", "Bonner", "sheet").
        let runs = Int(span.longestRun)
        if runs >= 3 {
            let original = Array(chars[start..<end])
            // Runs of 3+ to one letter ("fuuuuck") and to two ("asssss").
            let forms = [Self.collapse(original, minimumRun: 3, keep: 1), Self.collapse(original, minimumRun: 3, keep: 2)]
            for form in forms {
                let hash = Self.hash(form.chars, 0, form.chars.count)
                if allowedWords.contains(hash) { return nil }
                if let entry = form.chars.withUnsafeBufferPointer({ lookupWord($0, 0, $0.count, hash: hash) }) {
                    return match(entry, start: wholeStart, end: wholeEnd)
                }
            }
            // Compounds with long runs collapsed, never with doubles collapsed ("shiitake" is not "shitake").
            for form in forms where form.chars.count >= 4 {
                if let (entry, from, to) = form.chars.withUnsafeBufferPointer({ compounds.firstMatch(in: $0, 0, $0.count) }) {
                    let first = tokens.charUnits[start + form.sources[from]]
                    let last = tokens.charUnits[start + form.sources[to - 1]]
                    return match(entry, start: units[Int(first)].start, end: units[Int(last)].end)
                }
            }
        }
        guard end - start >= 4,
              let (entry, from, to) = span.compoundState >= 0 ? compounds.hit(state: span.compoundState, end: span.compoundEnd)
                                                              : compounds.firstMatch(in: chars, start, end) else { return nil }
        let first = tokens.charUnits[start + from]
        let last = tokens.charUnits[start + to - 1]
        return match(entry, start: units[Int(first)].start, end: units[Int(last)].end)
    }

    private static func matches(_ phrase: [UInt64], spans: UnsafeBufferPointer<TokenSpan>, at index: Int) -> Bool {
        guard index + phrase.count <= spans.count else { return false }
        for (offset, hash) in phrase.enumerated() where spans[index + offset].hash != hash { return false }
        return true
    }

    /// Length of the longest run of one letter.
    private static func longestRun(_ chars: [UInt32], _ start: Int, _ end: Int) -> Int {
        var longest = 1
        var current = 1
        var index = start + 1
        while index < end {
            current = chars[index] == chars[index - 1] ? current + 1 : 1
            if current > longest { longest = current }
            index += 1
        }
        return longest
    }



    private static func collapse(_ chars: [UInt32], minimumRun: Int, keep: Int) -> (chars: [UInt32], sources: [Int]) {
        var result: [UInt32] = []
        var sources: [Int] = []
        var index = 0
        while index < chars.count {
            var end = index + 1
            while end < chars.count, chars[end] == chars[index] { end += 1 }
            let run = end - index
            let count = run >= minimumRun ? min(keep, run) : run
            for offset in 0..<count {
                result.append(chars[index])
                sources.append(index + offset)
            }
            index = end
        }
        return (result, sources)
    }

    private func match(_ entry: Int, start: Int32, end: Int32) -> TextMatch {
        let e = entries[entry]
        return TextMatch(term: e.term, category: e.category, severity: e.severity, start: Int(start), end: Int(end))
    }

    /// Keeps the longest of overlapping matches.
    private static func dropOverlaps(_ matches: [TextMatch]) -> [TextMatch] {
        let sorted = matches.sorted { ($0.start, -$0.end) < ($1.start, -$1.end) }
        var kept: [TextMatch] = []
        for match in sorted {
            if let last = kept.last, match.start < last.end {
                if match.end > last.end || (match.end == last.end && match.severity > last.severity) { kept[kept.count - 1] = match }
                continue
            }
            kept.append(match)
        }
        return kept
    }

    // MARK: - Verdict

    private func verdict(_ text: String, matches: [TextMatch]) -> TextVerdict {
        let reported = matches.filter { options.actions[$0.severity, default: .block] != .ignore }
        let blocking = reported.filter { options.actions[$0.severity, default: .block] == .block }
        if reported.isEmpty { return TextVerdict(allowed: true, reason: nil, matches: [], censored: text) }
        let censored = Self.censor(text, ranges: reported.map { ($0.start, $0.end) })
        func names(_ list: [TextMatch]) -> String {
            var seen = Set<String>()
            return list.map(\.term).filter { seen.insert($0).inserted }.joined(separator: ", ")
        }
        if blocking.isEmpty {
            return TextVerdict(allowed: true, reason: "Content contains mild language: \(names(reported))", matches: reported, censored: censored)
        }
        return TextVerdict(allowed: false, reason: "Content contains prohibited terms: \(names(blocking))", matches: reported, censored: censored)
    }

    /// Masks every visible character inside the ranges with `*`; invisible ones there are dropped, spaces kept.
    static func censor(_ text: String, ranges: [(Int, Int)]) -> String {
        var result = String.UnicodeScalarView()
        var offset = 0
        var rangeIndex = 0
        for scalar in text.unicodeScalars {
            let width = scalar.utf16.count
            while rangeIndex < ranges.count, ranges[rangeIndex].1 <= offset { rangeIndex += 1 }
            let inside = rangeIndex < ranges.count && offset >= ranges[rangeIndex].0 && offset < ranges[rangeIndex].1
            if inside {
                if scalar.properties.isWhitespace {
                    result.append(scalar)
                } else {
                    switch scalar.properties.generalCategory {
                    case .format, .nonspacingMark, .enclosingMark, .spacingMark, .control: break
                    default: result.append("*")
                    }
                }
            } else {
                result.append(scalar)
            }
            offset += width
        }
        return String(result)
    }

    // MARK: - Hashing

    /// FNV-1a over chars[start..<end].
    static func hash(_ chars: [UInt32], _ start: Int, _ end: Int) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var index = start
        while index < end {
            hash ^= UInt64(chars[index])
            hash = hash &* 0x100_0000_01b3
            index += 1
        }
        return hash
    }
}
