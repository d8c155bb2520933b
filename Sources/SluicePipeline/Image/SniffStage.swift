import Foundation
import SluiceCore

/// 1. The format from magic bytes; anything else (or an untrusted format) is rejected without being opened.
struct SniffStage: Stage {
    let name = "sniff"
    let processor: any ImageProcessor

    func run(_ upload: ImageUpload, context: StageContext) async -> StageOutcome<Sniffed> {
        do throws(ImagingError) {
            return .proceed(Sniffed(upload: upload, format: try processor.sniff(upload.bytes)))
        } catch {
            return .finish(context.cannotContinue(.rejected(reason: error.message), keep: error.message))
        }
    }
}
