import Metrics
import SluiceCore

/// `sluice_stage_duration_seconds{stage}` through swift-metrics: a latency histogram per stage name under
/// Prometheus. A pipeline takes each stage's timer once, when it is assembled.
public struct StageMetrics: StageObserver {
    public init() {}

    public func recorder(for stage: String) -> any StageRecorder {
        StageTimer(timer: Metrics.Timer(label: "sluice_stage_duration_seconds", dimensions: [("stage", stage)], preferredDisplayUnit: .seconds))
    }
}

struct StageTimer: StageRecorder {
    let timer: Metrics.Timer

    func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        timer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
