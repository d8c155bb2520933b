#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SluiceCore
import SluiceTesting

/// `sluice-bench <sluice binary> [--rounds N]`: Sluice's whole image path (`sluice run --once` with a zero-latency
/// fake provider) against producing the same two outputs (≤1920 px and ≤200 px JPEGs, auto-oriented, stripped) with
/// the libvips CLI (vipsthumbnail) and ImageMagick (convert), on the same files in one run. Peers run with as many
/// processes at once as there are cores. Prints images/s, ratios, and Sluice's peak RSS on 64-megapixel inputs.
enum ImageBench {
    /// Runs a tool with its output discarded; returns its exit status.
    @discardableResult
    static func quietly(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    static func run(binary: String, rounds: Int) async throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let fm = FileManager.default
        let work = fm.temporaryDirectory.appendingPathComponent("sluice-bench-\(getpid())")
        try fm.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: work) }

        func tool(_ names: [String]) -> String? {
            names.first { fm.isExecutableFile(atPath: $0) }
        }
        // /usr/local/bin/convert may be a stand-in; ImageMagick's own lives in /usr/bin.
        guard let vipsthumbnail = tool(["/usr/bin/vipsthumbnail"]), let convert = tool(["/usr/bin/convert", "/usr/bin/convert-im6.q16"]),
              let vips = tool(["/usr/bin/vips"]) else {
            print("needs vipsthumbnail, vips and ImageMagick's convert: run scripts/setup")
            exit(1)
        }

        /// Runs jobs with at most `cores` processes at once; returns wall seconds.
        func timeParallel(_ jobs: [(String, [String])]) async throws -> Double {
            let start = Date()
            try await withThrowingTaskGroup(of: Void.self) { group in
                var running = 0
                for job in jobs {
                    if running >= cores {
                        try await group.next()
                        running -= 1
                    }
                    group.addTask { try quietly(job.0, job.1) }
                    running += 1
                }
                try await group.waitForAll()
            }
            return Date().timeIntervalSince(start)
        }

        // Inputs: phone-camera-sized JPEGs (the orientation fixtures scaled to ~12 MP; their EXIF orientation kept)
        // plus the photo fixtures as they are, `rounds` copies each.
        let inputs = work.appendingPathComponent("inputs")
        try fm.createDirectory(at: inputs, withIntermediateDirectories: true)
        let cameraSources = TestEnvironment.fixtureFiles("images/orientation")
        let photoSources = TestEnvironment.fixtureFiles("images/photos")
        var collected: [URL] = []
        for (index, source) in cameraSources.enumerated() {
            let file = inputs.appendingPathComponent("camera\(index).jpg")
            try quietly(vips, ["resize", source.path, file.path + "[Q=90]", "2.45"])
            collected.append(file)
        }
        for (index, source) in photoSources.enumerated() {
            let file = inputs.appendingPathComponent("photo\(index).\(source.pathExtension)")
            try fm.copyItem(at: source, to: file)
            collected.append(file)
        }
        collected = (0..<rounds).flatMap { _ in collected }.enumerated().map { index, file in
            let copy = inputs.appendingPathComponent("r\(index)_\(file.lastPathComponent)")
            try? fm.linkItem(at: file, to: copy)
            return copy
        }
        // 64-megapixel inputs for the memory figure.
        let huge = work.appendingPathComponent("huge")
        try fm.createDirectory(at: huge, withIntermediateDirectories: true)
        let landscape = TestEnvironment.fixture("images/orientation/Landscape_1.jpg").path
        try quietly(vips, ["resize", landscape, huge.appendingPathComponent("h0.jpg").path + "[Q=90]", "5.44"])
        try quietly(vips, ["resize", TestEnvironment.fixture("images/orientation/Portrait_6.jpg").path, huge.appendingPathComponent("h1.jpg").path + "[Q=90]", "5.44"])
        try quietly(vips, ["resize", TestEnvironment.fixture("images/photos/coffee.png").path, huge.appendingPathComponent("h2.png").path, "16.3"])
        let files = collected
        let hugeFiles = try fm.contentsOfDirectory(at: huge, includingPropertiesForKeys: nil).sorted { $0.path < $1.path }

        let server = try await FakeVisionServer.always(SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .veryUnlikely,
                                                                  violence: .veryUnlikely, racy: .veryUnlikely))

        /// Sluice over a fresh data root; returns wall seconds and how many items were approved.
        func timeSluice(_ inputs: [URL], label: String) throws -> (seconds: Double, approved: Int) {
            let root = work.appendingPathComponent("root-\(label)")
            let pending = root.appendingPathComponent("pending/bench")
            try fm.createDirectory(at: pending, withIntermediateDirectories: true)
            for file in inputs { try fm.copyItem(at: file, to: pending.appendingPathComponent(file.lastPathComponent)) }
            let config = root.appendingPathComponent("pipeline.json")
            try Data("""
            {"dataRoot": "\(root.path)", "vision": {"endpoint": "\(server.endpoint)", "apiKeyEnv": null},
             "limits": {"maxPixels": 70000000, "maxBytes": 268435456},
             "text": {"wordlistsDirectory": "\(TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path)"}}
            """.utf8).write(to: config)
            let start = Date()
            let status = try quietly(binary, ["run", "--once", "--config", config.path, "--log-level", "error"])
            let seconds = Date().timeIntervalSince(start)
            guard status == 0 else { throw CocoaError(.executableLoad) }
            let approved = (try? fm.contentsOfDirectory(atPath: root.appendingPathComponent("approved/bench").path).count) ?? 0
            return (seconds, approved)
        }

        func peerJobs(_ inputs: [URL], label: String) throws -> (vips: [(String, [String])], magick: [(String, [String])]) {
            let out = work.appendingPathComponent("out-\(label)")
            try fm.createDirectory(at: out, withIntermediateDirectories: true)
            var vipsJobs: [(String, [String])] = []
            var magickJobs: [(String, [String])] = []
            for (index, file) in inputs.enumerated() {
                // One process per output, as a shell pipeline would do it.
                vipsJobs.append((vipsthumbnail, [file.path, "-s", "1920x1920>", "-o", out.path + "/v\(index)_big.jpg[Q=80,strip]"]))
                vipsJobs.append((vipsthumbnail, [file.path, "-s", "200x200>", "-o", out.path + "/v\(index)_small.jpg[Q=75,strip]"]))
                magickJobs.append((convert, [file.path, "-auto-orient", "-strip", "-resize", "1920x1920>", "-quality", "80", out.path + "/m\(index)_big.jpg"]))
                magickJobs.append((convert, [file.path, "-auto-orient", "-strip", "-resize", "200x200>", "-quality", "75", out.path + "/m\(index)_small.jpg"]))
            }
            return (vipsJobs, magickJobs)
        }

        // Peak RSS: the 64 MP run goes first, so RUSAGE_CHILDREN's maximum is Sluice's alone.
        let hugeRun = try timeSluice(hugeFiles, label: "huge")
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        let peakMiB = Double(usage.ru_maxrss) / 1024

        let sluice = try timeSluice(files, label: "main")
        let jobs = try peerJobs(files, label: "main")
        let vipsSeconds = try await timeParallel(jobs.vips)
        let magickSeconds = try await timeParallel(jobs.magick)
        server.stop()

        func rate(_ seconds: Double) -> Double { Double(files.count) / seconds }
        func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        print("Image path: \(files.count) files (\(cameraSources.count) camera JPEGs of ~12 MP and \(photoSources.count) small photos, × \(rounds)), \(cores) cores; outputs ≤1920 px and ≤200 px JPEG")
        print("")
        print("tool                                   seconds  images/s  sluice ×")
        print("sluice run --once (fake provider)      \(format(sluice.seconds, 2).padding(toLength: 8, withPad: " ", startingAt: 0)) \(format(rate(sluice.seconds)).padding(toLength: 9, withPad: " ", startingAt: 0)) 1.00")
        print("vipsthumbnail ×2 per file (\(cores) at once)   \(format(vipsSeconds, 2).padding(toLength: 8, withPad: " ", startingAt: 0)) \(format(rate(vipsSeconds)).padding(toLength: 9, withPad: " ", startingAt: 0)) \(format(vipsSeconds / sluice.seconds, 2))")
        print("convert ×2 per file (\(cores) at once)         \(format(magickSeconds, 2).padding(toLength: 8, withPad: " ", startingAt: 0)) \(format(rate(magickSeconds)).padding(toLength: 9, withPad: " ", startingAt: 0)) \(format(magickSeconds / sluice.seconds, 2))")
        print("")
        print("sluice vs libvips CLI: \(format(vipsSeconds / sluice.seconds, 2))× (target ≥ 3×)   sluice vs ImageMagick: \(format(magickSeconds / sluice.seconds, 2))× (target ≥ 8×)")
        print("sluice on \(hugeFiles.count) inputs of ~64 megapixels: \(format(hugeRun.seconds, 2)) s, peak RSS \(format(peakMiB, 0)) MiB (target ≤ 400 MiB), approved \(hugeRun.approved)/\(hugeFiles.count)")
        if sluice.approved != files.count { print("WARNING: only \(sluice.approved) of \(files.count) approved") }
    }
}
