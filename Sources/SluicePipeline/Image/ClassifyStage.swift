import Foundation
import SluiceCore

/// 4. SafeSearch through the vision provider. Fails closed: on intake any provider failure sends the item to
/// review; re-judging keeps the item as it was. When classification is not re-run (`reprocess --stages caption`,
/// a human decision) the stored classification is passed on.
struct ClassifyStage: Stage {
    let name = "classify"
    let provider: any VisionProvider

    func run(_ matched: Matched, context: StageContext) async -> StageOutcome<Classified> {
        let decoded = matched.decoded
        if case .decision = context.mode {
            return .proceed(Classified(matched: matched, safeSearch: context.current?.safeSearch, provider: context.current?.provider, fresh: false))
        }
        guard context.runs(name) else {
            return .proceed(Classified(matched: matched, safeSearch: context.current?.safeSearch, provider: context.current?.provider, fresh: false))
        }
        // A near-identical approved image's classification, instead of a provider call (vision.reuseWithinDistance).
        if case let .reuse(safeSearch, provider, _)? = matched.verdict {
            return .proceed(Classified(matched: matched, safeSearch: safeSearch, provider: provider, fresh: true))
        }
        do throws(ProviderError) {
            return .proceed(Classified(matched: matched, safeSearch: try await provider.classify(decoded.image.classifyJPEG),
                                       provider: provider.name, fresh: true))
        } catch {
            return .finish(context.notClassified(by: provider.name, because: error))
        }
    }
}
