import Foundation

/// `localVision`: how Sluice's scripts start the bundled offline vision provider (`Providers/local-vision`).
/// Sluice itself only talks to `vision.endpoint`; `scripts/demo` passes `models` to the provider's `--models`.
public struct LocalVisionConfig: Sendable, Equatable {
    /// Any of `open_nsfw` (BSD-2: adult, racy), `image_safety` (MIT model in an Apache-2.0 wheel: violence) and
    /// `nudenet` (AGPL-3.0, opt-in: adult, racy; read Providers/local-vision/LICENSE-NOTE.md); with several, each
    /// category takes the highest likelihood. `image_safety` sees violence only, so it needs an adult model beside it.
    public var models: [String] = ["open_nsfw", "image_safety"]
    public static let known = ["open_nsfw", "image_safety", "nudenet"]
    public static let adultModels: Set<String> = ["open_nsfw", "nudenet"]
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
