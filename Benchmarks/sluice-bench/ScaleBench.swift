import Foundation
import SluiceCore
import SluiceTesting

/// `sluice-bench <sluice binary> --scale --store-url postgres://… [--images 300] [--lines 100000] [--in-flight 4]`: several daemons
/// over one PostgreSQL store and one data root, in one invocation.
/// - Images: 1, 2 and 3 `sluice run` daemons (watch mode) share one `pending/`; the uploads are moved in once they
///   all run, and the clock stops when every upload has its approved output. Once with a fake vision provider
///   answering after 200 ms (latency-bound: more daemons, more calls in flight) and once answering at once (CPU-bound
///   on this machine's cores). Each configuration gets a new schema.
/// - Text: `sluice run --once` over one queue of `--lines` lines into SQLite and into PostgreSQL, the start (an empty
///   queue, same store) timed in the same way and taken off.
enum ScaleBench {
    /// `inFlight`: few calls in flight per daemon, so one daemon is bound by the provider's latency, not by this
    /// machine's CPU.
    static func run(binary: String, storeURL: String, images: Int, lines: Int, inFlight: Int) async throws {
        let fm = FileManager.default
        let base = fm.temporaryDirectory.appendingPathComponent("sluice-scale-bench-\(getpid())")
        try fm.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: base) }
        let clean = SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .veryUnlikely, violence: .veryUnlikely, racy: .veryUnlikely)
        let slow = try await FakeVisionServer.start { _, _ in .delayed(seconds: 0.2, then: .safeSearch(clean)) }
        defer { slow.stop() }
        let fast = try await FakeVisionServer.always(clean)
        defer { fast.stop() }

        let small = base.appendingPathComponent("small.jpg")
        let sample = TestEnvironment.repositoryRoot.appendingPathComponent("Samples/bob/hubble.jpg")
        _ = try ReprocessBench.shell("/usr/bin/vipsthumbnail", [sample.path, "--size", "320", "-o", small.path + "[Q=85]"])
        guard fm.fileExists(atPath: small.path) else { throw BenchError("vipsthumbnail made no small image") }
        let wordlists = TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path
        var schemaNumber = 0
        func config(_ root: URL, endpoint: String, store: String?) throws -> String {
            var storeEntry = ""
            if let store {
                schemaNumber += 1
                let separator = store.contains("?") ? "&" : "?"
                storeEntry = #", "store": {"url": "\#(store)\#(separator)schema=bench_\#(getpid())_\#(schemaNumber)"}"#
            }
            try fm.createDirectory(at: root.appendingPathComponent("pending"), withIntermediateDirectories: true)
            let file = root.appendingPathComponent("pipeline.json")
            try Data("""
            {"dataRoot": "\(root.path)", "vision": {"endpoint": "\(endpoint)", "apiKeyEnv": null, "maxInFlight": \(inFlight)},
             "daemon": {"rescanSeconds": 1}, "text": {"wordlistsDirectory": "\(wordlists)"}\(storeEntry)}
            """.utf8).write(to: file)
            return file.path
        }

        /// Seconds for `daemons` daemons to approve every upload.
        func imageRun(daemons: Int, endpoint: String, label: String) async throws -> Double {
            let root = base.appendingPathComponent(label)
            try? fm.removeItem(at: root)
            let file = try config(root, endpoint: endpoint, store: storeURL)
            // The uploads wait beside pending/ and move in (one rename per user folder) once the daemons run.
            let staging = root.appendingPathComponent("staging")
            for index in 0..<images {
                let folder = staging.appendingPathComponent("user\(index % 20)")
                try fm.createDirectory(at: folder, withIntermediateDirectories: true)
                try fm.copyItem(at: small, to: folder.appendingPathComponent("photo\(index).jpg"))
            }
            let processes = try (0..<daemons).map { _ -> Process in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: binary)
                process.arguments = ["run", "--config", file, "--log-level", "error"]
                try process.run()
                return process
            }
            defer { for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            try await Task.sleep(nanoseconds: 3_000_000_000)
            let start = Date()
            for folder in try fm.contentsOfDirectory(atPath: staging.path) {
                try fm.moveItem(at: staging.appendingPathComponent(folder), to: root.appendingPathComponent("pending/\(folder)"))
            }
            let approved = root.appendingPathComponent("approved")
            while true {
                let count = (try? fm.subpathsOfDirectory(atPath: approved.path))?.filter { $0.hasSuffix(".jpg") }.count ?? 0
                if count >= images { break }
                if Date().timeIntervalSince(start) > 600 { throw BenchError("\(label): only \(count) of \(images) approved after 600 s") }
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            let seconds = Date().timeIntervalSince(start)
            for process in processes { kill(process.processIdentifier, SIGTERM) }
            for process in processes { process.waitUntilExit() }
            return seconds
        }

        print("Several daemons over one PostgreSQL store: \(images) uploads of ≤ 320 px, vision.maxInFlight \(inFlight) per daemon, \(ProcessInfo.processInfo.activeProcessorCount) cores")
        print("(the 200 ms provider allows \(inFlight) / 0.2 s = \(String(format: "%.0f", Double(inFlight) / 0.2)) images/s per daemon; the 0 ms one shows this machine's CPU bound)")
        print("")
        print("provider   daemons   seconds   images/s   vs 1 daemon")
        for (name, endpoint) in [("200 ms", slow.endpoint), ("0 ms", fast.endpoint)] {
            var single = 0.0
            for daemons in 1...3 {
                let seconds = try await imageRun(daemons: daemons, endpoint: endpoint, label: "images-\(name.prefix(1))-\(daemons)")
                let rate = Double(images) / seconds
                if daemons == 1 { single = rate }
                print("\(name.padding(toLength: 11, withPad: " ", startingAt: 0))\(daemons)         \(String(format: "%7.2f", seconds))   \(String(format: "%8.1f", rate))   \(String(format: "%.2f", rate / single))×")
            }
        }

        // Text: the same queue into each store.
        let queueLines = (0..<lines).map { index in
            #"{"id": "m\#(index)", "userId": "u\#(index % 500)", "text": "\#(index % 9 == 0 ? "you absolute b!tch" : "see you at the station at \(index % 24):00, bring the tickets")"}"#
        }.joined(separator: "\n") + "\n"
        func textRun(_ label: String, store: String?, withQueue: Bool) throws -> Double {
            let root = base.appendingPathComponent(label)
            try? fm.removeItem(at: root)
            let file = try config(root, endpoint: fast.endpoint, store: store)
            let queue = root.appendingPathComponent("queues/text")
            try fm.createDirectory(at: queue, withIntermediateDirectories: true)
            if withQueue { try Data(queueLines.utf8).write(to: queue.appendingPathComponent("big.jsonl")) }
            let start = Date()
            _ = try ReprocessBench.shell(binary, ["run", "--once", "--config", file, "--log-level", "error"])
            let seconds = Date().timeIntervalSince(start)
            if withQueue, !fm.fileExists(atPath: queue.appendingPathComponent("done/big.jsonl").path) {
                throw BenchError("\(label): the queue file was not finished")
            }
            return seconds
        }
        print("")
        print("Text queue ingest, \(lines) lines, sluice run --once, start taken off")
        print("")
        print("store        lines/s")
        var rates: [String: Double] = [:]
        for (name, store) in [("SQLite", nil as String?), ("PostgreSQL", storeURL)] {
            let empty = try textRun("text-empty-\(name)", store: store, withQueue: false)
            let full = try textRun("text-\(name)", store: store, withQueue: true)
            let rate = Double(lines) / max(full - empty, 0.001)
            rates[name] = rate
            print("\(name.padding(toLength: 13, withPad: " ", startingAt: 0))\(String(format: "%8.0f", rate))")
        }
        if let sqlite = rates["SQLite"], let postgres = rates["PostgreSQL"] {
            print("")
            print("PostgreSQL / SQLite: \(String(format: "%.2f", postgres / sqlite))×")
        }
    }
}
