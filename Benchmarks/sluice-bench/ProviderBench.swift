import Foundation
import SluiceCore
import SluiceTesting

/// `sluice-bench <sluice binary> --provider-latency [--latency-ms 200] [--images 200] [--rounds 3] [--items N]`: the image path
/// with a slow vision provider (its own fake, answering every call after the latency). With `vision.maxInFlight`
/// calls at once the provider allows `maxInFlight / latency` images/s; the benchmark prints what the daemon
/// reaches against that bound, in one invocation. The daemon's start (an empty `pending/`, same config) is timed in
/// the same rounds and taken off, so the figure is the images' own time. Target: ≥ 70 images/s at 200 ms and 16 in
/// flight (the bound is 80).
enum ProviderBench {
    static func run(binary: String, latencyMs: Int, images: Int, rounds: Int, items: Int?) async throws {
        let latency = Double(latencyMs) / 1000
        let inFlight = 16
        // `concurrency.items` as configured by default unless given.
        let items = items.map { #", "concurrency": {"items": \#($0)}"# } ?? ""
        let fm = FileManager.default
        let base = fm.temporaryDirectory.appendingPathComponent("sluice-provider-bench-\(getpid())")
        try fm.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: base) }
        let clean = SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .veryUnlikely, violence: .veryUnlikely, racy: .veryUnlikely)
        let server = try await FakeVisionServer.start { _, _ in .delayed(seconds: latency, then: .safeSearch(clean)) }
        defer { server.stop() }

        // A small photo (≤ 320 px, as chat uploads are once a client has resized them), copied under many ids.
        let small = base.appendingPathComponent("small.jpg")
        let sample = TestEnvironment.repositoryRoot.appendingPathComponent("Samples/bob/hubble.jpg")
        let made = try ReprocessBench.shell("/usr/bin/vipsthumbnail", [sample.path, "--size", "320", "-o", small.path + "[Q=85]"])
        guard fm.fileExists(atPath: small.path) else { throw BenchError("vipsthumbnail made no small image: \(made)") }
        let wordlists = TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path

        func prepare(_ label: String, count: Int) throws -> String {
            let root = base.appendingPathComponent(label)
            try? fm.removeItem(at: root)
            for index in 0..<count {
                let folder = root.appendingPathComponent("pending/user\(index % 20)")
                try fm.createDirectory(at: folder, withIntermediateDirectories: true)
                try fm.copyItem(at: small, to: folder.appendingPathComponent("photo\(index).jpg"))
            }
            try fm.createDirectory(at: root.appendingPathComponent("pending"), withIntermediateDirectories: true)
            let config = root.appendingPathComponent("pipeline.json")
            try Data("""
            {"dataRoot": "\(root.path)", "vision": {"endpoint": "\(server.endpoint)", "apiKeyEnv": null, "maxInFlight": \(inFlight)},
             "text": {"wordlistsDirectory": "\(wordlists)"}\(items)}
            """.utf8).write(to: config)
            return config.path
        }
        func timed(_ config: String) throws -> Double {
            let start = Date()
            _ = try ReprocessBench.shell(binary, ["run", "--once", "--config", config, "--log-level", "error"])
            return Date().timeIntervalSince(start)
        }
        var starts: [Double] = []
        var runs: [Double] = []
        for _ in 0..<rounds {
            starts.append(try timed(try prepare("empty", count: 0)))
            let config = try prepare("images", count: images)
            runs.append(try timed(config))
            let approved = (try? fm.subpathsOfDirectory(atPath: base.appendingPathComponent("images/approved").path))?.filter { $0.hasSuffix(".jpg") }.count ?? 0
            guard approved == images else { throw BenchError("expected \(images) approved images, found \(approved)") }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let start = median(starts)
        let whole = median(runs)
        let rate = Double(images) / max(whole - start, 0.001)
        let bound = Double(inFlight) / latency
        print("Image path with a \(Int(latency * 1000)) ms vision provider: \(images) images of ≤ 320 px, vision.maxInFlight \(inFlight), \(rounds) rounds, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print("")
        print("what                                   value")
        print("daemon start (empty pending/)          \(String(format: "%.2f", start)) s")
        print("sluice run --once over the images      \(String(format: "%.2f", whole)) s (\(String(format: "%.1f", Double(images) / whole)) images/s with the start)")
        print("images/s (start taken off)             \(String(format: "%.1f", rate))")
        print("provider's bound (in flight / latency) \(String(format: "%.1f", bound))")
        print("")
        print("ratio to the bound: \(String(format: "%.2f", rate / bound)) (target ≥ 70 images/s: \(rate >= 70 ? "met" : "not met"))")
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
