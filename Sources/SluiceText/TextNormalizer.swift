import SluiceCore
import Foundation

/// Folds user text to the matcher's normal form while remembering where every folded character came from:
/// NFKC/NFKD compatibility forms (full-width, math alphanumerics, ligatures), case folding, diacritics and
/// combining marks dropped, Latin look-alikes from Cyrillic and Greek mapped, invisible and format characters
/// (zero-width joiners, soft hyphens, bidi controls, control characters other than tab and line breaks) dropped.
enum TextNormalizer {
    enum Kind: UInt8 {
        /// `lookalike`: a Cyrillic or Greek letter (its lowercase form in `char`); read as its Latin twin only in a
        /// word that also has Latin letters, or whose letters are all look-alikes.
        /// `joiner`: an apostrophe inside a word, skipped without ending it ("o'clock").
        /// `drop`: ends a word and is skipped (a clitic such as "'s", "'ll").
        case letter, digit, symbol, separator, drop, lookalike, joiner
    }

    /// One folded character: its scalar value (lowercase), its kind, and the UTF-16 range it came from.
    struct Unit {
        var char: UInt32
        var kind: Kind
        var start: Int32
        var end: Int32
    }

    /// Normal form of a wordlist term or allowlist phrase: folded letters and digits, words separated by one space
    /// (any separator, apostrophes and hyphens included, splits words as it does in messages).
    static func normalizeTerm(_ term: String) -> String {
        var scalars: [Unicode.Scalar] = []
        var pendingSpace = false
        for unit in fold(term) {
            switch unit.kind {
            case .letter, .digit:
                if pendingSpace, !scalars.isEmpty { scalars.append(" ") }
                pendingSpace = false
                if let scalar = Unicode.Scalar(unit.char) { scalars.append(scalar) }
            case .separator:
                // Apostrophes and hyphens split words exactly as they do in messages ("offa's dyke").
                pendingSpace = true
            case .lookalike:
                if pendingSpace, !scalars.isEmpty { scalars.append(" ") }
                pendingSpace = false
                if let scalar = Unicode.Scalar(unit.char) { scalars.append(scalar) }
            case .symbol, .drop, .joiner:
                continue
            }
        }
        var result = ""
        result.unicodeScalars.append(contentsOf: scalars)
        return result
    }

    /// Folds a whole text into units.
    static func fold(_ text: String) -> [Unit] {
        var units: [Unit] = []
        units.reserveCapacity(text.utf8.count)
        var offset: Int32 = 0
        for scalar in text.unicodeScalars {
            let width = Int32(scalar.utf16.count)
            appendFolded(scalar, start: offset, end: offset + width, into: &units)
            offset += width
        }
        units.withUnsafeMutableBufferPointer { markApostrophes($0) }
        return units
    }

    /// Folds ASCII bytes into two bytes per unit (`chars` and `kinds` as long as `bytes`): no Unicode tables,
    /// and a unit's UTF-16 range is its byte offset.
    static func foldASCII(_ bytes: UnsafeBufferPointer<UInt8>, chars: UnsafeMutableBufferPointer<UInt8>,
                          kinds: UnsafeMutableBufferPointer<Kind>) -> ASCIIUnits {
        precondition(chars.count >= bytes.count && kinds.count >= bytes.count, "unit buffers too small")
        var sawApostrophe = false
        asciiTable.withUnsafeBufferPointer { table in
            for offset in bytes.indices {
                let byte = bytes[offset]
                if byte == 0x27 { sawApostrophe = true }
                let entry = table[Int(byte & 0x7F)]
                chars[offset] = entry.char
                kinds[offset] = entry.kind
            }
        }
        let units = ASCIIUnits(chars: UnsafeMutableBufferPointer(rebasing: chars[..<bytes.count]),
                               kinds: UnsafeMutableBufferPointer(rebasing: kinds[..<bytes.count]))
        if sawApostrophe { markApostrophes(units) }
        return units
    }

    static let apostrophe: UInt32 = 0x27
    private static let clitics: [[UInt32]] = ["s", "ll", "re", "ve", "d", "m", "t"].map { Array($0.unicodeScalars.map(\.value)) }

    /// After a letter, an apostrophe plus a clitic ("'s", "'ll", "'re", "'ve", "'d", "'m", "'t") at the end of a
    /// word is dropped; any other apostrophe after a letter is skipped inside the word ("bitchin'", "o'clock").
    static func markApostrophes(_ units: some MutableFoldedUnits) {
        var index = 1
        while index < units.count {
            defer { index += 1 }
            guard units[index].char == apostrophe, units[index].kind == .separator else { continue }
            let before = units[index - 1].kind
            guard before == .letter || before == .lookalike else { continue }
            var end = index + 1
            while end < units.count, units[end].kind == .letter || units[end].kind == .lookalike { end += 1 }
            let suffix = ((index + 1)..<end).lazy.map { units[$0].char }
            let wordEnds = end == units.count || (units[end].kind != .digit && units[end].kind != .symbol)
            if wordEnds, clitics.contains(where: { $0.elementsEqual(suffix) }) {
                for position in index..<end { units.setKind(.drop, at: position) }
                index = end - 1
            } else {
                units.setKind(.joiner, at: index)
            }
        }
    }

    /// A control character that shows nothing: C0 other than tab and line breaks (U+0009–U+000D), DEL, and C1 other
    /// than NEL (U+0085, a line break). Read as part of the character before it, like a zero-width joiner, so
    /// "fu\u{1}ck" and "sh!\u{1}t" are one word (as separators they split it).
    static func isInvisibleControl(_ value: UInt32) -> Bool {
        value < 0x09 || (0x0E...0x1F).contains(value) || value == 0x7F || ((0x80...0x9F).contains(value) && value != 0x85)
    }

    /// An invisible character belongs to the character right before it (not a separator), so a match (and its
    /// censoring) covers it; with none before it, it is dropped.
    private static func joinPrevious(end: Int32, start: Int32, units: inout [Unit]) {
        if let last = units.indices.last, units[last].end == start, units[last].kind != .separator { units[last].end = end }
    }

    private static func appendFolded(_ scalar: Unicode.Scalar, start: Int32, end: Int32, into units: inout [Unit]) {
        if isInvisibleControl(scalar.value) {
            joinPrevious(end: end, start: start, units: &units)
            return
        }
        if scalar.isASCII {
            let entry = asciiTable[Int(scalar.value)]
            units.append(Unit(char: UInt32(entry.char), kind: entry.kind, start: start, end: end))
            return
        }
        if [0x2019, 0x2018, 0x02BC, 0x00B4].contains(scalar.value) {
            units.append(Unit(char: apostrophe, kind: .separator, start: start, end: end))
            return
        }
        if isCyrillicOrGreek(scalar.value) {
            let lower = scalar.properties.lowercaseMapping.unicodeScalars.first?.value ?? scalar.value
            if confusables[lower] != nil || confusables[scalar.value] != nil {
                units.append(Unit(char: lower, kind: .lookalike, start: start, end: end))
                return
            }
        } else if let mapped = confusables[scalar.value] {
            units.append(Unit(char: UInt32(mapped), kind: .letter, start: start, end: end))
            return
        }
        let properties = scalar.properties
        switch properties.generalCategory {
        case .format, .nonspacingMark, .enclosingMark, .spacingMark, .control, .unassigned, .privateUse, .surrogate:
            if properties.generalCategory == .control {
                // NEL (U+0085), the one control left here (the others are invisible, above): a line break.
                units.append(Unit(char: 0x20, kind: .separator, start: start, end: end))
            } else {
                // Invisible: zero-width joiners, soft hyphen, bidi controls, combining marks (diacritics, zalgo).
                joinPrevious(end: end, start: start, units: &units)
            }
            return
        case .spaceSeparator, .lineSeparator, .paragraphSeparator:
            units.append(Unit(char: 0x20, kind: .separator, start: start, end: end))
            return
        default:
            break
        }
        if properties.isVariationSelector || properties.isDefaultIgnorableCodePoint { return }
        // Compatibility decomposition: full-width, math alphanumerics, ligatures, accented letters.
        let decomposed = String(scalar).decomposedStringWithCompatibilityMapping
        var produced = false
        for part in decomposed.unicodeScalars {
            if part.isASCII {
                let entry = asciiTable[Int(part.value)]
                if entry.kind == .drop { continue }
                units.append(Unit(char: UInt32(entry.char), kind: entry.kind, start: start, end: end))
                produced = true
                continue
            }
            if let mapped = confusables[part.value], !isCyrillicOrGreek(part.value) {
                units.append(Unit(char: UInt32(mapped), kind: .letter, start: start, end: end))
                produced = true
                continue
            }
            let partProperties = part.properties
            switch partProperties.generalCategory {
            case .nonspacingMark, .enclosingMark, .spacingMark, .format:
                continue
            default:
                break
            }
            if partProperties.isAlphabetic {
                for lower in partProperties.lowercaseMapping.unicodeScalars {
                    if lower.value == 0xDF { // ß folds to ss
                        units.append(Unit(char: 0x73, kind: .letter, start: start, end: end))
                        units.append(Unit(char: 0x73, kind: .letter, start: start, end: end))
                    } else if let mapped = confusables[lower.value], !isCyrillicOrGreek(lower.value) {
                        units.append(Unit(char: UInt32(mapped), kind: .letter, start: start, end: end))
                    } else {
                        units.append(Unit(char: lower.value, kind: .letter, start: start, end: end))
                    }
                }
                produced = true
            } else if partProperties.numericType != nil {
                units.append(Unit(char: part.value, kind: .symbol, start: start, end: end))
                produced = true
            } else if let leet = leetSymbols[part.value] {
                units.append(Unit(char: UInt32(leet), kind: .symbol, start: start, end: end))
                produced = true
            }
        }
        if !produced { units.append(Unit(char: 0x20, kind: .separator, start: start, end: end)) }
    }

    struct ASCIIEntry {
        var char: UInt8
        var kind: Kind
    }

    /// Per ASCII byte: lowercase letters, digits, leet-capable symbols, separators.
    static let asciiTable: [ASCIIEntry] = (0..<128).map { value -> ASCIIEntry in
        let byte = UInt8(value)
        switch byte {
        case 0x41...0x5A: return ASCIIEntry(char: byte + 0x20, kind: .letter)
        case 0x61...0x7A: return ASCIIEntry(char: byte, kind: .letter)
        case 0x30...0x39: return ASCIIEntry(char: byte, kind: .digit)
        case UInt8(ascii: "@"), UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "|"), UInt8(ascii: "+"),
             UInt8(ascii: "("), UInt8(ascii: "*"):
            return ASCIIEntry(char: byte, kind: .symbol)
        default: return ASCIIEntry(char: UInt8(ascii: " ") == byte ? byte : byte, kind: .separator)
        }
    }

    static func isCyrillicOrGreek(_ value: UInt32) -> Bool {
        (0x0370...0x03FF).contains(value) || (0x0400...0x052F).contains(value) || (0x1F00...0x1FFF).contains(value)
    }

    /// The Latin twin of a look-alike letter.
    static func latinTwin(_ value: UInt32) -> UInt32? { confusables[value].map(UInt32.init) }

    /// What a leet character stands for inside a word with letters in it.
    static func leet(_ char: UInt32) -> UInt32? {
        switch char {
        case 0x30: 0x6F // 0 → o
        case 0x31: 0x69 // 1 → i
        case 0x33: 0x65 // 3 → e
        case 0x34: 0x61 // 4 → a
        case 0x35: 0x73 // 5 → s
        case 0x37: 0x74 // 7 → t
        case 0x38: 0x62 // 8 → b
        case 0x39: 0x67 // 9 → g
        case 0x40: 0x61 // @ → a
        case 0x24: 0x73 // $ → s
        case 0x21, 0x7C: 0x69 // ! | → i
        case 0x2B: 0x74 // + → t
        case 0x28: 0x63 // ( → c
        case 0x20AC: 0x65 // € → e
        default: nil
        }
    }

    /// Non-ASCII symbols that stand for a leet character.
    static let leetSymbols: [UInt32: UInt8] = [0x20AC: 0x65, 0xA3: 0x6C, 0xA5: 0x79, 0xA7: 0x73, 0xA2: 0x63]

    /// Latin look-alikes: Cyrillic, Greek, IPA and Latin-extended letters that read as a-z.
    static let confusables: [UInt32: UInt8] = {
        let pairs: [(String, Character)] = [
            ("аАɑα", "a"), ("вВβ", "b"), ("сСϲς", "c"), ("ԁ", "d"), ("еЕёЁεΕ", "e"), ("ƒϝ", "f"), ("ɡ", "g"),
            ("һнНΗ", "h"), ("іІїЇιΙɩ", "i"), ("јЈϳ", "j"), ("кКκΚ", "k"), ("ӏΙ", "l"), ("мМΜ", "m"),
            ("пηΝ", "n"), ("оОοΟσ", "o"), ("рРρΡ", "p"), ("ԛ", "q"), ("г", "r"), ("ѕЅ", "s"), ("тТτΤ", "t"),
            ("υμ", "u"), ("νѵ", "v"), ("ԝѡω", "w"), ("хХχΧ", "x"), ("уУγΥ", "y"), ("ΖΖ", "z"),
        ]
        var table: [UInt32: UInt8] = [:]
        for (sources, target) in pairs {
            for scalar in sources.unicodeScalars { table[scalar.value] = target.asciiValue ?? 0x3F }
        }
        return table
    }()
}

/// Folded units as the tokenizer and matcher read them: a unit's letter, kind and UTF-16 range.
protocol FoldedUnits {
    var count: Int { get }
    subscript(_ position: Int) -> TextNormalizer.Unit { get }
}

/// Folded units whose kinds can be rewritten in place (apostrophes).
protocol MutableFoldedUnits: FoldedUnits {
    func setKind(_ kind: TextNormalizer.Kind, at position: Int)
}

extension UnsafeBufferPointer: FoldedUnits where Element == TextNormalizer.Unit {}

extension UnsafeMutableBufferPointer: FoldedUnits, MutableFoldedUnits where Element == TextNormalizer.Unit {
    func setKind(_ kind: TextNormalizer.Kind, at position: Int) { self[position].kind = kind }
}

/// An ASCII message's units at two bytes each (folded letter and kind); unit `i` came from UTF-16 offset `i`.
struct ASCIIUnits: MutableFoldedUnits {
    let chars: UnsafeMutableBufferPointer<UInt8>
    let kinds: UnsafeMutableBufferPointer<TextNormalizer.Kind>

    var count: Int { chars.count }

    subscript(_ position: Int) -> TextNormalizer.Unit {
        TextNormalizer.Unit(char: UInt32(chars[position]), kind: kinds[position], start: Int32(truncatingIfNeeded: position),
                            end: Int32(truncatingIfNeeded: position &+ 1))
    }

    func setKind(_ kind: TextNormalizer.Kind, at position: Int) { kinds[position] = kind }
}
