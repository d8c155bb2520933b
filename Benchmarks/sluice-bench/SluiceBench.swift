import ArgumentParser
import Foundation

/// `sluice-bench`: Sluice's benchmarks. Each runs Sluice and its peers in the same invocation and prints the ratios
/// (never a timed test); README's "Benchmarks" quotes the latest figures.
@main
struct SluiceBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice-bench",
        abstract: "Sluice's benchmarks: Sluice and its peers in one invocation, with the ratios.",
        discussion: """
        Without a benchmark flag it measures the image path against vipsthumbnail and ImageMagick. Every benchmark \
        but --pdq needs the sluice binary to measure, e.g. sluice-bench "$PWD/.build/release/sluice" --ingest.
        """)

    @Argument(help: "The sluice binary to measure (not needed with --pdq).")
    var sluice: String?

    @Flag(help: "Text queue ingest: `sluice run --once` over a queue file, against `sluice reprocess --kind text`.")
    var ingest = false
    @Flag(help: "Backlog reprocessing: items/s of `sluice reprocess` over text items and images.")
    var reprocess = false
    @Flag(name: .customLong("provider-latency"), help: "The image path against a fake vision provider that answers after --latency-ms.")
    var providerLatency = false
    @Flag(help: "PDQ: the hash's share of the image path, and bank lookups.")
    var pdq = false
    @Flag(help: "1, 2 and 3 daemons sharing one PostgreSQL store (needs --store-url).")
    var scale = false
    @Flag(help: "The conversation rules stage's cost on the text path.")
    var rules = false

    @Option(help: "Rounds (default 2 for the image path; 3 for --ingest, --provider-latency and --rules).")
    var rounds: Int?
    @Option(help: "Text messages (default 100000 for --ingest; 10000 for --reprocess and --rules).")
    var texts: Int?
    @Option(help: "Images (default 200 for --provider-latency, 1000 for --reprocess, 300 for --scale).")
    var images: Int?
    @Option(name: .customLong("latency-ms"), help: "--provider-latency: the fake provider's delay per call, in milliseconds.")
    var latencyMs = 200
    @Option(help: "--provider-latency: the daemon's concurrency.items (default: the built-in default).")
    var items: Int?
    @Option(help: "--pdq: entries in the bank.")
    var entries = 1_000_000
    @Option(help: "--pdq: lookups.")
    var queries = 20_000
    @Option(help: "--scale: lines in the text queue.")
    var lines = 100_000
    @Option(name: .customLong("in-flight"), help: "--scale: vision calls in flight per daemon.")
    var inFlight = 4
    @Option(name: .customLong("store-url"), help: "--scale: the PostgreSQL store, postgres://…")
    var storeURL: String?

    func validate() throws {
        let chosen = [ingest, reprocess, providerLatency, pdq, scale, rules].filter { $0 }.count
        guard chosen <= 1 else {
            throw ValidationError("choose one benchmark: --ingest, --reprocess, --provider-latency, --pdq, --scale or --rules (none: the image path)")
        }
        if !pdq {
            guard let sluice else { throw ValidationError("missing the sluice binary to measure, e.g. sluice-bench \"$PWD/.build/release/sluice\"") }
            guard FileManager.default.isExecutableFile(atPath: sluice) else { throw ValidationError("not an executable file: \(sluice)") }
        }
        if scale, storeURL == nil { throw ValidationError("--scale needs --store-url postgres://…") }
        let counts: [(String, Int?)] = [("--rounds", rounds), ("--texts", texts), ("--images", images), ("--items", items),
                                        ("--entries", entries), ("--queries", queries), ("--lines", lines), ("--in-flight", inFlight)]
        for case let (name, value?) in counts where value < 1 { throw ValidationError("\(name) must be at least 1 (got \(value))") }
        guard latencyMs >= 0 else { throw ValidationError("--latency-ms must not be negative (got \(latencyMs))") }
    }

    func run() async throws {
        let binary = sluice ?? ""
        if ingest {
            try await IngestBench.run(binary: binary, texts: texts ?? 100_000, rounds: rounds ?? 3)
        } else if reprocess {
            try await ReprocessBench.run(binary: binary, texts: texts ?? 10_000, images: images ?? 1_000)
        } else if providerLatency {
            try await ProviderBench.run(binary: binary, latencyMs: latencyMs, images: images ?? 200, rounds: rounds ?? 3, items: items)
        } else if pdq {
            try await PDQBench.run(entries: entries, queries: queries)
        } else if scale, let storeURL {
            try await ScaleBench.run(binary: binary, storeURL: storeURL, images: images ?? 300, lines: lines, inFlight: inFlight)
        } else if rules {
            try await RulesBench.run(binary: binary, texts: texts ?? 10_000, rounds: rounds ?? 3)
        } else {
            try await ImageBench.run(binary: binary, rounds: rounds ?? 2)
        }
    }
}
