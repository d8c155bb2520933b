import Foundation

/// A list of PDQ hashes as operators exchange them: one 64-hex-character hash per line, or ThreatExchange/HMA
/// CSV rows whose first field is the hash (`hash,…`; a header row naming the columns is skipped). Blank lines and
/// `#` comments are ignored.
public enum BankHashList {
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// 1-based line numbers and what is wrong with each (at most the first 10).
        public var lines: [(line: Int, text: String)]
        public var total: Int

        public var description: String {
            let shown = lines.map { "line \($0.line): \"\($0.text.prefix(80))\" is not a PDQ hash (64 hex characters)" }
            return shown.joined(separator: "; ") + (total > lines.count ? "; and \(total - lines.count) more" : "")
        }

        public static func == (lhs: Problem, rhs: Problem) -> Bool {
            lhs.total == rhs.total && lhs.lines.map(\.line) == rhs.lines.map(\.line)
        }
    }

    static let blanks = CharacterSet(charactersIn: " \t")
    static let quotes = CharacterSet(charactersIn: "\"")

    /// Every hash in `text`, in order, duplicates removed; throws naming the bad lines when any line is not a hash.
    public static func parse(_ text: String) throws(Problem) -> [PDQHash] {
        var hashes: [PDQHash] = []
        var seen = Set<PDQHash>()
        var bad: [(line: Int, text: String)] = []
        var badCount = 0
        var lineNumber = 0
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let line = raw.trimmingCharacters(in: Self.blanks)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let field = line.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first.map {
                $0.trimmingCharacters(in: Self.blanks).trimmingCharacters(in: Self.quotes)
            } ?? ""
            guard let hash = PDQHash(hex: field) else {
                if lineNumber == 1, line.contains(","), field.lowercased().contains("hash") || field.lowercased().contains("signal") { continue }
                badCount += 1
                if bad.count < 10 { bad.append((lineNumber, line)) }
                continue
            }
            if seen.insert(hash).inserted { hashes.append(hash) }
        }
        guard badCount == 0 else { throw Problem(lines: bad, total: badCount) }
        return hashes
    }
}
