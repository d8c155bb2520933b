import Foundation

/// Scores one message in Sluice's text categories (0–1 each). A category the provider does not score is absent.
public protocol TextClassifier: ProviderProbe {
    func classify(_ text: String) async throws(ProviderError) -> [TextCategory: Double]
}

/// What a text classifier said about a message, and what the policy made of it. Stored with the filter's verdict.
public struct TextClassification: Sendable, Codable, Equatable {
    /// The classifier that scored it (`openai-moderation`, `local-text`).
    public var provider: String
    /// Every score the provider returned, by Sluice category.
    public var scores: [String: Double]
    /// The strongest action the policy gave (nil: no threshold reached).
    public var action: TextClassifierAction?
    /// The categories that reached a threshold, strongest action first.
    public var categories: [String]
    /// `threat 0.91 ≥ block 0.80`, for the item's reason; nil without an action.
    public var reason: String?

    public init(provider: String, scores: [TextCategory: Double], policy: [TextCategory: TextCategoryRule]) {
        self.provider = provider
        self.scores = Dictionary(uniqueKeysWithValues: scores.map { ($0.key.rawValue, $0.value) })
        let fired = scores.compactMap { category, score in
            policy[category]?.action(for: score).map { (category: category, score: score, action: $0.action, threshold: $0.threshold) }
        }.sorted { ($0.action, $0.score, $1.category) > ($1.action, $1.score, $0.category) }
        action = fired.first?.action
        categories = fired.map(\.category.rawValue)
        reason = fired.first.map { top in
            "text classifier (\(provider)): " + fired.filter { $0.action == top.action }.map {
                "\($0.category.rawValue) \(Self.format($0.score)) ≥ \($0.action.rawValue) \(Self.format($0.threshold))"
            }.joined(separator: ", ")
        }
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}
