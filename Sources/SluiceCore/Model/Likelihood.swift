/// Google Vision's SafeSearch likelihood scale, ordered from "no signal" to "very likely".
public enum Likelihood: String, Sendable, Codable, CaseIterable, Comparable {
    case unknown = "UNKNOWN"
    case veryUnlikely = "VERY_UNLIKELY"
    case unlikely = "UNLIKELY"
    case possible = "POSSIBLE"
    case likely = "LIKELY"
    case veryLikely = "VERY_LIKELY"

    var rank: Int {
        switch self {
        case .unknown: 0
        case .veryUnlikely: 1
        case .unlikely: 2
        case .possible: 3
        case .likely: 4
        case .veryLikely: 5
        }
    }

    public static func < (lhs: Likelihood, rhs: Likelihood) -> Bool { lhs.rank < rhs.rank }

    public static let allowedNames = allCases.map(\.rawValue).joined(separator: ", ")

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let value = Likelihood(rawValue: raw) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "\"\(raw)\" is not a likelihood; allowed: \(Likelihood.allowedNames)")
        }
        self = value
    }
}

/// The five SafeSearch categories.
public enum SafeSearchCategory: String, Sendable, Codable, CaseIterable {
    case adult, spoof, medical, violence, racy
}

/// One SafeSearch classification of an image.
public struct SafeSearch: Sendable, Codable, Equatable {
    public var adult: Likelihood
    public var spoof: Likelihood
    public var medical: Likelihood
    public var violence: Likelihood
    public var racy: Likelihood

    public init(adult: Likelihood = .unknown, spoof: Likelihood = .unknown, medical: Likelihood = .unknown,
                violence: Likelihood = .unknown, racy: Likelihood = .unknown) {
        self.adult = adult
        self.spoof = spoof
        self.medical = medical
        self.violence = violence
        self.racy = racy
    }

    public subscript(category: SafeSearchCategory) -> Likelihood {
        switch category {
        case .adult: adult
        case .spoof: spoof
        case .medical: medical
        case .violence: violence
        case .racy: racy
        }
    }
}
