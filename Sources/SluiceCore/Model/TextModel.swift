/// How bad a listed term is; pipeline.json maps each level to an action.
public enum Severity: String, Sendable, Codable, CaseIterable, Comparable {
    case mild, strong, severe, slur

    var rank: Int {
        switch self {
        case .mild: 0
        case .strong: 1
        case .severe: 2
        case .slur: 3
        }
    }

    public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
}

/// One listed term found in a message. `start` and `end` are UTF-16 offsets into the original text
/// (as NSString, JavaScript and the seed iOS clients count), end exclusive.
public struct TextMatch: Sendable, Codable, Equatable {
    public var term: String
    public var category: String
    public var severity: Severity
    public var start: Int
    public var end: Int

    public init(term: String, category: String, severity: Severity, start: Int, end: Int) {
        self.term = term
        self.category = category
        self.severity = severity
        self.start = start
        self.end = end
    }
}

/// The filter's answer for one message.
public struct TextVerdict: Sendable, Codable, Equatable {
    public var allowed: Bool
    /// Seed wording: "Content contains prohibited terms: …" when blocked; nil when nothing was found.
    public var reason: String?
    public var matches: [TextMatch]
    /// The text with every reported match masked.
    public var censored: String
    /// The text classifier's scores and action (`text.classifier`), when one judged the message.
    public var classifier: TextClassification?

    public init(allowed: Bool, reason: String?, matches: [TextMatch], censored: String, classifier: TextClassification? = nil) {
        self.allowed = allowed
        self.reason = reason
        self.matches = matches
        self.censored = censored
        self.classifier = classifier
    }

    enum CodingKeys: String, CodingKey { case allowed, reason, matches, censored, classifier }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allowed, forKey: .allowed)
        try c.encode(reason, forKey: .reason)
        try c.encode(matches, forKey: .matches)
        try c.encode(censored, forKey: .censored)
        try c.encodeIfPresent(classifier, forKey: .classifier)
    }
}

/// Text that cannot be judged; `message` says why.
public struct TextInputError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable { case empty, tooLong, invalidUTF8 }
    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
