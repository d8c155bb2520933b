import Foundation
import SluiceCore
import SluiceImaging
import SluiceStore
import SluiceTesting
import Testing

/// The on-disk contract and store rows, driven through the real daemon (`--once`) against a fake provider.
@Suite(.serialized) struct ImagePipelineTests {
    @Test func approvedUploadBecomesCompressedImageAndThumbnailWithoutMetadata() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let sample = TestEnvironment.repositoryRoot.appendingPathComponent("Samples/alice/rocket.jpg")
        let pending = try root.drop(sample, user: "alice", name: "rocket.jpg")

        let store = try await runOnce(root, server: server)

        let item = try #require(try await store.item("alice/rocket"))
        #expect(item.status == .approved)
        #expect(item.kind == .image && item.userId == "alice")
        #expect(item.reason == nil)
        #expect(item.provider == "google-vision")
        #expect(item.safeSearch == cleanResult)
        #expect(item.exif == ExifFindings(hadGPS: true, make: "Canon", model: "Canon EOS 5D Mark IV", orientation: nil))
        #expect(item.outputs.approved == "approved/alice/rocket.jpg")
        #expect(item.outputs.thumbnail == "thumbnails/alice/rocket.jpg")
        #expect(!FileManager.default.fileExists(atPath: pending.path), "pending file must be removed")

        let approved = try read(root.file("approved/alice/rocket.jpg"))
        let thumbnail = try read(root.file("thumbnails/alice/rocket.jpg"))
        #expect(JPEGInspector.metadataSegments(approved).isEmpty)
        #expect(JPEGInspector.metadataSegments(thumbnail).isEmpty)
        let source = try read(sample)
        #expect(JPEGInspector.dimensions(approved).map { $0.width == 640 && $0.height == 427 } == true)
        let thumb = try #require(JPEGInspector.dimensions(thumbnail))
        #expect(max(thumb.width, thumb.height) == 200)
        let difference = try PixelComparison.meanAbsoluteDifference(approved, source)
        #expect(difference < 8, "approved output differs from the upload by \(difference)")
        #expect(item.outputs.approvedBytes == approved.count)

        // The classifier got a small JPEG with no metadata, in the exact Google shape.
        #expect(server.problems.isEmpty, "\(server.problems)")
        let sent = try #require(server.received.first?.image)
        let sentSize = try #require(JPEGInspector.dimensions(sent))
        #expect(max(sentSize.width, sentSize.height) <= 640)
        #expect(JPEGInspector.metadataSegments(sent).isEmpty)

        let events = try await store.events(of: "alice/rocket")
        #expect(events.map(\.type) == ["received", "verdict"])
        #expect(events.last?.toStatus == .approved)
    }

    @Test func largeImageIsShrunkToTheConfiguredProfile() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/orientation/Landscape_1.jpg"), user: "u1", name: "big.jpg")
        try await runOnce(root, server: server) { config in
            config.output.maxSide = 1024
            config.output.quality = 70
        }
        let approved = try read(root.file("approved/u1/big.jpg"))
        let size = try #require(JPEGInspector.dimensions(approved))
        #expect(size.width == 1024 && size.height == 683)
    }

    /// At 1920 px the 1800 px fixtures are decoded whole; at 400 px libjpeg decodes them at a quarter first
    /// (shrink-on-load) and the rotation comes after: both must be upright, the right size, and look the same.
    @Test(arguments: [1920, 400]) func everyOrientationIsRotatedUpright(maxSide: Int) async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        for shape in ["Landscape", "Portrait"] {
            for n in 0...8 {
                try root.drop(TestEnvironment.fixture("images/orientation/\(shape)_\(n).jpg"), user: "orient", name: "\(shape)_\(n).jpg")
            }
        }
        let store = try await runOnce(root, server: server) { $0.output.maxSide = maxSide }
        for shape in ["Landscape", "Portrait"] {
            let reference = try read(TestEnvironment.fixture("images/orientation/\(shape)_1.jpg"))
            let upright = try #require(JPEGInspector.dimensions(reference))
            let scale = min(1, Double(maxSide) / Double(max(upright.width, upright.height)))
            let expected = (width: Int((Double(upright.width) * scale).rounded()), height: Int((Double(upright.height) * scale).rounded()))
            for n in 0...8 {
                let item = try #require(try await store.item("orient/\(shape)_\(n)"))
                #expect(item.status == .approved, "\(shape)_\(n): \(item.reason ?? "")")
                let output = try read(root.file("approved/orient/\(shape)_\(n).jpg"))
                let size = try #require(JPEGInspector.dimensions(output))
                #expect(size.width == expected.width && size.height == expected.height, "\(shape)_\(n) is \(size) at \(maxSide) px")
                let difference = try PixelComparison.meanAbsoluteDifference(output, reference)
                #expect(difference < 6, "\(shape)_\(n) differs from \(shape)_1 by \(difference)")
                if n >= 2 { #expect(item.exif?.orientation == n, "\(shape)_\(n) recorded \(String(describing: item.exif))") }
            }
        }
    }

    /// A photo with an embedded (Adobe RGB) profile comes out with the same colours whether libjpeg decodes it
    /// at half size first (fitting 200 px) or whole (fitting 400 px): the profile is applied on both paths.
    @Test func iccPhotoDecodedAtAFractionKeepsItsColours() async throws {
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let source = TestEnvironment.fixture("images/photos/rocket.jpg")
        var outputs: [Data] = []
        for maxSide in [200, 400] {
            let root = try TemporaryDataRoot()
            try root.drop(source, user: "u1", name: "rocket.jpg")
            let store = try await runOnce(root, server: server) { $0.output.maxSide = maxSide }
            #expect(try await store.item("u1/rocket")?.status == .approved)
            let approved = try read(root.file("approved/u1/rocket.jpg"))
            #expect(JPEGInspector.dimensions(approved).map { max($0.width, $0.height) } == maxSide)
            #expect(JPEGInspector.metadataSegments(approved).isEmpty)
            outputs.append(approved)
        }
        // Without the profile applied the colours move by ~5.7 per channel on average.
        let difference = try PixelComparison.meanAbsoluteDifference(outputs[0], outputs[1])
        #expect(difference < 2, "the half-size decode differs from the whole one by \(difference)")
    }

    @Test func exifEdgeCasesLeaveNoMetadataInOutputs() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let files = TestEnvironment.fixtureFiles("images/exif-edge")
        #expect(files.count >= 15)
        for file in files {
            let id = file.deletingPathExtension().lastPathComponent.replacingOccurrences(of: ".", with: "_")
            try root.drop(file, user: "edge", name: id + ".jpg")
        }
        let store = try await runOnce(root, server: server)
        for file in files {
            let id = file.deletingPathExtension().lastPathComponent.replacingOccurrences(of: ".", with: "_")
            let item = try #require(try await store.item("edge/\(id)"))
            #expect(item.status == .approved || item.status == .rejected, "\(id): \(item.status)")
            if item.status == .approved {
                for folder in ["approved", "thumbnails"] {
                    let output = try read(root.file("\(folder)/edge/\(id).jpg"))
                    #expect(JPEGInspector.metadataSegments(output).isEmpty, "\(folder)/\(id) has \(JPEGInspector.metadataSegments(output))")
                }
            } else {
                #expect(item.reason?.isEmpty == false)
            }
        }
        #expect(try await store.item("edge/exif_gps")?.exif?.hadGPS == true)
        #expect(try await store.item("edge/hopper")?.exif?.hadGPS == false)
        #expect(try await store.item("edge/hopper_orientation_6")?.exif?.orientation == 6)
    }

    @Test func pngWithGPSIsRecordedAndStripped() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try root.drop(TestEnvironment.repositoryRoot.appendingPathComponent("Samples/alice/coffee.png"), user: "alice", name: "coffee.png")
        try root.drop(TestEnvironment.repositoryRoot.appendingPathComponent("Samples/carol/coins.png"), user: "carol", name: "coins.png")
        let store = try await runOnce(root, server: server)
        let coffee = try #require(try await store.item("alice/coffee"))
        #expect(coffee.status == .approved)
        #expect(coffee.format == "png")
        #expect(coffee.exif?.hadGPS == true)
        #expect(coffee.exif?.make == "Apple")
        #expect(JPEGInspector.metadataSegments(try read(root.file("approved/alice/coffee.jpg"))).isEmpty)
        #expect(try await store.item("carol/coins")?.status == .approved, "greyscale PNG becomes an sRGB JPEG")
    }

    /// A location written only in XMP (an editor's or an app's, no EXIF GPS directory) is reported as GPS the upload
    /// carried, and stripped like the rest; an XMP packet without one is not.
    @Test func xmpOnlyGPSIsRecordedAndStripped() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let hopper = try #require(TestEnvironment.fixtureFiles("images/exif-edge").first { $0.lastPathComponent == "hopper.jpg" })
        let plain = try read(hopper)
        func withXMP(_ description: String) -> Data {
            let packet = #"<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">"#
                + #"<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">"# + description
                + #"</rdf:RDF></x:xmpmeta><?xpacket end="w"?>"#
            let payload = Array("http://ns.adobe.com/xap/1.0/\0".utf8) + Array(packet.utf8)
            let length = payload.count + 2
            return Data([0xFF, 0xD8, 0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload) + plain.dropFirst(2)
        }
        let files = [
            ("located", withXMP(#"<rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="48,51.5N" exif:GPSLongitude="2,17.4E"/>"#)),
            ("element", withXMP(#"<rdf:Description rdf:about="" xmlns:e="http://ns.adobe.com/exif/1.0/"><e:GPSLongitude>2,17.4E</e:GPSLongitude></rdf:Description>"#)),
            ("plain", withXMP(#"<rdf:Description rdf:about=""><GPSLatitude xmlns="http://ns.adobe.com/exif/1.0/">48,51.5N</GPSLatitude></rdf:Description>"#)),
            ("unlocated", withXMP(#"<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/" xmp:CreatorTool="an editor"/>"#)),
            // A reference without the altitude itself (and a name that only starts like one) is no location.
            ("unlocated-ref", withXMP(#"<rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSAltitudeRef="0"/>"#)),
        ]
        for (name, bytes) in files {
            #expect(JPEGInspector.metadataSegments(bytes).contains("XMP"), "\(name): \(JPEGInspector.metadataSegments(bytes))")
            try root.drop(bytes, user: "dora", name: "\(name).jpg")
        }
        let store = try await runOnce(root, server: server)
        for (name, _) in files {
            let item = try #require(try await store.item("dora/\(name)"))
            #expect(item.status == .approved, "\(name): \(item.status) \(item.reason ?? "")")
            #expect(item.exif?.hadGPS == !name.hasPrefix("unlocated"), "\(name)")
            #expect(JPEGInspector.metadataSegments(try read(root.file("approved/dora/\(name).jpg"))).isEmpty)
        }
    }

    @Test func hostileFilesAreRejectedWithAReason() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let files = TestEnvironment.fixtureFiles("images/hostile", recursive: true)
        #expect(files.count >= 40)
        var ids: [String: URL] = [:]
        for (index, file) in files.enumerated() {
            let id = "h\(index)"
            ids[id] = file
            try root.drop(file, user: "hostile", name: id)
        }
        let store = try await runOnce(root, server: server)
        for (id, file) in ids.sorted(by: { $0.key < $1.key }) {
            let item = try #require(try await store.item("hostile/\(id)"), "\(file.lastPathComponent) has no row")
            // A hostile file is never approved on the strength of a decode that went wrong: rejected with a reason,
            // or (for the few that are valid images with odd headers) carried through cleanly.
            if item.status == .rejected {
                #expect(item.reason?.isEmpty == false, "\(file.lastPathComponent)")
                #expect(item.original.map { root.exists($0) } == true, "\(file.lastPathComponent) original kept in rejected/")
            } else {
                #expect(item.status == .approved, "\(file.lastPathComponent): \(item.status) \(item.reason ?? "")")
                let output = try read(root.file("approved/hostile/\(id).jpg"))
                #expect(JPEGInspector.metadataSegments(output).isEmpty)
            }
        }
        // One OSS-Fuzz file is a well-formed 31×32 lossless WebP (it once crashed libvips' WebP *encoder*,
        // which Sluice never runs); every other hostile file must be rejected.
        let rejected = try await store.items(status: .rejected).count
        #expect(rejected >= files.count - 1, "only \(rejected) of \(files.count) hostile files rejected")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.pending.appendingPathComponent("hostile").path).isEmpty)
    }

    @Test func knownHostileFilesNameTheProblem() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        let cases: [(String, String)] = [
            ("images/hostile/libvips-testsuite/truncated.jpg", "truncated"),
            ("images/hostile/libvips-testsuite/17000x17000.avif", "17000x17000"),
            ("images/hostile/pillow/decompression_bomb.gif", "65535×1321 at 0,65280) extends beyond its 32×32 canvas"),
            ("images/hostile/pillow/oom-225817ca0f8c663be7ab4b9e717b02c661e66834.tif", "TIFF"),
            ("images/hostile/pillow/decompression_bomb.ico", "ICO"),
            ("images/hostile/pillow/png_decompression_dos.png", "decompression bomb"),
            ("images/hostile/pillow/truncated_end_chunk.png", "truncated"),
            ("images/hostile/pillow/decompression_bomb_extents.gif", "beyond its 100×100 canvas"),
            ("images/hostile/pillow/icc_profile_big.jpg", "ICC profile"),
            ("images/hostile/pillow/truncated_exif_dpi.jpg", "malformed EXIF"),
        ]
        for (index, (path, _)) in cases.enumerated() { try root.drop(TestEnvironment.fixture(path), user: "named", name: "c\(index)") }
        let store = try await runOnce(root, server: server)
        for (index, (path, word)) in cases.enumerated() {
            let item = try #require(try await store.item("named/c\(index)"))
            #expect(item.status == .rejected, "\(path)")
            #expect(item.reason?.localizedCaseInsensitiveContains(word) == true, "\(path): \(item.reason ?? "nil")")
        }
    }

    @Test func byteAndPixelLimitsComeFromConfig() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "heavy.jpg")
        let first = try await runOnce(root, server: server) { $0.limits.maxBytes = 50_000 }
        let heavy = try #require(try await first.item("u/heavy"))
        #expect(heavy.status == .rejected)
        #expect(heavy.reason?.contains("over the 50000 byte limit") == true, "\(heavy.reason ?? "")")
        #expect(root.exists("rejected/u/heavy.jpg"))

        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "wide.jpg")
        let second = try await runOnce(root, server: server) { $0.limits.maxPixels = 100_000 }
        let wide = try #require(try await second.item("u/wide"))
        #expect(wide.status == .rejected)
        #expect(wide.reason?.contains("too many pixels: 640×427") == true, "\(wide.reason ?? "")")
        #expect(server.received.isEmpty, "nothing over a limit is sent to the provider")
    }

    @Test func verdictsRouteOriginals() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.start { _, index in
            switch index % 3 {
            case 0: .safeSearch(SafeSearch(adult: .veryLikely, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .veryLikely))
            case 1: .safeSearch(SafeSearch(adult: .possible, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .unlikely))
            default: .safeSearch(cleanResult)
            }
        }
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "one.jpg")
        var config = root.config(endpoint: server.endpoint)
        config.concurrency.items = 1
        let store = try await runOnce(root, server: server) { $0.concurrency.items = 1 }
        let blocked = try #require(try await store.item("u/one"))
        #expect(blocked.status == .blocked)
        #expect(blocked.reason == "blocked by policy: adult VERY_LIKELY ≥ LIKELY, racy VERY_LIKELY ≥ VERY_LIKELY")
        #expect(root.exists("quarantine/u/one.jpg"))
        #expect(!root.exists("approved/u/one.jpg") && !root.exists("thumbnails/u/one.jpg"))

        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "u", name: "two")
        _ = try await runOnce(root, server: server)
        let review = try #require(try await store.item("u/two"))
        #expect(review.status == .review)
        #expect(review.reason == "needs review: adult POSSIBLE ≥ POSSIBLE")
        #expect(review.original == "review/u/two.png", "an upload without extension keeps its sniffed one")
        #expect(root.exists("review/u/two.png"))
        #expect(!root.exists("approved/u/two.jpg"))
        _ = config
    }

    @Test func reuploadThatTurnsBadRemovesEarlierOutputs() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.start { _, index in
            index == 0 ? .safeSearch(cleanResult)
                : .safeSearch(SafeSearch(adult: .veryLikely, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .unlikely))
        }
        defer { server.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u", name: "pic.jpg")
        try await runOnce(root, server: server)
        #expect(root.exists("approved/u/pic.jpg"))
        try root.drop(TestEnvironment.fixture("images/photos/hubble_deep_field.jpg"), user: "u", name: "pic.jpg")
        let store = try await runOnce(root, server: server)
        #expect(try await store.item("u/pic")?.status == .blocked)
        #expect(!root.exists("approved/u/pic.jpg") && !root.exists("thumbnails/u/pic.jpg"))
        #expect(root.exists("quarantine/u/pic.jpg"))
        #expect(try await store.events(of: "u/pic").filter { $0.type == "verdict" }.map(\.toStatus) == [.approved, .blocked])
    }
}
