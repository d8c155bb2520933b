import Foundation
import SluiceCore
import SluiceImaging
import SluicePipeline
import SluiceTesting

/// `sluice-bench --pdq [--entries 1000000] [--queries 20000]`: what PDQ costs and how fast banks match, in one run.
/// 1. Hash cost as a share of the image path: Sluice's one decode with its three encodes (`VipsImageProcessor.process`,
///    which includes the hash) per shared fixture photo, against the hash alone on a buffer the size of the
///    classifier copy it hashes (PDQ's work depends only on the pixel count). Target ≤ 5%.
/// 2. Bank lookups at 1,000,000 entries on one core: multi-index hashing (`PDQIndex`, threshold 31), half the
///    queries near an entry (up to 15 bits flipped), half unrelated; against a linear scan of the same entries on
///    a sample of the same queries. Target ≥ 10,000 lookups/s.
enum PDQBench {
    static func run(entries: Int, queries: Int) async throws {
        let clock = ContinuousClock()

        // 1. Hash cost share.
        let processor = try VipsImageProcessor(maxPixels: 100_000_000)
        let options = ImageOptions()
        let files = TestEnvironment.fixtureFiles("images/photos") + TestEnvironment.fixtureFiles("images/orientation").filter { $0.pathExtension == "jpg" }
        var processTime = Duration.zero
        var hashTime = Duration.zero
        var images = 0
        for _ in 0..<2 {
            for file in files {
                let data = try Data(contentsOf: file)
                let format = try processor.sniff(data)
                let started = clock.now
                let processed = try processor.process(data, format: format, options: options)
                processTime += clock.now - started
                // The classifier copy's size, as the decode hashes it.
                let scale = min(1, Double(options.classifyMaxSide) / Double(max(processed.width, processed.height)))
                let width = max(5, Int((Double(processed.width) * scale).rounded()))
                let height = max(5, Int((Double(processed.height) * scale).rounded()))
                var generator = SplitMix(seed: UInt64(images))
                let pixels = (0..<(width * height * 3)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                let hashStarted = clock.now
                let fingerprint = pixels.withUnsafeBytes {
                    PDQHasher.fingerprint(pixels: $0, width: width, height: height, bands: 3, rowBytes: width * 3)
                }
                hashTime += clock.now - hashStarted
                precondition(fingerprint != nil)
                images += 1
            }
        }
        let share = hashTime / processTime
        print("PDQ hash cost: \(images) images, image path \(ms(processTime / images)) ms/image (decode + 3 encodes, hash included), "
              + "hash alone \(ms(hashTime / images)) ms/image → \(String(format: "%.1f", share * 100))% of the image path (target ≤ 5%)")

        // 2. Lookups at `entries`.
        var generator = SplitMix(seed: 42)
        func random() -> PDQHash { PDQHash(words: (generator.next(), generator.next(), generator.next(), generator.next())) }
        let buildStarted = clock.now
        var hashes: [PDQHash] = []
        hashes.reserveCapacity(entries)
        for _ in 0..<entries { hashes.append(random()) }
        let index = PDQIndex(hashes)
        let built = clock.now - buildStarted
        var probes: [PDQHash] = []
        var expectedNear = 0
        for q in 0..<queries {
            if q % 2 == 0 {
                let base = hashes[Int(generator.next() % UInt64(entries))]
                var bits = (0..<256).map { base.bit($0) }
                for _ in 0..<Int(generator.next() % 16) { let k = Int(generator.next() % 256); bits[k].toggle() }
                probes.append(PDQHash(bits: bits))
                expectedNear += 1
            } else {
                probes.append(random())
            }
        }
        var found = 0
        let searchStarted = clock.now
        for probe in probes where index.nearest([probe], within: 31) != nil { found += 1 }
        let searched = clock.now - searchStarted
        let perSecond = Double(queries) / seconds(searched)

        let sample = min(200, probes.count)
        var linearFound = 0
        let linearStarted = clock.now
        for probe in probes.prefix(sample) {
            var best = Int.max
            for hash in hashes { best = min(best, hash.distance(to: probe)) }
            if best <= 31 { linearFound += 1 }
        }
        let linear = clock.now - linearStarted
        let linearPerSecond = Double(sample) / seconds(linear)
        var indexedSampleFound = 0
        for probe in probes.prefix(sample) where index.nearest([probe], within: 31) != nil { indexedSampleFound += 1 }
        precondition(indexedSampleFound == linearFound, "the index must find exactly what a linear scan finds")

        print("Bank lookups: \(entries) entries (index built in \(String(format: "%.1f", seconds(built))) s), \(queries) queries "
              + "(\(expectedNear) near an entry: \(found) found), threshold 31, one core")
        print("  multi-index hashing: \(Int(perSecond)) lookups/s (target ≥ 10,000); an upload is 8 lookups (dihedral): \(Int(perSecond / 8)) uploads/s")
        print("  linear scan (peer, \(sample) of the same queries, same answers): \(Int(linearPerSecond)) lookups/s")
        print("  ratio index / linear scan: \(String(format: "%.0f", perSecond / linearPerSecond))×")
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
    static func ms(_ d: Duration) -> String { String(format: "%.2f", seconds(d) * 1000) }

    /// A small deterministic generator (no global state), so runs are comparable.
    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
