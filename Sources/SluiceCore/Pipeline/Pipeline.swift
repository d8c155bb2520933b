/// Where a runner reports how long each stage took (a latency histogram per stage name in production). A
/// pipeline asks for each stage's recorder once, when it is assembled.
public protocol StageObserver: Sendable {
    func recorder(for stage: String) -> any StageRecorder
}

/// Records the durations of one stage.
public protocol StageRecorder: Sendable {
    func record(_ duration: Duration)
}

/// An observer that keeps nothing (tests, tools).
public struct IgnoringStageObserver: StageObserver, StageRecorder {
    public init() {}
    public func recorder(for stage: String) -> any StageRecorder { self }
    public func record(_ duration: Duration) {}
}

/// How long one stage of a run took.
public struct StageTiming: Sendable, Equatable {
    public var stage: String
    public var duration: Duration

    @inlinable public init(stage: String, duration: Duration) {
        self.stage = stage
        self.duration = duration
    }
}

/// An ordered list of stages, each stage's output the next one's input, assembled in one function. Running it
/// times every stage by name, reports the times to the observer, and stops at the first stage that ends the
/// item; the result is typed (the last stage's value) or says which stage stopped and why.
public struct Pipeline<Input: ItemFacts, Output: ItemFacts>: Sendable {
    public typealias Body = @Sendable (Input, StageContext, inout [StageTiming]) async -> PipelineRun<Output>.End

    /// Stage names in order.
    public let stageNames: [String]
    /// The stage a completed run's verdict is credited to (`policy` for images, `text` for messages).
    public let verdictStage: String
    @usableFromInline let observer: any StageObserver
    @usableFromInline let totalRecorder: any StageRecorder
    @usableFromInline let body: Body

    // Inlinable so the composed closures are specialised where a pipeline is assembled: a text message runs
    // through them tens of thousands of times a second.
    @usableFromInline init(stageNames: [String], verdictStage: String, observer: any StageObserver, body: @escaping Body) {
        self.stageNames = stageNames
        self.verdictStage = verdictStage
        self.observer = observer
        totalRecorder = observer.recorder(for: "total")
        self.body = body
    }

    /// A pipeline of one stage.
    @inlinable public init<S: Stage>(_ stage: S, observer: any StageObserver) where S.Input == Input, S.Output == Output {
        let recorder = observer.recorder(for: stage.name)
        self.init(stageNames: [stage.name], verdictStage: stage.name, observer: observer) { input, context, timings in
            await Self.step(stage, input, context, recorder, &timings)
        }
    }

    /// This pipeline followed by `stage`.
    @inlinable public func then<S: Stage>(_ stage: S) -> Pipeline<Input, S.Output> where S.Input == Output {
        let previous = body
        let recorder = observer.recorder(for: stage.name)
        return Pipeline<Input, S.Output>(stageNames: stageNames + [stage.name], verdictStage: verdictStage, observer: observer) {
            input, context, timings in
            switch await previous(input, context, &timings) {
            case let .completed(value): return await Pipeline<Input, S.Output>.step(stage, value, context, recorder, &timings)
            case let .stopped(conclusion, stageName, facts): return .stopped(conclusion, stage: stageName, facts: facts)
            }
        }
    }

    /// Credits a completed run's verdict to `stage` (the stage that decided it, not the last one that ran).
    public func verdict(by stage: String) -> Pipeline {
        Pipeline(stageNames: stageNames, verdictStage: stage, observer: observer, body: body)
    }

    @inlinable public func run(_ input: Input, context: StageContext) async -> PipelineRun<Output> {
        var timings: [StageTiming] = []
        timings.reserveCapacity(stageNames.count)
        let clock = ContinuousClock()
        let started = clock.now
        let end = await body(input, context, &timings)
        let total = clock.now - started
        totalRecorder.record(total)
        return PipelineRun(end: end, timings: timings, total: total, verdictStage: verdictStage)
    }

    /// Runs every input, `concurrency` at a time (a provider's latency, not the CPU, sets the pace), with the
    /// runs in input order. One at a time they run in a plain loop, in order, with no task per input.
    /// Inlinable (specialised where it is called): the text queue calls it for every window of lines.
    @inlinable public func run(_ inputs: [Input], context: StageContext, concurrency: Int) async -> [PipelineRun<Output>] {
        var runs: [PipelineRun<Output>] = []
        runs.reserveCapacity(inputs.count)
        if inputs.count == 1 || concurrency <= 1 {
            for input in inputs { runs.append(await run(input, context: context)) }
            return runs
        }
        let window = concurrency
        for start in stride(from: 0, to: inputs.count, by: window) {
            let chunk = inputs[start..<min(start + window, inputs.count)]
            runs += await withTaskGroup(of: (Int, PipelineRun<Output>).self) { group in
                for (offset, input) in chunk.enumerated() {
                    group.addTask { (offset, await self.run(input, context: context)) }
                }
                var done: [(Int, PipelineRun<Output>)] = []
                for await result in group { done.append(result) }
                return done.sorted { $0.0 < $1.0 }.map(\.1)
            }
        }
        return runs
    }

    @inlinable static func step<S: Stage>(_ stage: S, _ input: S.Input, _ context: StageContext, _ recorder: any StageRecorder,
                               _ timings: inout [StageTiming]) async -> PipelineRun<S.Output>.End {
        let clock = ContinuousClock()
        let started = clock.now
        let outcome = await stage.run(input, context: context)
        let elapsed = clock.now - started
        recorder.record(elapsed)
        timings.append(StageTiming(stage: stage.name, duration: elapsed))
        switch outcome {
        case let .proceed(value): return .completed(value)
        case let .finish(conclusion, facts): return .stopped(conclusion, stage: stage.name, facts: facts ?? input)
        }
    }
}

/// One run of a pipeline: how it ended and how long each stage took.
public struct PipelineRun<Output: ItemFacts>: Sendable {
    public enum End: Sendable {
        /// Every stage ran; the last stage's value.
        case completed(Output)
        /// `stage` ended the item; `facts` is what was known then.
        case stopped(Conclusion, stage: String, facts: any ItemFacts)
    }

    public var end: End
    public var timings: [StageTiming]
    public var total: Duration
    @usableFromInline let verdictStage: String

    @inlinable init(end: End, timings: [StageTiming], total: Duration, verdictStage: String) {
        self.end = end
        self.timings = timings
        self.total = total
        self.verdictStage = verdictStage
    }

    /// The stage the verdict is credited to: the one that stopped the run, or the pipeline's deciding stage.
    public var decidedBy: String {
        switch end {
        case .completed: verdictStage
        case let .stopped(_, stage, _): stage
        }
    }

    /// The reason the item is kept as it was, when the run ended that way.
    public var keptBecause: String? {
        if case let .stopped(.keep(reason), _, _) = end { return reason }
        return nil
    }

    public func duration(of stage: String) -> Duration? { timings.first { $0.stage == stage }?.duration }

    /// The item this run leaves: `base` with what the stages learned and the verdict. Nil when the run keeps the
    /// item as it is. Inlinable (specialised where it is called): the text queue calls it for every line, and
    /// unspecialised each call copied the whole run to hand it over. `base` is taken, not copied.
    @inlinable public func item(from base: consuming Item, scope: RecordScope) -> Item? {
        var item = base
        switch end {
        case let .completed(output):
            output.record(into: &item, scope: scope)
        case let .stopped(.verdict(verdict), _, facts):
            facts.record(into: &item, scope: scope)
            item.status = verdict.status
            item.reason = verdict.reason
        case .stopped(.keep, _, _):
            return nil
        }
        return item
    }
}
