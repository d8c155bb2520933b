/// A pipeline.json value that is one of a fixed set of names. Decoding an unknown name fails with a message
/// naming the value and what is allowed, which start-up turns into an error naming the key.
public protocol ConfigChoice: RawRepresentable<String>, CaseIterable, Sendable, Hashable, Decodable {
    /// What the value is, for the message: `"aws" is not a vision provider`.
    static var role: String { get }
}

extension ConfigChoice {
    public static var allowedNames: String { allCases.map(\.rawValue).joined(separator: ", ") }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let value = Self(rawValue: raw) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(raw)\" is not \(Self.role); allowed: \(Self.allowedNames)")
        }
        self = value
    }
}

/// `vision.provider`.
public enum VisionProviderKind: String, ConfigChoice {
    /// Google Cloud Vision's `images:annotate` wire format (Google, the emulator, the bundled local provider).
    case googleVision = "google-vision"
    /// OpenAI's moderation endpoint with an image input.
    case openAIModeration = "openai-moderation"
    public static let role = "a vision provider"
}

/// `caption.provider`.
public enum CaptionProviderKind: String, ConfigChoice {
    case openAICompatible = "openai-compatible"
    case anthropic, gemini, none
    public static let role = "a caption provider"
}

/// `priority.engine`.
public enum PriorityEngineKind: String, ConfigChoice {
    /// Offline and deterministic: the indicator list.
    case rules
    /// An OpenAI-compatible chat completion, falling back to the rules on any failure.
    case llm
    /// Offline: a word model trained on the labelled messages (`Wordlists/priority-{language}.model.json`), checked
    /// against the rules.
    case model
    public static let role = "a priority engine"
}

/// `limits.failOn`: how picky decoding is (libvips `fail_on`).
public enum FailOn: String, ConfigChoice {
    /// Any decoder complaint rejects the upload.
    case warning
    /// Warnings are tolerated; errors reject.
    case error
    /// Only truncation rejects.
    case truncated
    public static let role = "a failOn level"
}

/// What a severity level does to a message (`text.actions`).
public enum SeverityAction: String, ConfigChoice, Codable {
    /// The message is not allowed.
    case block
    /// Allowed, but the match is reported (and censored).
    case mark
    /// Not reported at all.
    case ignore
    public static let role = "a text action"
}
