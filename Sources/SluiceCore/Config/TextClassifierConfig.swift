import Foundation

/// `text.classifier`: a second opinion on messages the wordlists allow.
public enum TextClassifierKind: String, ConfigChoice {
    /// Wordlists only.
    case none
    /// OpenAI's moderation endpoint (`omni-moderation-latest`, text input).
    case openAIModeration = "openai-moderation"
    /// `Providers/local-text`: the same wire format, offline.
    case local
    public static let role = "a text classifier"
}

/// Sluice's categories for a text classifier's scores (the provider's own categories are mapped onto these).
public enum TextCategory: String, Sendable, Codable, CaseIterable, Comparable {
    case harassment, threat, hate, selfHarm, sexual, sexualMinors, violence, illicit

    public static func < (lhs: TextCategory, rhs: TextCategory) -> Bool {
        allCases.firstIndex(of: lhs) ?? 0 < allCases.firstIndex(of: rhs) ?? 0
    }
}

/// What a classifier's score does to a message, mildest first.
public enum TextClassifierAction: String, Sendable, Codable, CaseIterable, Comparable {
    /// Allowed, with the category noted on the item.
    case mark
    /// Held for a person.
    case review
    /// Not allowed.
    case block

    var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
    public static func < (lhs: TextClassifierAction, rhs: TextClassifierAction) -> Bool { lhs.rank < rhs.rank }
}

/// One category's thresholds (scores 0–1): the strongest action whose threshold the score reaches applies.
public struct TextCategoryRule: Sendable, Equatable, Codable {
    public var mark: Double?
    public var review: Double?
    public var block: Double?

    public init(mark: Double? = nil, review: Double? = nil, block: Double? = nil) {
        self.mark = mark
        self.review = review
        self.block = block
    }

    /// The action `score` earns, with the threshold it reached.
    public func action(for score: Double) -> (action: TextClassifierAction, threshold: Double)? {
        if let block, score >= block { return (.block, block) }
        if let review, score >= review { return (.review, review) }
        if let mark, score >= mark { return (.mark, mark) }
        return nil
    }

    var thresholds: [(TextClassifierAction, Double)] {
        [(.mark, mark), (.review, review), (.block, block)].compactMap { action, value in value.map { (action, $0) } }
    }
}

/// The classifier's settings (`text.classifier*` keys).
public struct TextClassifierConfig: Sendable, Equatable {
    public var kind: TextClassifierKind = .none
    /// Includes the version; `/moderations` is appended. nil: the kind's default.
    public var endpoint: String?
    public var model: String?
    /// Env var with a bearer key (nil: none; `openai-moderation` defaults to `OPENAI_API_KEY`).
    public var apiKeyEnv: String?
    public var timeoutSeconds: Double = 10
    public var maxAttempts: Int = 3
    /// Provider calls at once; the text queue judges this many lines at a time when a classifier is set.
    public var maxInFlight: Int = 16
    public var policy: [TextCategory: TextCategoryRule] = TextClassifierConfig.standardPolicy
    /// Wordlist severities the classifier may let through: a message blocked only by words of these severities is
    /// asked too, and allowed (marked) when no category reaches `review` — "fuck yeah we won" — while aimed abuse
    /// stays blocked. Empty (the default): the wordlists' block always stands. Never `slur`.
    public var mayAllow: [Severity] = []

    /// Threats, hate and self-harm go to a person from 0.4 (threats and hate are blocked from 0.8); harassment
    /// is marked from 0.5 and held from 0.8; sexual content involving minors is blocked from 0.4.
    public static let standardPolicy: [TextCategory: TextCategoryRule] = [
        .threat: TextCategoryRule(review: 0.4, block: 0.8),
        .hate: TextCategoryRule(review: 0.4, block: 0.8),
        .selfHarm: TextCategoryRule(review: 0.4),
        .harassment: TextCategoryRule(mark: 0.5, review: 0.8),
        .sexual: TextCategoryRule(mark: 0.5, review: 0.8),
        .sexualMinors: TextCategoryRule(block: 0.4),
        .violence: TextCategoryRule(mark: 0.5, review: 0.8),
        .illicit: TextCategoryRule(mark: 0.8),
    ]

    public init() {}

    public var effectiveEndpoint: String {
        endpoint ?? (kind == .openAIModeration ? "https://api.openai.com/v1" : "http://127.0.0.1:8092/v1")
    }

    public var effectiveModel: String { model ?? (kind == .openAIModeration ? "omni-moderation-latest" : "local-text") }

    public var effectiveAPIKeyEnv: String? { apiKeyEnv ?? (kind == .openAIModeration ? "OPENAI_API_KEY" : nil) }

    /// Why the settings cannot work, naming the key.
    func problems() -> [ConfigurationError] {
        var problems: [ConfigurationError] = []
        if let endpoint, !(endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://")) {
            problems.append(.badValue(key: "text.classifierEndpoint", reason: "must be an http:// or https:// URL, got \"\(endpoint)\""))
        }
        if !(timeoutSeconds > 0 && timeoutSeconds <= 600) {
            problems.append(.badValue(key: "text.classifierTimeoutSeconds", reason: "must be in (0, 600], got \(timeoutSeconds)"))
        }
        if !(1...10).contains(maxAttempts) {
            problems.append(.badValue(key: "text.classifierMaxAttempts", reason: "must be 1...10, got \(maxAttempts)"))
        }
        if !(1...256).contains(maxInFlight) {
            problems.append(.badValue(key: "text.classifierMaxInFlight", reason: "must be 1...256, got \(maxInFlight)"))
        }
        if mayAllow.contains(.slur) {
            problems.append(.badValue(key: "text.classifierMayAllow", reason: "slur cannot be let through by a classifier; allowed: mild, strong, severe"))
        }
        if !mayAllow.isEmpty && kind == .none {
            problems.append(.badValue(key: "text.classifierMayAllow", reason: "needs text.classifier (it is \"none\")"))
        }
        for (category, rule) in policy.sorted(by: { $0.key < $1.key }) {
            let key = "text.classifierPolicy.\(category.rawValue)"
            let thresholds = rule.thresholds
            for (action, value) in thresholds where !(value >= 0 && value <= 1) {
                problems.append(.badValue(key: "\(key).\(action.rawValue)", reason: "must be a score in [0, 1], got \(value)"))
            }
            let values = thresholds.map(\.1)
            if values != values.sorted() {
                problems.append(.badValue(key: key, reason: "thresholds must not decrease from mark to review to block, got "
                                          + thresholds.map { "\($0.0.rawValue) \($0.1)" }.joined(separator: ", ")))
            }
        }
        return problems
    }
}
