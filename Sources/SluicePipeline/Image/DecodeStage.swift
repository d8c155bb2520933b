import Foundation
import SluiceCore

/// 3. The one decode on the bounded CPU pool: EXIF read for the record, shrink-on-load, auto-rotate, sRGB; the
/// classifier JPEG and both metadata-free outputs are encoded from the same decoded pixels.
struct DecodeStage: Stage {
    let name = "decode"
    let processor: any ImageProcessor
    let options: ImageOptions
    let pool: CPUPool

    func run(_ bounded: Bounded, context: StageContext) async -> StageOutcome<Decoded> {
        let processor = processor
        let options = options
        guard let result = await pool.imaging({ () throws(ImagingError) in
            try processor.process(bounded.upload.bytes, format: bounded.sniffed.format, options: options)
        }) else {
            return .finish(context.cannotContinue(.review(reason: CPUPool.unavailable), keep: CPUPool.unavailable))
        }
        switch result {
        case let .success(image):
            return .proceed(Decoded(bounded: bounded, image: image))
        case let .failure(error) where error.kind == .internalError:
            return .finish(context.cannotContinue(.review(reason: error.message), keep: error.message))
        case let .failure(error):
            return .finish(context.cannotContinue(.rejected(reason: error.message), keep: error.message))
        }
    }
}
