import Foundation
import Synchronization
import SluiceCore
@testable import SluiceImaging
import SluiceTesting
import Testing

/// Images are fitted by the shim's unrolled Lanczos3 reduction instead of libvips' own where a reduction is by
/// less than 4 (a phone photo's 1920 px copy after libjpeg's shrink-on-load, its 640 px classifier copy and the
/// thumbnail: the largest costs of the image path): every output must stay byte for byte what libvips'
/// reduction makes, whatever the size, orientation and number of taps.
struct ImageReductionTests {
    let unrolled: VipsImageProcessor
    let libvips: VipsImageProcessor

    init() throws {
        unrolled = try VipsImageProcessor(maxPixels: 50_000_000)
        libvips = try VipsImageProcessor(maxPixels: 50_000_000, failOn: .warning, maxMetadataBytes: 256 * 1024, libvipsReduction: true)
    }

    /// Processes `data` with both reductions and expects the same approved, classifier and thumbnail JPEGs.
    @discardableResult
    func expectSameOutputs(_ data: Data, format: ImageFormat = .jpeg, options: ImageOptions, _ name: String) throws -> ProcessedImage {
        let expected = try libvips.process(data, format: format, options: options)
        let made = try unrolled.process(data, format: format, options: options)
        // Compared as booleans: a failing `==` on two JPEGs would have the test library diff their bytes (minutes).
        for (output, mine, theirs) in [("approved copy", made.approvedJPEG, expected.approvedJPEG),
                                       ("classifier copy", made.classifyJPEG, expected.classifyJPEG),
                                       ("thumbnail", made.thumbnailJPEG, expected.thumbnailJPEG)] {
            let same = mine == theirs
            #expect(same, "\(name): \(output) differs (\(mine.count) bytes, libvips' \(theirs.count))")
        }
        #expect(made.width == expected.width && made.height == expected.height, "\(name): size differs")
        return made
    }

    /// 60 px (tiny inputs, mostly edge pixels), 240/250/300/400 px (13, 11, 9 and 7 taps on the 1800 px
    /// fixtures decoded at a quarter), 700 px (at half), 1920 px (decoded whole); classifier copies a third and
    /// a half of that (19 and 13 taps), thumbnails from them.
    @Test func shimReductionMakesTheSameBytesAsLibvips() throws {
        let files = (TestEnvironment.fixtureFiles("images/orientation") + TestEnvironment.fixtureFiles("images/photos")
            + TestEnvironment.fixtureFiles("images/exif-edge")).filter { $0.pathExtension == "jpg" }
        #expect(files.count >= 30)
        var fittedAtAFraction = 0
        for (maxSide, classifyDivisor) in [(60, 3), (240, 2), (250, 3), (300, 2), (400, 3), (700, 3), (1920, 3)] {
            let options = ImageOptions(maxSide: maxSide, thumbnailSize: maxSide / 9, classifyMaxSide: maxSide / classifyDivisor)
            for file in files {
                let data = try Data(contentsOf: file)
                guard let header = try? unrolled.header(data, format: .jpeg) else { continue }
                try expectSameOutputs(data, options: options, "\(file.lastPathComponent) at \(maxSide) px")
                if VipsImageProcessor.jpegShrink(longSide: max(header.width, header.height), shortSide: min(header.width, header.height),
                                                 maxSide: maxSide) > 1 { fittedAtAFraction += 1 }
            }
        }
        // The orientation set alone, at five sizes, is decoded at a fraction: the unrolled path really ran.
        #expect(fittedAtAFraction >= 90, "only \(fittedAtAFraction) images went through the shim's reduction")
    }

    /// The shim saves an 8-bit sRGB image in memory with libjpeg on the calling thread: every quality libvips'
    /// jpegsave takes (chroma is kept whole from 90, subsampled below), on photos and on patterns of odd sizes
    /// (rows not a multiple of the 8 or 16 lines of an MCU, one-pixel strips, more than 64 rows per write).
    @Test func shimSaveMakesTheSameBytesAsLibvipsAtEveryQuality() throws {
        let photos = (TestEnvironment.fixtureFiles("images/photos") + TestEnvironment.fixtureFiles("images/orientation"))
            .filter { $0.pathExtension == "jpg" }.prefix(4)
        #expect(photos.count == 4)
        var inputs = try photos.map { (try Data(contentsOf: $0), $0.lastPathComponent) }
        for (width, height) in [(1, 333), (333, 1), (17, 9), (97, 131), (640, 361)] {
            inputs.append((try VipsImageProcessor.patternJPEG(width: width, height: height), "\(width)×\(height) pattern"))
        }
        for quality in [1, 30, 75, 89, 90, 97, 100] {
            let options = ImageOptions(maxSide: 400, quality: quality, thumbnailSize: 50, thumbnailQuality: quality,
                                       classifyMaxSide: 150, classifyQuality: quality)
            for (data, name) in inputs {
                try expectSameOutputs(data, options: options, "\(name) at Q\(quality)")
            }
        }
    }

    /// Photo sizes the fixtures do not have, where libvips' stepping and rounding are easy to miss (found by a
    /// review with random sizes): 3844×2882 (a 1922×1441 half-size decode fitted to 1920), 2810×2107 and
    /// 2722×2041 (1 / (1 / shrink) is not shrink), 797×448 and 2556×852 fitted to 200 and 640 (libvips box-shrinks
    /// first when an axis is 4 times smaller or more), one-pixel-wide and -high strips (a 1×4000 JPEG shrunk on
    /// load aborted libvips, and the daemon with it), and assorted others.
    @Test func shimReductionMatchesLibvipsOnAwkwardSizes() throws {
        let sizes = [(3844, 2882), (2810, 2107), (2722, 2041), (2834, 2125), (797, 448), (2556, 852), (1, 1920), (1920, 1),
                     (1, 4000), (4000, 1), (3, 6000), (7, 9000),
                     (3, 31), (2, 300), (451, 338), (251, 188), (1000, 750), (1333, 1000), (4032, 3024), (3000, 4000),
                     (2048, 1536), (1200, 1200), (1921, 1080), (641, 427)]
        let boxes = [(1920, 640, 200), (640, 200, 100), (300, 200, 64)]
        for (width, height) in sizes {
            let data = try VipsImageProcessor.patternJPEG(width: width, height: height)
            for (maxSide, classifyMaxSide, thumbnailSize) in boxes {
                let options = ImageOptions(maxSide: maxSide, thumbnailSize: thumbnailSize, classifyMaxSide: classifyMaxSide)
                try expectSameOutputs(data, options: options, "\(width)×\(height) into \(maxSide)/\(classifyMaxSide)/\(thumbnailSize) px")
            }
        }
    }

    /// The shim also loads PNGs and JPEGs less than twice too large (decoded whole), and fits photos with an
    /// embedded ICC profile (most phone photos: Display P3), reducing them in their own colour space and
    /// transforming the result to sRGB as libvips' thumbnail does: the fixture PNGs, and pattern JPEGs carrying
    /// the fixtures' Adobe RGB (1998) and sRGB profiles, at phone-photo sizes in every EXIF orientation and at
    /// awkward sizes.
    @Test func shimReductionMatchesLibvipsOnPNGsAndProfiledPhotos() throws {
        let pngs = TestEnvironment.fixtureFiles("images/photos").filter { $0.pathExtension == "png" }
        #expect(pngs.count >= 5)
        for maxSide in [100, 200, 250, 300, 400] {
            let options = ImageOptions(maxSide: maxSide, thumbnailSize: maxSide / 5, classifyMaxSide: maxSide / 2)
            for file in pngs {
                try expectSameOutputs(try Data(contentsOf: file), format: .png, options: options, "\(file.lastPathComponent) at \(maxSide) px")
            }
        }
        let photos = TestEnvironment.fixture("images/photos")
        let adobeRGB = try #require(Self.iccProfile(inJPEG: try Data(contentsOf: photos.appendingPathComponent("rocket.jpg"))))
        let sRGB = try #require(Self.iccProfile(inJPEG: try Data(contentsOf: photos.appendingPathComponent("hubble_deep_field.jpg"))))
        for (iccProfile, profile) in [(adobeRGB, "Adobe RGB"), (sRGB, "sRGB")] {
            // A phone photo's sizes in all eight EXIF orientations (the transform comes after the turn), then others.
            let sizes = (1...8).map { (4032, 3024, $0) }
                + [(3000, 2000, 1), (3000, 2000, 6), (3024, 4032, 1), (2048, 1536, 1), (1921, 1080, 8), (1000, 750, 1), (641, 427, 1)]
                // Smaller than the approved copy's box: only the profile's transform and the turn upright, no reduction.
                + [(320, 240, 6), (240, 320, 3), (64, 48, 1)]
            for (width, height, orientation) in sizes {
                let data = try VipsImageProcessor.patternJPEG(width: width, height: height, profile: iccProfile, orientation: orientation)
                for (maxSide, classifyMaxSide, thumbnailSize) in [(1920, 640, 200), (640, 200, 100)] {
                    let options = ImageOptions(maxSide: maxSide, thumbnailSize: thumbnailSize, classifyMaxSide: classifyMaxSide)
                    let made = try expectSameOutputs(data, options: options,
                                                     "\(width)×\(height) \(profile), orientation \(orientation), into \(maxSide)/\(classifyMaxSide)/\(thumbnailSize) px")
                    // The orientation really was in the pattern's EXIF: orientations 5-8 turn it a quarter.
                    #expect((made.width > made.height) == ((width > height) != (orientation >= 5)), "\(width)×\(height), orientation \(orientation): not turned upright")
                }
            }
        }
    }

    /// The shim keeps a transform for each of the first 16 embedded profiles a processor meets; later profiles, and
    /// ones that cannot be read with the relative intent (libvips then falls back to its own sRGB profile), go to
    /// libvips' transform. Either way the outputs are libvips', turned upright, for an image smaller than the box
    /// (only transformed and turned) and one that is reduced: 18 variants of the Adobe RGB profile (their creation
    /// dates differ) and a profile with a perceptual table only (`Tests/Fixtures/icc`).
    @Test func profilesPastTheCacheAndOnesWithoutTheRelativeIntentMatchLibvips() throws {
        let donor = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
        let adobeRGB = try #require(Self.iccProfile(inJPEG: donor), "rocket.jpg carries an Adobe RGB profile")
        // The table-only profile first, while the cache has room for it.
        let profiles = [try Data(contentsOf: TestEnvironment.repositoryRoot.appendingPathComponent("Tests/Fixtures/icc/rgb-perceptual-table-only.icc"))]
            + (0..<18).map { index in
                var profile = adobeRGB
                let year = 2000 + index
                (profile[24], profile[25]) = (UInt8(year >> 8), UInt8(year & 0xFF))
                return profile
            }
        // Smaller than its box, and tall enough that turning it must not read the loader's rows out of order; and
        // one that is reduced.
        let cases = [(1800, 1200, 6, ImageOptions(maxSide: 1920, thumbnailSize: 200, classifyMaxSide: 640), "1800×1200 into 1920"),
                     (1500, 1000, 8, ImageOptions(maxSide: 640, thumbnailSize: 100, classifyMaxSide: 200), "1500×1000 into 640")]
        for (index, profile) in profiles.enumerated() {
            for (width, height, orientation, options, label) in cases {
                let pattern = try VipsImageProcessor.patternJPEG(width: width, height: height, profile: profile, orientation: orientation)
                let made = try expectSameOutputs(pattern, options: options, "\(label), profile \(index + 1)")
                #expect(made.height > made.width, "\(label), profile \(index + 1): not turned upright")
            }
        }
    }

    /// The ICC profile of a JPEG that carries it in one APP2 segment (nil for none, or one split over several).
    static func iccProfile(inJPEG jpeg: Data) -> Data? {
        let bytes = [UInt8](jpeg)
        let marker = Array("ICC_PROFILE".utf8) + [0]
        var offset = 2
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF, (0xE0...0xEF).contains(bytes[offset + 1]) {
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let body = (offset + 4)..<min(bytes.count, offset + 2 + length)
            if bytes[offset + 1] == 0xE2, body.count > marker.count + 2, Array(bytes[body].prefix(marker.count)) == marker {
                // After the marker: this chunk's number and how many there are.
                return bytes[body.lowerBound + marker.count + 1] == 1 ? Data(bytes[(body.lowerBound + marker.count + 2)..<body.upperBound]) : nil
            }
            offset += 2 + length
        }
        return nil
    }

    /// Uploads are fitted on several threads at once, and every reduction libvips builds compiles an Orc program
    /// and frees it again: Debian 12's liborc (0.4.33) keeps its code memory in a list it splits and merges
    /// without a lock, so two threads compiling or freeing at once corrupted it (SIGSEGV or glibc's "invalid next
    /// size"; this test's process crashed in 8 of 12 runs without `orclock.c`). Eight threads fit small images (the
    /// compiling is most of their work) with both reductions, the shim's and vips_thumbnail's, and must each make
    /// the bytes one thread makes.
    @Test func imagesFittedOnSeveralThreadsAtOnceMakeTheBytesOneThreadMakes() throws {
        let options = ImageOptions(maxSide: 40, thumbnailSize: 9, classifyMaxSide: 23)
        let inputs = try [(64, 48), (47, 71), (96, 29)].map { try VipsImageProcessor.patternJPEG(width: $0.0, height: $0.1) }
        let processors = [unrolled, libvips]
        let outputs: @Sendable (ProcessedImage) -> [Data] = { processed in [processed.approvedJPEG, processed.classifyJPEG, processed.thumbnailJPEG] }
        let expectedOutputs = try processors.map { processor in
            try inputs.map { outputs(try processor.process($0, format: .jpeg, options: options)) }
        }
        let mismatches = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for round in 0..<250 {
                let which = (thread + round) % processors.count, input = round % inputs.count
                let made = (try? processors[which].process(inputs[input], format: .jpeg, options: options)).map(outputs)
                if made != expectedOutputs[which][input] { mismatches.withLock { $0 += 1 } }
            }
        }
        #expect(mismatches.withLock { $0 } == 0, "fittings on eight threads made other bytes than one thread")
    }
}
