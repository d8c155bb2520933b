import Foundation
import SluiceCore

/// 1. Identify the format by magic bytes; anything else (or an untrusted format) is rejected.
struct SniffStage: Stage {
    let name = "sniff"
    let processor: any ImageProcessor

    func run(_ bytes: Data) async -> StageOutcome<ImageFormat> {
        do throws(ImagingError) {
            return .proceed(try processor.sniff(bytes))
        } catch {
            return .finish(.rejected(reason: error.message))
        }
    }
}
