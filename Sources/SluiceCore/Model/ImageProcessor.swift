import Foundation

/// Formats Sluice accepts, identified by magic bytes.
public enum ImageFormat: String, Sendable, Codable, CaseIterable {
    case jpeg, png, webp, gif, heif, avif

    /// The extension used when keeping the original (quarantine/, review/).
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .webp: "webp"
        case .gif: "gif"
        case .heif: "heic"
        case .avif: "avif"
        }
    }
}

/// Header facts read without decoding pixels.
public struct ImageHeader: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var pixels: Int { width * height }
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

public struct ImageOptions: Sendable, Equatable {
    public var maxSide: Int
    public var quality: Int
    public var thumbnailSize: Int
    public var thumbnailQuality: Int
    public var classifyMaxSide: Int
    public var classifyQuality: Int

    public init(maxSide: Int = 1920, quality: Int = 80, thumbnailSize: Int = 200, thumbnailQuality: Int = 75,
                classifyMaxSide: Int = 640, classifyQuality: Int = 85) {
        self.maxSide = maxSide
        self.quality = quality
        self.thumbnailSize = thumbnailSize
        self.thumbnailQuality = thumbnailQuality
        self.classifyMaxSide = classifyMaxSide
        self.classifyQuality = classifyQuality
    }

    public init(config: PipelineConfig) {
        self.init(maxSide: config.output.maxSide, quality: config.output.quality,
                  thumbnailSize: config.output.thumbnailSize, thumbnailQuality: config.output.thumbnailQuality,
                  classifyMaxSide: config.vision.classifyMaxSide)
    }
}

/// Everything one decode produces: the JPEG for the classifier and both outputs, metadata-free.
public struct ProcessedImage: Sendable {
    public var exif: ExifFindings
    public var classifyJPEG: Data
    public var approvedJPEG: Data
    public var thumbnailJPEG: Data
    public var width: Int
    public var height: Int
    /// The PDQ hash of the decoded, rotated pixels (nil only when hashing is impossible, e.g. under 5 px a side).
    public var pdq: PDQFingerprint?

    public init(exif: ExifFindings, classifyJPEG: Data, approvedJPEG: Data, thumbnailJPEG: Data, width: Int, height: Int,
                pdq: PDQFingerprint? = nil) {
        self.exif = exif
        self.pdq = pdq
        self.classifyJPEG = classifyJPEG
        self.approvedJPEG = approvedJPEG
        self.thumbnailJPEG = thumbnailJPEG
        self.width = width
        self.height = height
    }
}

/// Why an image could not be used; `message` is shown to operators as the rejection reason.
public struct ImagingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case notAnImage, untrustedFormat, unsupportedFormat, tooLarge, tooManyPixels, corrupt, truncated, internalError
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

/// Synchronous, CPU-bound image work; callers run it on a bounded pool.
public protocol ImageProcessor: Sendable {
    func sniff(_ data: Data) throws(ImagingError) -> ImageFormat
    func header(_ data: Data, format: ImageFormat) throws(ImagingError) -> ImageHeader
    func process(_ data: Data, format: ImageFormat, options: ImageOptions) throws(ImagingError) -> ProcessedImage
    /// The PDQ hash alone, through the same checks and the same decode as `process` (`sluice pdq`).
    func fingerprint(_ data: Data, format: ImageFormat, options: ImageOptions) throws(ImagingError) -> PDQFingerprint?
}

extension ImageProcessor {
    /// Bytes from outside, once their format is known: the structure and header checks, then the one decode
    /// (which enforces the pixel limit). Every path that decodes an upload outside the daemon's staged
    /// pipeline (reprocessing, review, the caption API) goes through here.
    public func decodeChecked(_ data: Data, format: ImageFormat, options: ImageOptions) throws(ImagingError) -> ProcessedImage {
        _ = try header(data, format: format)
        return try process(data, format: format, options: options)
    }
}
