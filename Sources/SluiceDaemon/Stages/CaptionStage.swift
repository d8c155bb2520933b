import Foundation
import SluiceCore

/// 9. Caption for approved images only (blocked or review content is never sent to a third party). A caption
/// never changes the verdict: without a provider the item records why it was skipped, a failure records the error.
struct CaptionStage: Stage {
    let name = "caption"
    let provider: Result<any CaptionProvider, CaptionUnavailableReason>

    func run(_ jpeg: Data) async -> StageOutcome<CaptionOutcome> {
        switch provider {
        case let .failure(unavailable):
            return .proceed(CaptionOutcome(skipped: "caption skipped: \(unavailable.reason)"))
        case let .success(provider):
            do throws(ProviderError) {
                return .proceed(CaptionOutcome(caption: try await provider.caption(jpeg, mimeType: "image/jpeg")))
            } catch {
                return .proceed(CaptionOutcome(error: "caption failed: \(error.description)"))
            }
        }
    }
}

/// Why captioning is off (provider `none`, no API key).
public struct CaptionUnavailableReason: Error, Sendable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
}
