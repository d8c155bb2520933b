import Foundation
import SluiceCore
@testable import SluiceImaging
import SluiceTesting
import Testing

/// Images are fitted by the shim's unrolled Lanczos3 reduction instead of libvips' own where a reduction is by
/// less than 4 (a phone photo's 1920 px copy after libjpeg's shrink-on-load, its 640 px classifier copy and the
/// thumbnail: the largest costs of the image path): every output must stay byte for byte what libvips'
/// reduction makes, whatever the size, orientation and number of taps.
struct ImageReductionTests {
    /// 60 px (tiny inputs, mostly edge pixels), 240/250/300/400 px (13, 11, 9 and 7 taps on the 1800 px
    /// fixtures decoded at a quarter), 700 px (at half), 1920 px (decoded whole); classifier copies a third and
    /// a half of that (19 and 13 taps), thumbnails from them.
    @Test func shimReductionMakesTheSameBytesAsLibvips() throws {
        let unrolled = try VipsImageProcessor(maxPixels: 50_000_000)
        let libvips = try VipsImageProcessor(maxPixels: 50_000_000, failOn: .warning, maxMetadataBytes: 256 * 1024, libvipsReduction: true)
        let files = (TestEnvironment.fixtureFiles("images/orientation") + TestEnvironment.fixtureFiles("images/photos")
            + TestEnvironment.fixtureFiles("images/exif-edge")).filter { $0.pathExtension == "jpg" }
        #expect(files.count >= 30)
        var fittedAtAFraction = 0
        for (maxSide, classifyDivisor) in [(60, 3), (240, 2), (250, 3), (300, 2), (400, 3), (700, 3), (1920, 3)] {
            let options = ImageOptions(maxSide: maxSide, thumbnailSize: maxSide / 9, classifyMaxSide: maxSide / classifyDivisor)
            for file in files {
                let data = try Data(contentsOf: file)
                guard let header = try? unrolled.header(data, format: .jpeg) else { continue }
                let expected = try libvips.process(data, format: .jpeg, options: options)
                let made = try unrolled.process(data, format: .jpeg, options: options)
                let name = "\(file.lastPathComponent) at \(maxSide) px"
                #expect(made.approvedJPEG == expected.approvedJPEG, "\(name): approved copy differs")
                #expect(made.classifyJPEG == expected.classifyJPEG, "\(name): classifier copy differs")
                #expect(made.thumbnailJPEG == expected.thumbnailJPEG, "\(name): thumbnail differs")
                #expect(made.width == expected.width && made.height == expected.height, "\(name): size differs")
                if VipsImageProcessor.jpegShrink(longSide: max(header.width, header.height), maxSide: maxSide) > 1 { fittedAtAFraction += 1 }
            }
        }
        // The orientation set alone, at five sizes, is decoded at a fraction: the unrolled path really ran.
        #expect(fittedAtAFraction >= 90, "only \(fittedAtAFraction) images went through the shim's reduction")
    }
}
