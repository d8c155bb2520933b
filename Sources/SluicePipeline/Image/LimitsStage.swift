import Foundation
import SluiceCore

/// 2. Header-only checks before any pixel is decoded: the container's structure and the pixel limit (the byte
/// limit is enforced when the file is read).
struct LimitsStage: Stage {
    let name = "limits"
    let processor: any ImageProcessor
    let maxPixels: Int
    let pool: CPUPool

    func run(_ sniffed: Sniffed, context: StageContext) async -> StageOutcome<Bounded> {
        let processor = processor
        guard let result = await pool.imaging({ () throws(ImagingError) in
            try processor.header(sniffed.upload.bytes, format: sniffed.format)
        }) else {
            return .finish(context.cannotContinue(.review(reason: CPUPool.unavailable), keep: CPUPool.unavailable))
        }
        switch result {
        case let .failure(error):
            return .finish(context.cannotContinue(.rejected(reason: error.message), keep: error.message))
        case let .success(header) where header.pixels > maxPixels:
            let reason = "too many pixels: \(header.width)×\(header.height) = \(header.pixels), over the \(maxPixels) limit (limits.maxPixels)"
            return .finish(context.cannotContinue(.rejected(reason: reason), keep: reason))
        case let .success(header):
            return .proceed(Bounded(sniffed: sniffed, header: header))
        }
    }
}
