import Foundation
import SluiceCore

/// 5. SafeSearch through the vision provider. Fails closed: any provider failure sends the item to review.
struct ClassifyStage: Stage {
    let name = "classify"
    let provider: any VisionProvider

    func run(_ jpeg: Data) async -> StageOutcome<SafeSearch> {
        do throws(ProviderError) {
            return .proceed(try await provider.classify(jpeg))
        } catch {
            return .finish(.review(reason: "not classified, held for review: \(error.description)"))
        }
    }
}
