import SluiceCore

/// Whether a term matches only as a whole word, or also glued inside a longer word.
public enum MatchKind: String, Sendable, Codable {
    case word, compound
}

/// One wordlist line.
public struct WordlistEntry: Sendable, Equatable {
    public var term: String
    public var severity: Severity
    public var category: String
    public var match: MatchKind

    public init(term: String, severity: Severity, category: String, match: MatchKind) {
        self.term = term
        self.severity = severity
        self.category = category
        self.match = match
    }
}

