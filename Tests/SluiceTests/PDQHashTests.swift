import Foundation
import SluiceCore
import SluiceImaging
import SluicePipeline
import SluiceTesting
import Testing

/// Sluice's PDQ against the reference implementation (facebook/ThreatExchange pdq/cpp, built by the PyPI package
/// pdqhash; `scripts/pdq-reference` wrote `Tests/Fixtures/pdq/reference.json` from the shared fixture photos),
/// and the perceptual promises a bank relies on, on copies made at test time with the libvips CLI
/// (ThreatExchange's own pdq/data images are not reachable from this machine, so the bridge-style set is
/// generated from the shared fixtures).
@Suite struct PDQHashTests {
    struct Reference: Decodable {
        struct Image: Decodable {
            var file: String
            var width: Int
            var height: Int
            var pdq: String
            var quality: Int
            var dihedral: [String]
        }
        var images: [Image]
    }

    static let processor: VipsImageProcessor? = try? VipsImageProcessor(maxPixels: 100_000_000)
    static let options = ImageOptions()

    static func fingerprint(_ url: URL) throws -> PDQFingerprint {
        let processor = try #require(processor)
        let data = try Data(contentsOf: url)
        return try #require(try processor.fingerprint(data, format: try processor.sniff(data), options: options))
    }

    /// Where the pixels are the same (PNGs no larger than the 640 px classifier copy Sluice hashes), every hash,
    /// the quality and all 8 dihedral hashes equal the reference's bit for bit. Larger JPEGs are hashed from
    /// Sluice's 640 px copy (libvips' shrink-on-load and Lanczos resize, libjpeg-turbo's decoder) while the
    /// reference sees Pillow's full-size decode: they stay within 16 bits (12 at most seen).
    @Test func agreesWithTheReferenceImplementation() throws {
        let reference = try JSONDecoder().decode(Reference.self, from: try Data(contentsOf: TestEnvironment.repositoryRoot
            .appendingPathComponent("Tests/Fixtures/pdq/reference.json")))
        #expect(reference.images.count >= 20)
        var exact = 0
        for image in reference.images {
            let ours = try Self.fingerprint(TestEnvironment.fixture("images/\(image.file)"))
            let theirs = try #require(PDQHash(hex: image.pdq))
            let samePixels = image.file.hasSuffix(".png") && max(image.width, image.height) <= Self.options.classifyMaxSide
            if samePixels {
                exact += 1
                #expect(ours.hash == theirs, "\(image.file)")
                #expect(ours.quality == image.quality, "\(image.file)")
                #expect(ours.dihedral.map(\.hex) == image.dihedral, "\(image.file): dihedral hashes")
            } else {
                #expect(ours.hash.distance(to: theirs) <= 16, "\(image.file): \(ours.hash.distance(to: theirs)) bits from the reference")
                #expect(abs(ours.quality - image.quality) <= 10, "\(image.file)")
                for (variant, (mine, ref)) in zip(ours.dihedral, image.dihedral).enumerated() {
                    let refHash = try #require(PDQHash(hex: ref))
                    #expect(mine.distance(to: refHash) <= 16, "\(image.file): dihedral \(variant)")
                }
            }
        }
        #expect(exact >= 6)
    }

    /// Natural photos: re-encoded at half size, cropped by 1% a side, greyscale, brighter — each within PDQ's
    /// match threshold (31) of the original; rotations and flips match through the dihedral hashes; different
    /// photos are far apart. (Fine textures — the brick, grass and gravel fixtures — are where PDQ is weakest;
    /// they are only used as unrelated images here.)
    @Test func modifiedCopiesMatchAndUnrelatedImagesDoNot() async throws {
        let vips = URL(fileURLWithPath: "/usr/bin/vips")
        try #require(FileManager.default.isExecutableFile(atPath: vips.path), "libvips-tools (the vips CLI) makes the modified copies")
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("pdq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let photos = ["photos/chelsea.png", "photos/coffee.png", "photos/coins.png", "photos/rocket.jpg", "photos/hubble_deep_field.jpg",
                      "orientation/Landscape_1.jpg", "orientation/Portrait_1.jpg"]
        var originals: [String: PDQFingerprint] = [:]
        for photo in photos {
            let source = TestEnvironment.fixture("images/\(photo)")
            let original = try Self.fingerprint(source)
            originals[photo] = original
            #expect(original.quality >= 50, "\(photo)")
            let name = photo.replacingOccurrences(of: "/", with: "_")
            func made(_ suffix: String, _ arguments: [String]) async throws -> PDQFingerprint {
                let out = work.appendingPathComponent("\(name)-\(suffix)")
                let result = try await shell(vips, arguments.map { $0 == "OUT" ? out.path : $0 == "IN" ? source.path : $0 })
                try #require(result.status == 0, "vips \(arguments.joined(separator: " ")): \(result.stderr)")
                return try Self.fingerprint(URL(fileURLWithPath: out.path.components(separatedBy: "[").first ?? out.path))
            }
            let header = try await shell(URL(fileURLWithPath: "/usr/bin/vipsheader"), ["-f", "width", source.path])
            let height = try await shell(URL(fileURLWithPath: "/usr/bin/vipsheader"), ["-f", "height", source.path])
            let w = try #require(Int(header.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            let h = try #require(Int(height.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            let close = [
                ("half size, JPEG quality 50", try await made("half.jpg[Q=50]", ["resize", "IN", "OUT", "0.5"])),
                ("1% cropped from each side", try await made("crop.png", ["crop", "IN", "OUT", "\(w / 100)", "\(h / 100)", "\(w * 98 / 100)", "\(h * 98 / 100)"])),
                ("greyscale", try await made("grey.png", ["colourspace", "IN", "OUT", "b-w"])),
                ("brighter", try await made("bright.png", ["linear", "IN", "OUT", "1.1", "10"])),
            ]
            for (what, copy) in close {
                #expect(copy.hash.distance(to: original.hash) <= 31, "\(photo) \(what): \(copy.hash.distance(to: original.hash)) bits")
            }
            for turn in ["d90", "d180", "d270"] {
                let turned = try await made("\(turn).png", ["rot", "IN", "OUT", turn])
                let nearest = original.dihedral.map { $0.distance(to: turned.hash) }.min() ?? 256
                #expect(nearest <= 31, "\(photo) turned \(turn): \(nearest) bits from the nearest dihedral hash")
            }
            let flipped = try await made("flip.png", ["flip", "IN", "OUT", "horizontal"])
            #expect((original.dihedral.map { $0.distance(to: flipped.hash) }.min() ?? 256) <= 31, "\(photo) flipped")
        }
        for texture in ["photos/brick.png", "photos/grass.png", "photos/gravel.png"] { originals[texture] = try Self.fingerprint(TestEnvironment.fixture("images/\(texture)")) }
        var distances: [Int] = []
        let names = originals.keys.sorted()
        for (i, a) in names.enumerated() {
            for b in names[(i + 1)...] {
                // Landscape_1 and Portrait_1 are two framings of one scene.
                guard let x = originals[a], let y = originals[b], !(a.hasPrefix("orientation") && b.hasPrefix("orientation")) else { continue }
                let nearest = x.dihedral.map { $0.distance(to: y.hash) }.min() ?? 256
                #expect(nearest > 31, "\(a) and \(b) are different images but \(nearest) bits apart")
                distances.append(x.hash.distance(to: y.hash))
            }
        }
        let sorted = distances.sorted()
        #expect(sorted[sorted.count / 2] > 90, "unrelated images: median \(sorted[sorted.count / 2]) bits apart")
    }

    /// The bank index finds exactly what a linear scan finds, for every threshold (radius 0, 1, 2 and the linear
    /// fallback), with hashes appended after the build.
    @Test func bankIndexFindsExactlyWhatALinearScanFinds() {
        var state: UInt64 = 7
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state ^ (state >> 29)
        }
        var hashes = (0..<20_000).map { _ in PDQHash(words: (next(), next(), next(), next())) }
        var index = PDQIndex(hashes)
        for _ in 0..<5_000 {
            let hash = PDQHash(words: (next(), next(), next(), next()))
            hashes.append(hash)
            index.append(hash)
        }
        for q in 0..<300 {
            var bits = (0..<256).map { hashes[(q * 83) % hashes.count].bit($0) }
            for _ in 0..<(q % 50) { bits[Int(next() % 256)].toggle() }
            let query = q % 3 == 0 ? PDQHash(words: (next(), next(), next(), next())) : PDQHash(bits: bits)
            for threshold in [0, 15, 31, 47, 60] {
                var found = Set<Int>()
                index.search(query, within: threshold) { entry, distance in
                    #expect(distance == hashes[entry].distance(to: query))
                    found.insert(entry)
                }
                let expected = Set(hashes.indices.filter { hashes[$0].distance(to: query) <= threshold })
                #expect(found == expected, "query \(q) threshold \(threshold)")
            }
        }
    }

    @Test func hexRoundTripsInTheReferenceLayout() throws {
        // Bit 0 is the last hex digit's lowest bit, bit 255 the first digit's highest, as the reference prints.
        var bits = [Bool](repeating: false, count: 256)
        bits[0] = true
        bits[255] = true
        let hash = PDQHash(bits: bits)
        #expect(hash.hex == "8" + String(repeating: "0", count: 62) + "1")
        #expect(PDQHash(hex: hash.hex.uppercased()) == hash)
        #expect(PDQHash(hex: "xyz") == nil)
        #expect(PDQHash(hex: String(repeating: "g", count: 64)) == nil)
        #expect(hash.distance(to: PDQHash(bits: [Bool](repeating: false, count: 256))) == 2)
    }

    /// A flat image has nothing to hash: quality 0, which never acts; a 4-pixel image cannot be hashed at all.
    @Test func flatAndTinyImages() throws {
        let processor = try #require(Self.processor)
        let flat = try Self.solidPNG(width: 300, height: 200)
        #expect(try processor.fingerprint(flat, format: .png, options: Self.options)?.quality == 0)
        let tiny = try Self.solidPNG(width: 4, height: 4)
        #expect(try processor.fingerprint(tiny, format: .png, options: Self.options) == nil)
    }

    /// A grey PNG made with the vips CLI.
    static func solidPNG(width: Int, height: Int) throws -> Data {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("flat-\(UUID().uuidString).png")
        defer { try? FileManager.default.removeItem(at: out) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/vips")
        process.arguments = ["black", out.path, "\(width)", "\(height)", "--bands", "3"]
        try process.run()
        process.waitUntilExit()
        return try Data(contentsOf: out)
    }
}
