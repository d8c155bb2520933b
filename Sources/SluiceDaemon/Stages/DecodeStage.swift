import Foundation
import SluiceCore

/// 3–4 and 7. The one decode: EXIF read for the record, shrink-on-load, auto-rotate, sRGB; the classifier JPEG
/// and both metadata-free outputs are encoded from the same decoded pixels.
struct DecodeStage: Stage {
    struct Input: Sendable {
        var bytes: Data
        var format: ImageFormat
    }

    let name = "decode"
    let processor: any ImageProcessor
    let options: ImageOptions
    let pool: CPUPool

    func run(_ input: Input) async -> StageOutcome<ProcessedImage> {
        let processor = processor
        let options = options
        guard let result = await pool.imaging({ () throws(ImagingError) in
            try processor.process(input.bytes, format: input.format, options: options)
        }) else {
            return .finish(.review(reason: "image worker pool unavailable"))
        }
        switch result {
        case let .success(image): return .proceed(image)
        case let .failure(error) where error.kind == .internalError: return .finish(.review(reason: error.message))
        case let .failure(error): return .finish(.rejected(reason: error.message))
        }
    }
}
