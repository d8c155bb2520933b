import SluiceCore
import Foundation

/// Terms and innocent words loaded from Wordlists/ (TSV: term, severity, category, match) and allowlists
/// (one word or phrase per line).
public struct Wordlist: Sendable {
    public var entries: [WordlistEntry]
    public var allowed: [String]

    public init(entries: [WordlistEntry] = [], allowed: [String] = []) {
        self.entries = entries
        self.allowed = allowed
    }

    /// Parses a wordlist file; `source` names it in errors.
    public static func parseTerms(_ text: String, source: String) throws(WordlistError) -> [WordlistEntry] {
        var entries: [WordlistEntry] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
            if line.isEmpty || line.hasPrefix("#") { continue }
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard columns.count == 4 else {
                throw WordlistError(source: source, line: index + 1, message: "expected 4 tab-separated columns (term, severity, category, match), found \(columns.count)")
            }
            let term = TextNormalizer.normalizeTerm(columns[0])
            guard !term.isEmpty else { throw WordlistError(source: source, line: index + 1, message: "term \"\(columns[0])\" is empty once normalised") }
            guard let severity = Severity(rawValue: columns[1]) else {
                throw WordlistError(source: source, line: index + 1, message: "severity \"\(columns[1])\" is not one of mild, strong, severe, slur")
            }
            guard let match = MatchKind(rawValue: columns[3]) else {
                throw WordlistError(source: source, line: index + 1, message: "match \"\(columns[3])\" is not one of word, compound")
            }
            entries.append(WordlistEntry(term: term, severity: severity, category: columns[2].isEmpty ? "other" : columns[2], match: match))
        }
        return entries
    }

    public static func parseAllowlist(_ text: String) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r"))) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
            .map(TextNormalizer.normalizeTerm)
            .filter { !$0.isEmpty }
    }

    /// Loads `{language}.tsv` and `allowlist-{language}.txt` (if present) for each language from `directory`,
    /// then the extra files. A term of the operator's own wordlists is not kept off by the built-in allowlists
    /// (they protect the built-in terms' innocent look-alikes; an operator who lists "hello" means it) — only by the
    /// operator's own allowlists.
    public static func load(directory: URL, languages: [String], extraWordlists: [URL] = [],
                            extraAllowlists: [URL] = []) throws(WordlistError) -> Wordlist {
        var list = Wordlist()
        for language in languages {
            let file = directory.appendingPathComponent("\(language).tsv")
            list.entries += try parseTerms(try read(file), source: file.path)
            let allow = directory.appendingPathComponent("allowlist-\(language).txt")
            if FileManager.default.fileExists(atPath: allow.path) { list.allowed += parseAllowlist(try read(allow)) }
        }
        var operatorTerms = Set<String>()
        for file in extraWordlists {
            let entries = try parseTerms(try read(file), source: file.path)
            operatorTerms.formUnion(entries.map(\.term))
            list.entries += entries
        }
        if !operatorTerms.isEmpty { list.allowed.removeAll { operatorTerms.contains($0) } }
        for file in extraAllowlists { list.allowed += parseAllowlist(try read(file)) }
        return list
    }

    private static func read(_ file: URL) throws(WordlistError) -> String {
        do {
            return try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw WordlistError(source: file.path, line: nil, message: "cannot read: \((error as NSError).localizedDescription)")
        }
    }
}

public struct WordlistError: Error, Sendable, CustomStringConvertible {
    public var source: String
    public var line: Int?
    public var message: String

    public var description: String { "wordlist \(source)\(line.map { " line \($0)" } ?? ""): \(message)" }
}
