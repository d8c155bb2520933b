import CVipsShim
import Foundation
import SluiceCore
import Synchronization

/// libvips-backed `ImageProcessor`: one decode per image, everything produced from it.
public struct VipsImageProcessor: ImageProcessor {
    public let maxPixels: Int
    /// libvips `fail_on`: `warning` (strict: any decoder complaint rejects the upload), `error` or `truncated`.
    public let failOn: FailOn

    /// Initialises libvips once per process (thread-safe lazy global).
    private static let initialisation: Result<Void, ImagingError> = {
        sluice_vips_init(1) == 0 ? .success(()) : .failure(ImagingError(.internalError, "libvips failed to start: \(lastError())"))
    }()

    public let maxMetadataBytes: Int
    /// Fits images with libvips' own horizontal reduction instead of the shim's unrolled one, and renders and
    /// saves them strip by strip in libvips' thread pools instead of on the calling thread (the same bytes,
    /// slower): how tests check that they are the same.
    let libvipsReduction: Bool
    /// Transforms from the embedded ICC profiles met so far to sRGB (built once per profile, not per upload).
    let iccTransforms = ICCTransforms()

    public init(maxPixels: Int, failOn: FailOn = .warning, maxMetadataBytes: Int = 256 * 1024) throws(ImagingError) {
        try self.init(maxPixels: maxPixels, failOn: failOn, maxMetadataBytes: maxMetadataBytes, libvipsReduction: false)
    }

    init(maxPixels: Int, failOn: FailOn, maxMetadataBytes: Int, libvipsReduction: Bool) throws(ImagingError) {
        try Self.initialisation.get()
        self.maxPixels = maxPixels
        self.failOn = failOn
        self.maxMetadataBytes = maxMetadataBytes
        self.libvipsReduction = libvipsReduction
    }

    public func sniff(_ data: Data) throws(ImagingError) -> ImageFormat {
        try FormatSniffer.sniff(data)
    }

    public func header(_ data: Data, format: ImageFormat) throws(ImagingError) -> ImageHeader {
        try StructureCheck.check(data, format: format, maxMetadataBytes: maxMetadataBytes)
        return try Self.withOwnErrorMessage { () throws(ImagingError) in try readHeader(data, format: format) }
    }

    public func process(_ data: Data, format: ImageFormat, options: ImageOptions) throws(ImagingError) -> ProcessedImage {
        try Self.withOwnErrorMessage { () throws(ImagingError) in try processOnce(data, format: format, options: options) }
    }

    // MARK: - libvips' process-wide error buffer

    static let noDetail = "libvips reported no detail"

    /// libvips keeps one error buffer for the whole process: a step failing on one pool thread can find other
    /// threads' messages in it (another JPEG's warnings decide "truncated" or "could not be decoded"), or have its
    /// own taken. Steps run side by side under the gate's shared side; a step that fails runs once more alone,
    /// on a cleared buffer, so the reason it reports is its own and the same on every run. Decoding is
    /// deterministic, and failures are rare, so good images never wait.
    private static let gate = ErrorBufferGate()

    static func withOwnErrorMessage<T: Sendable>(_ step: () throws(ImagingError) -> T) throws(ImagingError) -> T {
        do {
            return try gate.shared(step)
        } catch {
            return try gate.exclusive { () throws(ImagingError) -> T in
                _ = readError(about: nil)
                return try step()
            }
        }
    }

    private func readHeader(_ data: Data, format: ImageFormat) throws(ImagingError) -> ImageHeader {
        try withImageBytes(data) { (buffer) throws(ImagingError) -> ImageHeader in
            try checkLoader(buffer, format: format)
            let image = try openHeader(buffer, format: format)
            defer { sluice_vips_unref(image) }
            return ImageHeader(width: Int(image.pointee.Xsize), height: Int(image.pointee.Ysize))
        }
    }

    private func processOnce(_ data: Data, format: ImageFormat, options: ImageOptions) throws(ImagingError) -> ProcessedImage {
        try withImageBytes(data) { (buffer) throws(ImagingError) -> ProcessedImage in
            let (current, exif) = try decodeOnce(buffer, format: format, options: options)
            defer { sluice_vips_unref(current) }
            let approved = try encode(current, quality: options.quality)
            // The classifier copy is made from the decoded pixels, and the thumbnail from the classifier copy
            // when that is still larger than the thumbnail: a 640 px source is plenty for 200 px, and cheaper.
            // The PDQ hash is computed from the classifier copy's pixels too (PDQ sees a 64×64 downsample).
            let small = try resized(current, side: options.classifyMaxSide)
            defer { sluice_vips_unref(small) }
            let classify = try encode(small, quality: options.classifyQuality)
            let thumbnailSource = options.thumbnailSize < options.classifyMaxSide ? small : current
            let thumbnail = try resizedJPEG(thumbnailSource, side: options.thumbnailSize, quality: options.thumbnailQuality)
            return ProcessedImage(exif: exif, classifyJPEG: classify, approvedJPEG: approved, thumbnailJPEG: thumbnail,
                                  width: Int(current.pointee.Xsize), height: Int(current.pointee.Ysize), pdq: Self.fingerprint(of: small))
        }
    }

    public func fingerprint(_ data: Data, format: ImageFormat, options: ImageOptions) throws(ImagingError) -> PDQFingerprint? {
        _ = try header(data, format: format)
        return try Self.withOwnErrorMessage { () throws(ImagingError) in
            try withImageBytes(data) { (buffer) throws(ImagingError) -> PDQFingerprint? in
                let (current, _) = try decodeOnce(buffer, format: format, options: options)
                defer { sluice_vips_unref(current) }
                let small = try resized(current, side: options.classifyMaxSide)
                defer { sluice_vips_unref(small) }
                return Self.fingerprint(of: small)
            }
        }
    }

    /// A `width` × `height` JPEG of stripes, edges and ramps: tests fit photos of any size with it. With
    /// `profile`, it carries that ICC profile (written as it is); with `orientation` (1-8), that EXIF orientation.
    static func patternJPEG(width: Int, height: Int, profile: Data? = nil, orientation: Int = 0) throws(ImagingError) -> Data {
        try initialisation.get()
        if let profile, profile.isEmpty { throw ImagingError(.internalError, "the ICC profile to embed is empty") }
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let made = (profile ?? Data()).withUnsafeBytes { bytes in
            sluice_vips_pattern_jpeg(Int32(width), Int32(height), profile == nil ? nil : bytes.baseAddress, bytes.count, Int32(orientation),
                                     &buffer, &length)
        }
        guard made == 0, let buffer else {
            throw ImagingError(.internalError, "could not make a \(width)×\(height) pattern: \(lastError())")
        }
        defer { sluice_g_free(buffer) }
        return Data(bytes: buffer, count: length)
    }

    /// The PDQ hash of an 8-bit image held in memory.
    private static func fingerprint(of image: UnsafeMutablePointer<VipsImage>) -> PDQFingerprint? {
        guard let data = vips_image_get_data(image) else { return nil }
        let width = Int(image.pointee.Xsize), height = Int(image.pointee.Ysize), bands = Int(image.pointee.Bands)
        let pixels = UnsafeRawBufferPointer(start: data, count: width * height * bands)
        return PDQHasher.fingerprint(pixels: pixels, width: width, height: height, bands: bands, rowBytes: width * bands)
    }

    /// The one decode, checked: loader, header, pixel limit, EXIF, then shrink-on-load, rotate, flatten, sRGB,
    /// rendered into memory (the caller unrefs it) for every output made from it.
    private func decodeOnce(_ buffer: UnsafeRawBufferPointer, format: ImageFormat,
                            options: ImageOptions) throws(ImagingError) -> (UnsafeMutablePointer<VipsImage>, ExifFindings) {
        try checkLoader(buffer, format: format)
        let header = try openHeader(buffer, format: format)
        defer { sluice_vips_unref(header) }
        let pixels = Int(header.pointee.Xsize) * Int(header.pointee.Ysize)
        guard pixels <= maxPixels else {
            throw ImagingError(.tooManyPixels, "image is \(header.pointee.Xsize)×\(header.pointee.Ysize) = \(pixels) pixels, over the \(maxPixels) pixel limit")
        }
        var exif = ExifFindings.none
        var blob: UnsafeRawPointer?
        var blobLength = 0
        if sluice_vips_exif_blob(header, &blob, &blobLength) == 1, let blob {
            exif = ExifReader.findings(fromExifBlock: UnsafeRawBufferPointer(start: blob, count: blobLength))
        }
        // A location can be written in XMP alone (editors and some phones' apps do): it is stripped with the rest, and
        // reported as GPS the upload carried.
        if !exif.hadGPS, sluice_vips_xmp_blob(header, &blob, &blobLength) == 1, let blob,
           ExifReader.xmpHasGPS(UnsafeRawBufferPointer(start: blob, count: blobLength)) {
            exif.hadGPS = true
        }

        // The one decode: shrink-on-load, rotate, sRGB; then kept in memory for all three encodes.
        var decoded: UnsafeMutablePointer<VipsImage>?
        let (width, height) = (Int(header.pointee.Xsize), Int(header.pointee.Ysize))
        // JPEG and PNG are loaded by the shim and fitted with its reduction (a JPEG shrunk on load by libjpeg first);
        // other formats (0) by libvips' thumbnail, which shrinks WebP and HEIF on load its own way. With libvips'
        // reduction (a comparison), libvips' thumbnail also loads whatever libjpeg would not shrink.
        let jpegShrink = Self.jpegShrink(longSide: max(width, height), shortSide: min(width, height), maxSide: options.maxSide)
        let loadShrink = switch format {
        case .jpeg where jpegShrink > 1: jpegShrink
        case .jpeg, .png: libvipsReduction ? 0 : 1
        case .webp, .gif, .heif, .avif: 0
        }
        guard sluice_vips_thumbnail_buffer(buffer.baseAddress, buffer.count, &decoded,
                                           Int32(options.maxSide), Int32(options.maxSide), "fail_on=\(failOn.rawValue)",
                                           sluice_vips_has_icc(header), Int32(loadShrink), libvipsReduction ? 1 : 0,
                                           iccTransforms.cache) == 0, let decoded
        else { throw decodeError(format) }
        var current = decoded
        var handedOver = false
        defer { if !handedOver { sluice_vips_unref(current) } }
        if vips_image_hasalpha(current) != 0 {
            var flat: UnsafeMutablePointer<VipsImage>?
            guard sluice_vips_flatten_white(current, &flat) == 0, let flat else { throw decodeError(format) }
            sluice_vips_unref(current)
            current = flat
        }
        if current.pointee.Type != VIPS_INTERPRETATION_sRGB || current.pointee.BandFmt != VIPS_FORMAT_UCHAR {
            var srgb: UnsafeMutablePointer<VipsImage>?
            guard sluice_vips_to_srgb(current, &srgb) == 0, let srgb else { throw decodeError(format) }
            sluice_vips_unref(current)
            current = srgb
        }
        // A small upload is decoded on this thread (see sluice_vips_render_memory); a large one strip by strip, as
        // libvips does everything when it is the reference (`libvipsReduction`).
        let here = !libvipsReduction && sluice_vips_renders_here(header) != 0
        guard let memory = sluice_vips_render_memory(current, here ? 1 : 0) else { throw decodeError(format) }
        sluice_vips_unref(current)
        current = memory
        handedOver = true
        return (current, exif)
    }

    /// The largest libjpeg DCT shrink (8, 4 or 2) that still leaves the long side at least `maxSide`, so the
    /// Lanczos reduction after it only ever shrinks; 1 when the image is less than twice the target. Never more
    /// than the short side: libvips 8.14's JPEG loader sizes a 1 px wide image shrunk by 2 as 0 px wide and
    /// aborts the process on it (a 1×4000 upload stopped the daemon).
    static func jpegShrink(longSide: Int, shortSide: Int, maxSide: Int) -> Int {
        [8, 4, 2].first { longSide / $0 >= maxSide && shortSide >= $0 } ?? 1
    }

    // MARK: - Helpers

    private func withImageBytes<T>(_ data: Data, _ body: (UnsafeRawBufferPointer) throws(ImagingError) -> T) throws(ImagingError) -> T {
        let result: Result<T, ImagingError> = data.withUnsafeBytes { buffer in
            do throws(ImagingError) { return .success(try body(buffer)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// libvips must agree with the sniffed format, so no other loader ever sees the bytes.
    private func checkLoader(_ buffer: UnsafeRawBufferPointer, format: ImageFormat) throws(ImagingError) {
        guard let loaderName = sluice_vips_loader(buffer.baseAddress, buffer.count) else {
            _ = Self.lastError()
            throw ImagingError(.unsupportedFormat, "\(format.rawValue.uppercased()) data that libvips cannot load here (no loader accepts it)")
        }
        let loader = String(cString: loaderName).lowercased()
        let expected: [String] = switch format {
        case .jpeg: ["jpeg"]
        case .png: ["png"]
        case .webp: ["webp"]
        case .gif: ["gif"]
        case .heif, .avif: ["heif"]
        }
        guard expected.contains(where: loader.contains) else {
            throw ImagingError(.untrustedFormat, "libvips would load this \(format.rawValue.uppercased()) with \(loader), which is not allowed")
        }
    }

    private func openHeader(_ buffer: UnsafeRawBufferPointer, format: ImageFormat) throws(ImagingError) -> UnsafeMutablePointer<VipsImage> {
        guard let image = sluice_vips_open_header(buffer.baseAddress, buffer.count) else {
            throw ImagingError(.corrupt, "\(format.rawValue.uppercased()) header could not be read: \(Self.lastError(about: format))")
        }
        if image.pointee.Xsize <= 0 || image.pointee.Ysize <= 0 {
            sluice_vips_unref(image)
            throw ImagingError(.corrupt, "\(format.rawValue.uppercased()) header declares an empty image")
        }
        return image
    }

    private func resizedJPEG(_ image: UnsafeMutablePointer<VipsImage>, side: Int, quality: Int) throws(ImagingError) -> Data {
        let small = try resized(image, side: side)
        defer { sluice_vips_unref(small) }
        return try encode(small, quality: quality)
    }

    /// Fits `side`×`side` (never enlarges), rendered into memory so it can feed more than one consumer.
    private func resized(_ image: UnsafeMutablePointer<VipsImage>, side: Int) throws(ImagingError) -> UnsafeMutablePointer<VipsImage> {
        var resized: UnsafeMutablePointer<VipsImage>?
        guard sluice_vips_thumbnail_image(image, &resized, Int32(side), Int32(side), libvipsReduction ? 1 : 0) == 0, let resized else {
            throw ImagingError(.internalError, "resize to \(side) px failed: \(Self.lastError())")
        }
        defer { sluice_vips_unref(resized) }
        // From the decoded image in memory: rendered on this thread unless that image is huge (output.maxSide).
        guard let memory = sluice_vips_render_memory(resized, libvipsReduction ? 0 : sluice_vips_renders_here(image)) else {
            throw ImagingError(.internalError, "resize to \(side) px failed: \(Self.lastError())")
        }
        return memory
    }

    private func encode(_ image: UnsafeMutablePointer<VipsImage>, quality: Int) throws(ImagingError) -> Data {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        let saved = libvipsReduction ? sluice_vips_jpegsave_buffer_libvips(image, &buffer, &length, Int32(quality))
            : sluice_vips_jpegsave_buffer(image, &buffer, &length, Int32(quality))
        guard saved == 0, let buffer else {
            throw ImagingError(.internalError, "JPEG encode failed: \(Self.lastError())")
        }
        defer { sluice_g_free(buffer) }
        return Data(bytes: buffer, count: length)
    }

    private func decodeError(_ format: ImageFormat) -> ImagingError {
        let message = Self.lastError(about: format)
        let lowered = message.lowercased()
        if lowered.contains("truncat") || lowered.contains("premature end") || lowered.contains("unexpected end")
            || lowered.contains("out of data") {
            return ImagingError(.truncated, "\(format.rawValue.uppercased()) is truncated: \(message)")
        }
        return ImagingError(.corrupt, "\(format.rawValue.uppercased()) could not be decoded: \(message)")
    }

    /// The error buffer's text (reading clears it); with a format, only lines from that format's loader (or
    /// generic ones) are kept, deduplicated.
    static func lastError(about format: ImageFormat? = nil) -> String { readError(about: format) }

    private static func readError(about format: ImageFormat?) -> String {
        guard let copy = sluice_vips_error_copy() else { return noDetail }
        defer { sluice_g_free(copy) }
        let markers: [String] = switch format {
        case .jpeg: ["jpeg", "jpg"]
        case .png: ["png"]
        case .webp: ["webp"]
        case .gif: ["gif"]
        case .heif, .avif: ["heif", "avif"]
        case nil: []
        }
        let others = ["jpeg", "png", "webp", "gif", "heif", "tiff"].filter { !markers.contains($0) }
        var seen = Set<String>()
        let lines = String(cString: copy).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { line in
                guard !line.isEmpty, seen.insert(line).inserted else { return false }
                let lowered = line.lowercased()
                if markers.contains(where: lowered.contains) { return true }
                return !others.contains(where: lowered.contains)
            }
        let text = lines.prefix(3).joined(separator: "; ")
        return text.isEmpty ? noDetail : String(text.prefix(400))
    }
}
