/// The verdict the policy gives for one classification.
public enum PolicyDecision: Sendable, Equatable {
    case approve
    case block(reason: String)
    case review(reason: String)
}

extension ModerationPolicy {
    /// Blocks on any category at or above its block threshold; otherwise reviews on any at or above its
    /// review threshold or UNKNOWN where the category says so; otherwise approves.
    public func decide(_ result: SafeSearch) -> PolicyDecision {
        var blocks: [String] = []
        var reviews: [String] = []
        for category in SafeSearchCategory.allCases {
            let rule = self[category]
            let value = result[category]
            if value == .unknown {
                if rule.onUnknown == .review { reviews.append("\(category.rawValue) is UNKNOWN") }
                continue
            }
            if let block = rule.block, value >= block {
                blocks.append("\(category.rawValue) \(value.rawValue) ≥ \(block.rawValue)")
            } else if let review = rule.review, value >= review {
                reviews.append("\(category.rawValue) \(value.rawValue) ≥ \(review.rawValue)")
            }
        }
        if !blocks.isEmpty { return .block(reason: "blocked by policy: " + blocks.joined(separator: ", ")) }
        if !reviews.isEmpty { return .review(reason: "needs review: " + reviews.joined(separator: ", ")) }
        return .approve
    }
}
