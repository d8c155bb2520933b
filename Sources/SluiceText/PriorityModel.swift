import Foundation
import SluiceCore

/// A linear band classifier read from `Wordlists/priority-{language}.model.json`, as `scripts/train-priority-model`
/// trains it with scikit-learn: TF-IDF over word 1–2-grams and over character 3–5-grams inside words (`char_wb`) of
/// the message and its context, and over word 1–2-grams of the message alone when it follows a context (so "sorted"
/// after an alarm can weigh otherwise than "sorted" on its own), each part L2-normalised, then multinomial logistic
/// regression. The features are computed here exactly as
/// scikit-learn computes them (lowercase, `\w\w+` words, words padded with a space for character n-grams,
/// `1 + ln(tf)`), so a message gets the band the training script reports (`Tests/Fixtures/priority/model-expected.jsonl`).
public struct PriorityModel: Sendable {
    /// One vectorizer: the column of each term (by the FNV-1a hash of its scalars: no string is made per n-gram of a
    /// message), its idf, and its weight per band.
    struct Part: Sendable {
        var columns: [UInt64: Int32]
        var idf: [Double]
        /// `weights[column * bands.count + band]`.
        var weights: [Double]
    }

    public let bands: [String]
    let intercepts: [Double]
    let words: Part
    let chars: Part
    /// Words of the message itself, only when it has a context.
    let followUpWords: Part

    private struct File: Decodable {
        struct Part: Decodable {
            var terms: [String]
            var idf: [Double]
            var weights: [[Double]]
        }

        var bands: [String]
        var intercepts: [Double]
        var words: Part
        var chars: Part
        var followUpWords: Part
    }

    /// Loads `priority-{language}.model.json` from the wordlists folder.
    public static func load(directory: URL, language: String) throws(WordlistError) -> PriorityModel {
        let url = directory.appendingPathComponent("priority-\(language).model.json")
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        } catch {
            throw WordlistError(source: url.path, line: nil,
                                message: "cannot read the priority model (make it with scripts/train-priority-model): \(error)")
        }
        func part(_ part: File.Part, _ name: String) throws(WordlistError) -> Part {
            guard part.terms.count == part.idf.count, part.terms.count == part.weights.count,
                  part.weights.allSatisfy({ $0.count == file.bands.count }) else {
                throw WordlistError(source: url.path, line: nil,
                                    message: "\(name): \(part.terms.count) terms, \(part.idf.count) idf values and \(part.weights.count) weight rows of \(file.bands.count) bands do not agree")
            }
            var columns: [UInt64: Int32] = [:]
            columns.reserveCapacity(part.terms.count)
            for (column, term) in part.terms.enumerated() {
                var hash = Self.fnvStart
                for scalar in term.unicodeScalars { Self.fnv(&hash, scalar) }
                guard columns.updateValue(Int32(column), forKey: hash) == nil else {
                    throw WordlistError(source: url.path, line: nil, message: "\(name): two terms share a hash (\(term))")
                }
            }
            return Part(columns: columns, idf: part.idf, weights: part.weights.flatMap { $0 })
        }
        guard file.intercepts.count == file.bands.count else {
            throw WordlistError(source: url.path, line: nil, message: "bands and intercepts do not agree")
        }
        guard file.bands.sorted() == ["high", "low", "medium"] else {
            throw WordlistError(source: url.path, line: nil, message: "bands must be high, medium and low, not \(file.bands)")
        }
        return PriorityModel(bands: file.bands, intercepts: file.intercepts, words: try part(file.words, "words"),
                             chars: try part(file.chars, "chars"), followUpWords: try part(file.followUpWords, "followUpWords"))
    }

    /// The text the model reads: the message, then its conversation context when there is one.
    static func document(_ text: String, context: String?) -> String {
        guard let context, !context.isEmpty else { return text }
        return text + " || " + context
    }

    /// Each band's probability, in `bands` order.
    public func probabilities(_ text: String, context: String?) -> [Double] {
        let document = Self.lowercased(Self.document(text, context: context))
        var scores = intercepts
        var columns: [Int32] = []
        columns.reserveCapacity(document.count * 3)
        Self.wordGrams(document) { hash in if let column = words.columns[hash] { columns.append(column) } }
        add(words, &columns, to: &scores)
        Self.charGrams(document) { hash in if let column = chars.columns[hash] { columns.append(column) } }
        add(chars, &columns, to: &scores)
        if let context, !context.isEmpty {
            Self.wordGrams(Self.lowercased(text)) { hash in if let column = followUpWords.columns[hash] { columns.append(column) } }
            add(followUpWords, &columns, to: &scores)
        }
        let top = scores.max() ?? 0
        let exponentials = scores.map { exp($0 - top) }
        let sum = exponentials.reduce(0, +)
        return exponentials.map { $0 / sum }
    }

    /// The most probable band and its probabilities.
    public func band(_ text: String, context: String?) -> (band: String, probabilities: [Double]) {
        let probabilities = probabilities(text, context: context)
        let best = probabilities.indices.max { probabilities[$0] < probabilities[$1] } ?? 0
        return (bands[best], probabilities)
    }

    /// TF-IDF of the columns found (one entry per occurrence), L2-normalised, times the weights; empties `columns`.
    private func add(_ part: Part, _ columns: inout [Int32], to scores: inout [Double]) {
        defer { columns.removeAll(keepingCapacity: true) }
        guard !columns.isEmpty else { return }
        columns.sort()
        var values: [(column: Int, value: Double)] = []
        var start = 0
        while start < columns.count {
            var end = start + 1
            while end < columns.count, columns[end] == columns[start] { end += 1 }
            let column = Int(columns[start])
            values.append((column, (1 + log(Double(end - start))) * part.idf[column]))
            start = end
        }
        let norm = sqrt(values.reduce(0) { $0 + $1.value * $1.value })
        guard norm > 0 else { return }
        let bands = scores.count
        for (column, value) in values {
            for band in 0..<bands { scores[band] += value / norm * part.weights[column * bands + band] }
        }
    }

    /// Python's `str.lower()`, which scikit-learn applies: each scalar's lowercase mapping, except that a capital
    /// sigma ending a word (after a cased letter, with none after it; case-ignorable characters skipped) becomes
    /// final sigma (ς), as Unicode's Final_Sigma rule says and Swift's `lowercased()` does not do.
    public static func lowercased(_ text: String) -> [Unicode.Scalar] {
        let scalars = Array(text.unicodeScalars)
        var result: [Unicode.Scalar] = []
        result.reserveCapacity(scalars.count)
        func casedNeighbour(from start: Int, step: Int) -> Bool {
            var index = start
            while index >= 0, index < scalars.count {
                let properties = scalars[index].properties
                if !properties.isCaseIgnorable { return properties.isCased }
                index += step
            }
            return false
        }
        for (index, scalar) in scalars.enumerated() {
            if scalar.isASCII {
                let value = scalar.value
                result.append(value >= 0x41 && value <= 0x5A ? Unicode.Scalar(UInt8(value + 0x20)) : scalar)
            } else if scalar.value == 0x03A3, casedNeighbour(from: index - 1, step: -1), !casedNeighbour(from: index + 1, step: 1) {
                result.append("\u{03C2}")
            } else {
                result.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars)
            }
        }
        return result
    }

    static let fnvStart: UInt64 = 0xcbf2_9ce4_8422_2325

    static func fnv(_ hash: inout UInt64, _ scalar: Unicode.Scalar) {
        hash ^= UInt64(scalar.value)
        hash = hash &* 0x100_0000_01b3
    }

    /// Python's `\w` (`str.isalnum()` or `_`), which scikit-learn's default token pattern uses.
    static func isWordCharacter(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            let value = scalar.value
            return (value >= 0x30 && value <= 0x39) || (value >= 0x61 && value <= 0x7A) || (value >= 0x41 && value <= 0x5A) || value == 0x5F
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
        default: return scalar.properties.numericType != nil
        }
    }

    /// Python's `str.isspace()`: Unicode white space plus the information separators U+001C–U+001F.
    static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return scalar.value == 0x20 || (0x09...0x0D).contains(scalar.value) || (0x1C...0x1F).contains(scalar.value) }
        return scalar.properties.isWhitespace
    }

    /// Hashes of the words of two or more word characters (`(?u)\b\w\w+\b`), then of every pair of neighbours
    /// joined by a space.
    static func wordGrams(_ document: [Unicode.Scalar], _ found: (UInt64) -> Void) {
        var tokens: [Range<Int>] = []
        var start = -1
        for index in 0...document.count {
            let inWord = index < document.count && isWordCharacter(document[index])
            if inWord, start < 0 { start = index }
            if !inWord, start >= 0 {
                if index - start >= 2 { tokens.append(start..<index) }
                start = -1
            }
        }
        var previous: UInt64 = 0
        for (position, token) in tokens.enumerated() {
            var hash = fnvStart
            for index in token { fnv(&hash, document[index]) }
            found(hash)
            if position > 0 {
                var pair = previous
                fnv(&pair, " ")
                for index in token { fnv(&pair, document[index]) }
                found(pair)
            }
            previous = hash
        }
    }

    /// Hashes of scikit-learn's `char_wb` 3–5-grams: each whitespace-separated word padded with a space on both
    /// sides; a word shorter than an n-gram gives itself once and no longer grams.
    static func charGrams(_ document: [Unicode.Scalar], _ found: (UInt64) -> Void) {
        var padded: [Unicode.Scalar] = []
        var start = -1
        func take(_ word: Range<Int>) {
            padded.removeAll(keepingCapacity: true)
            padded.append(" ")
            padded.append(contentsOf: document[word])
            padded.append(" ")
            for size in 3...5 {
                var offset = 0
                while true {
                    var hash = fnvStart
                    for index in offset..<min(offset + size, padded.count) { fnv(&hash, padded[index]) }
                    found(hash)
                    guard offset + size < padded.count else { break }
                    offset += 1
                }
                if offset == 0 { break }
            }
        }
        for index in 0...document.count {
            let inWord = index < document.count && !isSpace(document[index])
            if inWord, start < 0 { start = index }
            if !inWord, start >= 0 {
                take(start..<index)
                start = -1
            }
        }
    }
}
