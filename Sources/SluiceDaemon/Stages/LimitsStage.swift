import Foundation
import SluiceCore

/// 2. Header-only checks before any pixel is decoded: the pixel limit (the byte limit is enforced on read).
struct LimitsStage: Stage {
    struct Input: Sendable {
        var bytes: Data
        var format: ImageFormat
    }

    let name = "limits"
    let processor: any ImageProcessor
    let limits: LimitsConfig
    let pool: CPUPool

    func run(_ input: Input) async -> StageOutcome<ImageHeader> {
        let processor = processor
        guard let result = await pool.imaging({ () throws(ImagingError) in try processor.header(input.bytes, format: input.format) }) else {
            return .finish(.review(reason: "image worker pool unavailable"))
        }
        switch result {
        case let .failure(error):
            return .finish(.rejected(reason: error.message))
        case let .success(header) where header.pixels > limits.maxPixels:
            return .finish(.rejected(reason: "too many pixels: \(header.width)×\(header.height) = \(header.pixels), over the \(limits.maxPixels) limit (limits.maxPixels)"))
        case let .success(header):
            return .proceed(header)
        }
    }
}
