import Foundation
import SluiceCore

/// 7. A caption, for approved images only (blocked or review content is never sent to a third party), and for
/// the caption API. A caption never changes the verdict: without a provider the item records why it was
/// skipped, a failure records the error. When captions are not re-run the stored caption stays.
struct CaptionStage<Subject: CaptionSubject>: Stage {
    let name = "caption"
    let provider: Result<any CaptionProvider, CaptionUnavailable>

    func run(_ subject: Subject, context: StageContext) async -> StageOutcome<Captioned<Subject>> {
        guard context.runs(name) else { return .proceed(Captioned(subject: subject, result: nil)) }
        switch provider {
        case let .failure(unavailable):
            return .proceed(Captioned(subject: subject, result: .unavailable(unavailable.reason)))
        case let .success(provider):
            do throws(ProviderError) {
                return .proceed(Captioned(subject: subject, result: .caption(try await provider.caption(subject.captionJPEG, mimeType: "image/jpeg"))))
            } catch {
                return .proceed(Captioned(subject: subject, result: .failed(provider: provider.name, error)))
            }
        }
    }
}

/// A subject with its caption, or why there is none (nil: captions were not re-run).
public struct Captioned<Subject: CaptionSubject>: ItemFacts {
    public enum Result: Sendable {
        case caption(Caption)
        /// Captioning is off (`caption.provider: "none"`, no API key): why.
        case unavailable(String)
        case failed(provider: String, ProviderError)
    }

    public var subject: Subject
    public var result: Result?

    /// What the item records.
    public var outcome: CaptionOutcome? {
        switch result {
        case nil: nil
        case let .caption(caption)?: CaptionOutcome(caption: caption)
        case let .unavailable(reason)?: CaptionOutcome(skipped: "caption skipped: \(reason)")
        case let .failed(_, error)?: CaptionOutcome(error: "caption failed: \(error.description)")
        }
    }

    public func record(into item: inout Item, scope: RecordScope) {
        subject.record(into: &item, scope: scope)
        if let outcome { item.caption = outcome }
    }
}
