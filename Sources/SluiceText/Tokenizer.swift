import SluiceCore
/// One word of the folded text, as ranges into flat buffers (no per-word allocation).
struct TokenSpan {
    /// Range in `TokenBuffer.chars` (and `charUnits`).
    var charStart: Int32
    var charEnd: Int32
    /// Range of folded units the word covers (for UTF-16 offsets).
    var unitStart: Int32
    var unitEnd: Int32
    var hash: UInt64
    /// Leet symbols right after the word that were not taken into it ("a$$"): tried only when the word alone
    /// matches nothing, so "shit!" stays "shit".
    var trailing: Int32 = 0
    /// Longest run of one repeated character (1 when none repeat).
    var longestRun: Int32 = 1
    /// Whether a '*' may be among the letters (a masked letter to try); false only when the tokenizer saw none.
    var mayHaveStar = true
    /// The compound automaton run over the word as the tokenizer wrote it: the state of its first hit and the
    /// offset after it (state 0: no compound root in the word), or -1 when not run for this span.
    var compoundState: Int32 = -1
    var compoundEnd: Int32 = 0

    var length: Int { Int(charEnd - charStart) }
}

/// Words of a message: letters after leetspeak in one flat buffer, the unit each letter came from, and spans.
/// Views into scratch memory that lives for one check.
struct TokenView {
    var chars: UnsafeBufferPointer<UInt32>
    var charUnits: UnsafeBufferPointer<Int32>
    var words: UnsafeBufferPointer<TokenSpan>
}

/// Cuts folded units into words: letters and digits, plus leet symbols with a letter or digit after them
/// ("$hit", "sh!t"). Inside a word that has letters, digits and symbols read as letters ("sh1t", "a55").
/// Three or more single letters split by one separator each are joined ("f u c k", "f.u.c.k").
enum Tokenizer {
    /// Most spans `units` folded units can make: every word but the last needs a unit after it.
    static func spanCapacity(units count: Int) -> Int { count / 2 + 2 }

    /// Cuts `units` into words written to the scratch buffers (`chars` and `charUnits` hold `units.count`);
    /// the view covers what this message wrote. Nil when the message has more words than `spans` holds (never
    /// with `spanCapacity(units:)`).
    static func tokens<Units: FoldedUnits>(_ units: Units, compounds: AhoCorasick.Stepper, chars: UnsafeMutableBufferPointer<UInt32>,
                                           charUnits: UnsafeMutableBufferPointer<Int32>,
                                           spans: UnsafeMutableBufferPointer<TokenSpan>) -> TokenView? {
        precondition(chars.count >= units.count && charUnits.count >= units.count, "token scratch buffers too small")
        var charCount = 0
        var spanCount = 0
        guard scan(units, compounds: compounds, chars: chars, charUnits: charUnits, spans: spans, charCount: &charCount, spanCount: &spanCount) else {
            return nil
        }
        return TokenView(chars: UnsafeBufferPointer(rebasing: chars[..<charCount]),
                         charUnits: UnsafeBufferPointer(rebasing: charUnits[..<charCount]),
                         words: UnsafeBufferPointer(rebasing: spans[..<spanCount]))
    }

    /// False when `spans` is full before the message ends.
    private static func scan<Units: FoldedUnits>(_ units: Units, compounds: AhoCorasick.Stepper, chars: UnsafeMutableBufferPointer<UInt32>,
                                                 charUnits: UnsafeMutableBufferPointer<Int32>, spans: UnsafeMutableBufferPointer<TokenSpan>,
                                                 charCount: inout Int, spanCount: inout Int) -> Bool {
        let count = units.count
        var index = 0
        // Start of a pending run of one-letter words to join, or -1.
        var singlesStart = -1

        func isWordPart(_ position: Int) -> Bool {
            let kind = units[position].kind
            return kind == .letter || kind == .digit || kind == .lookalike
        }

        func joinSingles(upTo end: Int) {
            // spans[singlesStart..<end] are one-letter words with contiguous chars.
            if end - singlesStart >= 3 {
                let first = spans[singlesStart]
                let last = spans[end - 1]
                var hash: UInt64 = 0xcbf2_9ce4_8422_2325
                for position in Int(first.charStart)..<Int(last.charEnd) {
                    hash ^= UInt64(chars[position])
                    hash = hash &* 0x100_0000_01b3
                }
                var longest: Int32 = 1
                var run: Int32 = 1
                for position in (Int(first.charStart) + 1)..<Int(last.charEnd) {
                    run = chars[position] == chars[position - 1] ? run + 1 : 1
                    longest = max(longest, run)
                }
                spans[singlesStart] = TokenSpan(charStart: first.charStart, charEnd: last.charEnd, unitStart: first.unitStart,
                                                unitEnd: last.unitEnd, hash: hash, trailing: 0, longestRun: longest)
                // Move anything after the run down.
                var from = end
                var to = singlesStart + 1
                while from < spanCount {
                    spans[to] = spans[from]
                    to += 1
                    from += 1
                }
                spanCount = to
            }
        }

        func isLeetSymbol(_ position: Int) -> Bool {
            // '*' masks a letter ("f**k"): it stays '*' in the word, and the filter tries the letters it may hide.
            units[position].kind == .symbol && (TextNormalizer.leet(units[position].char) != nil || units[position].char == 0x2A)
        }

        while index < count {
            let startKind = units[index].kind
            let starts = startKind == .letter || startKind == .digit || startKind == .lookalike
                || (startKind == .symbol && index + 1 < count && isWordPart(index + 1))
            guard starts else {
                // A free-standing run of three or more leet symbols is a word too ("@$$").
                if startKind == .symbol, index == 0 || units[index - 1].kind == .separator {
                    var end = index
                    while end < count, isLeetSymbol(end) { end += 1 }
                    if end - index >= 3, end == count || units[end].kind == .separator {
                        guard spanCount < spans.count else { return false }
                        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
                        let charStart = charCount
                        for position in index..<end {
                            let mapped = TextNormalizer.leet(units[position].char) ?? units[position].char
                            chars[charCount] = mapped
                            charUnits[charCount] = Int32(position)
                            charCount += 1
                            hash ^= UInt64(mapped)
                            hash = hash &* 0x100_0000_01b3
                        }
                        spans[spanCount] = TokenSpan(charStart: Int32(charStart), charEnd: Int32(charCount),
                                                     unitStart: Int32(index), unitEnd: Int32(end), hash: hash,
                                                     longestRun: Int32(end - index))
                        spanCount += 1
                        singlesStart = -1
                        index = end
                        continue
                    }
                }
                index += 1
                continue
            }
            let charStart = charCount
            var hasLetter = false
            var hasOther = false
            var lookalikes = 0
            var latinLetters = 0
            var otherLetters = 0
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            var longestRun: Int32 = 1
            var run: Int32 = 1
            var previous: UInt32 = 0xFFFF_FFFF
            var hasStar = false
            // The compound automaton, stepped while the word is plain a–z letters and has no hit yet.
            var automaton: Int32 = 0
            var automatonRuns = true
            var compoundState: Int32 = 0
            var compoundEnd: Int32 = 0
            var end = index
            while end < count {
                let unit = units[end]
                if unit.kind == .letter {
                    hasLetter = true
                    if unit.char >= 0x61 && unit.char <= 0x7A { latinLetters += 1 } else { otherLetters += 1 }
                } else if unit.kind == .lookalike {
                    hasLetter = true
                    lookalikes += 1
                } else if unit.kind == .joiner {
                    end += 1
                    continue
                } else if unit.kind == .symbol {
                    // A symbol continues the word only when a letter or digit comes right after it, or when it starts
                    // a run of up to three leet symbols inside the word ("a$$hole", "pu$$y").
                    if !(end + 1 < count && isWordPart(end + 1)) {
                        guard charCount > charStart, isLeetSymbol(end) else { break }
                        var runEnd = end + 1
                        while runEnd < count, runEnd - end < 3, isLeetSymbol(runEnd) { runEnd += 1 }
                        guard runEnd < count, isWordPart(runEnd) else { break }
                    }
                    hasOther = true
                    if unit.char == 0x2A { hasStar = true }
                } else if unit.kind == .digit {
                    hasOther = true
                } else {
                    break
                }
                chars[charCount] = unit.char
                charUnits[charCount] = Int32(end)
                if unit.char == previous {
                    run += 1
                    if run > longestRun { longestRun = run }
                } else {
                    run = 1
                    previous = unit.char
                }
                hash ^= UInt64(unit.char)
                hash = hash &* 0x100_0000_01b3
                if automatonRuns {
                    let letter = unit.char &- 0x61
                    if letter < 26 {
                        automaton = compounds.step(automaton, letter)
                        if compounds.hasOutput(automaton) {
                            compoundState = automaton
                            compoundEnd = Int32(charCount + 1 - charStart)
                            automatonRuns = false
                        }
                    } else {
                        automatonRuns = false
                    }
                }
                charCount += 1
                end += 1
            }
            if lookalikes > 0, latinLetters > 0 || otherLetters == 0 {
                // Mixed with Latin letters, or made only of look-alikes: an evasion, read as Latin.
                for position in charStart..<charCount {
                    if let twin = TextNormalizer.latinTwin(chars[position]), TextNormalizer.isCyrillicOrGreek(chars[position]) {
                        chars[position] = twin
                    }
                }
                hasOther = true // forces the rehash below
            }
            if hasLetter && hasOther {
                // Leetspeak inside a word with letters: read digits and symbols as letters, and rehash.
                hash = 0xcbf2_9ce4_8422_2325
                longestRun = 1
                run = 1
                automaton = 0
                automatonRuns = true
                compoundState = 0
                compoundEnd = 0
                for position in charStart..<charCount {
                    if let mapped = TextNormalizer.leet(chars[position]) { chars[position] = mapped }
                    if automatonRuns {
                        let letter = chars[position] &- 0x61
                        if letter < 26 {
                            automaton = compounds.step(automaton, letter)
                            if compounds.hasOutput(automaton) {
                                compoundState = automaton
                                compoundEnd = Int32(position + 1 - charStart)
                                automatonRuns = false
                            }
                        } else {
                            automatonRuns = false
                        }
                    }
                    if position > charStart, chars[position] == chars[position - 1] {
                        run += 1
                        if run > longestRun { longestRun = run }
                    } else {
                        run = 1
                    }
                    hash ^= UInt64(chars[position])
                    hash = hash &* 0x100_0000_01b3
                }
            }
            guard spanCount < spans.count else { return false }
            var trailing = end
            if hasLetter {
                while trailing < count, isLeetSymbol(trailing) { trailing += 1 }
                if trailing < count, units[trailing].kind != .separator { trailing = end }
            }
            spans[spanCount] = TokenSpan(charStart: Int32(charStart), charEnd: Int32(charCount),
                                         unitStart: Int32(index), unitEnd: Int32(end), hash: hash, trailing: Int32(trailing - end),
                                         longestRun: longestRun, mayHaveStar: hasStar, compoundState: compoundState,
                                         compoundEnd: compoundEnd)
            spanCount += 1
            // Runs of one-letter words split by exactly one separator ("f u c k", "f.u.c.k").
            let isSingle = charCount - charStart == 1 && isLetterLike(chars[charStart])
            if isSingle {
                if singlesStart >= 0 {
                    let previous = spans[spanCount - 2]
                    let gapOK = Int(spans[spanCount - 1].unitStart - previous.unitEnd) == 1 && units[Int(previous.unitEnd)].char != 0x0A
                    if !gapOK {
                        joinSingles(upTo: spanCount - 1)
                        singlesStart = spanCount - 1
                    }
                } else {
                    singlesStart = spanCount - 1
                }
            } else if singlesStart >= 0 {
                joinSingles(upTo: spanCount - 1)
                singlesStart = -1
            }
            index = end
        }
        if singlesStart >= 0 { joinSingles(upTo: spanCount) }
        return true
    }

    private static func isLetterLike(_ char: UInt32) -> Bool { char >= 0x61 && char <= 0x7A || char > 0x7F }
}
