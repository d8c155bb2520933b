import Foundation

/// `localVision`: how Sluice's scripts start the bundled offline vision provider (`Providers/local-vision`).
/// Sluice itself only talks to `vision.endpoint`; `scripts/demo` passes `models` to the provider's `--models`.
public struct LocalVisionConfig: Sendable, Equatable {
    /// `open_nsfw` (BSD-2, the default), `nudenet` (AGPL-3.0: read Providers/local-vision/LICENSE-NOTE.md), or both
    /// (the higher likelihood per category).
    public var models: [String] = ["open_nsfw"]
    public static let known = ["open_nsfw", "nudenet"]
    public init() {}
}

extension LocalVisionConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case models }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = LocalVisionConfig()
        v.models = try c.value(.models, default: v.models)
        self = v
    }
}
