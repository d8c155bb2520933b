import Foundation
import SluiceCore

/// The image stages in order, assembled once from config: sniff → limits → decode → match → classify → policy →
/// write → caption. The daemon, `sluice reprocess`, human decisions and the caption API all run this value; what differs
/// is the `StageContext` (why the item is judged, which stages run for real, fail closed or keep).
public struct ImagePipeline: Sendable {
    /// Every stage: an upload to an approved, written, captioned image, or a verdict on the way.
    public let judging: Pipeline<ImageUpload, Captioned<Written>>
    /// The same sniff, limits and decode stages, then the same caption stage: the caption API (no verdict).
    public let captioning: Pipeline<ImageUpload, Captioned<Decoded>>
    /// Sniff, limits and decode only: the review console's metadata-free preview (`classifyJPEG`) of a kept original.
    public let previewing: Pipeline<ImageUpload, Decoded>
    public let processor: any ImageProcessor
    public let layout: OutputLayout
    /// The vision provider's name, as verdicts record it.
    public let providerName: String
    /// The hash banks the match stage consults (nil: no store, the match stage passes every image on).
    public let matcher: BankMatcher?
    private let parts: Parts

    private struct Parts: Sendable {
        var config: PipelineConfig
        var vision: any VisionProvider
        var captions: Result<any CaptionProvider, CaptionUnavailable>
        var pool: CPUPool
        var observer: any StageObserver
    }

    public init(config: PipelineConfig, processor: any ImageProcessor, vision: any VisionProvider,
                captions: Result<any CaptionProvider, CaptionUnavailable>, pool: CPUPool,
                observer: any StageObserver = StageMetrics(), matcher: BankMatcher? = nil) {
        parts = Parts(config: config, vision: vision, captions: captions, pool: pool, observer: observer)
        self.matcher = matcher
        self.processor = processor
        layout = OutputLayout(dataRoot: config.dataRoot)
        providerName = vision.name
        let decoding = Pipeline(SniffStage(processor: processor), observer: observer)
            .then(LimitsStage(processor: processor, maxPixels: config.limits.maxPixels, pool: pool))
            .then(DecodeStage(processor: processor, options: ImageOptions(config: config), pool: pool))
        judging = decoding
            .then(MatchStage(matcher: matcher))
            .then(ClassifyStage(provider: vision))
            .then(PolicyStage(policy: config.policy))
            .then(WriteStage(layout: layout))
            .then(CaptionStage<Written>(provider: captions))
            .verdict(by: "policy")
        captioning = decoding.then(CaptionStage<Decoded>(provider: captions))
        previewing = decoding
    }

    /// The same pipeline with the match stage consulting `matcher`'s banks.
    public func with(matcher: BankMatcher) -> ImagePipeline {
        ImagePipeline(config: parts.config, processor: processor, vision: parts.vision, captions: parts.captions, pool: parts.pool,
                      observer: parts.observer, matcher: matcher)
    }

    public func run(_ upload: ImageUpload, context: StageContext) async -> PipelineRun<Captioned<Written>> {
        await judging.run(upload, context: context)
    }

    /// Stage times as an item keeps them.
    public static func timings<Output>(of run: PipelineRun<Output>) -> StageTimings {
        StageTimings(decodeMs: run.duration(of: "decode")?.milliseconds, classifyMs: run.duration(of: "classify")?.milliseconds,
                     writeMs: run.duration(of: "write")?.milliseconds, totalMs: run.total.milliseconds)
    }
}
