import Metrics
import SluiceCore
import Synchronization

/// `sluice_stage_duration_seconds{stage}` through swift-metrics: a latency histogram per stage name under
/// Prometheus. Timers are made once per stage name and reused.
public final class StageMetrics: StageObserver {
    private let timers = Mutex<[String: Metrics.Timer]>([:])

    public init() {}

    public func record(stage: String, duration: Duration) {
        let timer = timers.withLock { timers in
            if let timer = timers[stage] { return timer }
            let timer = Metrics.Timer(label: "sluice_stage_duration_seconds", dimensions: [("stage", stage)], preferredDisplayUnit: .seconds)
            timers[stage] = timer
            return timer
        }
        let (seconds, attoseconds) = duration.components
        timer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
