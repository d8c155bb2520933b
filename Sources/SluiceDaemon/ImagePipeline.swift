import Foundation
import Metrics
import SluiceCore

/// What the pipeline concluded about one upload, with everything learned on the way.
public struct ImageJudgement: Sendable {
    public var verdict: Verdict = .review(reason: "not judged")
    /// The stage that ended the item (`policy` for a normal verdict).
    public var decidedBy: String = ""
    public var format: ImageFormat?
    public var header: ImageHeader?
    public var image: ProcessedImage?
    public var safeSearch: SafeSearch?
    public var timings = StageTimings()
}

/// The image stages in order, assembled in one place: sniff → limits → decode → classify → policy.
public struct ImagePipeline: Sendable {
    private let sniff: SniffStage
    private let limits: LimitsStage
    private let decode: DecodeStage
    private let classify: ClassifyStage
    private let policy: PolicyStage
    /// `sluice_stage_duration_seconds{stage}` through swift-metrics (a histogram under Prometheus).
    private let timers: StageTimers

    public init(config: PipelineConfig, processor: any ImageProcessor, provider: any VisionProvider, pool: CPUPool) {
        timers = StageTimers()
        sniff = SniffStage(processor: processor)
        limits = LimitsStage(processor: processor, limits: config.limits, pool: pool)
        decode = DecodeStage(processor: processor, options: ImageOptions(config: config), pool: pool)
        classify = ClassifyStage(provider: provider)
        policy = PolicyStage(policy: config.policy)
    }

    public func judge(_ bytes: Data) async -> ImageJudgement {
        var judgement = ImageJudgement()
        let clock = ContinuousClock()
        let started = clock.now

        func finish(_ verdict: Verdict, _ stage: String) -> ImageJudgement {
            judgement.verdict = verdict
            judgement.decidedBy = stage
            judgement.timings.totalMs = (clock.now - started).milliseconds
            timers.total.record(clock.now - started)
            return judgement
        }

        let format: ImageFormat
        switch await sniff.run(bytes) {
        case let .finish(verdict): return finish(verdict, sniff.name)
        case let .proceed(sniffed): format = sniffed
        }
        judgement.format = format

        switch await limits.run(.init(bytes: bytes, format: format)) {
        case let .finish(verdict): return finish(verdict, limits.name)
        case let .proceed(header): judgement.header = header
        }

        let decodeStart = clock.now
        switch await decode.run(.init(bytes: bytes, format: format)) {
        case let .finish(verdict): return finish(verdict, decode.name)
        case let .proceed(image): judgement.image = image
        }
        judgement.timings.decodeMs = (clock.now - decodeStart).milliseconds
        timers.decode.record(clock.now - decodeStart)

        let classifyStart = clock.now
        let classification = await classify.run(judgement.image?.classifyJPEG ?? Data())
        judgement.timings.classifyMs = (clock.now - classifyStart).milliseconds
        timers.classify.record(clock.now - classifyStart)
        switch classification {
        case let .finish(verdict): return finish(verdict, classify.name)
        case let .proceed(result): judgement.safeSearch = result
        }

        guard let result = judgement.safeSearch else { return finish(.review(reason: "no classification"), classify.name) }
        switch await policy.run(result) {
        case let .finish(verdict): return finish(verdict, policy.name)
        case .proceed: return finish(.approved, policy.name)
        }
    }
}

/// One latency histogram per stage, labelled by stage name.
struct StageTimers: Sendable {
    let decode = StageTimers.make("decode")
    let classify = StageTimers.make("classify")
    let total = StageTimers.make("total")

    static func make(_ stage: String) -> Metrics.Timer {
        Metrics.Timer(label: "sluice_stage_duration_seconds", dimensions: [("stage", stage)], preferredDisplayUnit: .seconds)
    }
}

extension Metrics.Timer {
    func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
