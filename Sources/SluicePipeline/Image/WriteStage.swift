import Foundation
import SluiceCore

/// 6. The approved image and its thumbnail written where `OutputLayout` says, temp → fsync → rename, before the
/// store commit. An item that was approved and stays approved keeps the outputs it has; a dry run writes nothing.
struct WriteStage: Stage {
    let name = "write"
    let layout: OutputLayout

    func run(_ judged: Judged, context: StageContext) async -> StageOutcome<Written> {
        if context.mode != .intake, let current = context.current, current.status == .approved, current.outputs.approved != nil {
            return .proceed(Written(judged: judged, outputs: current.outputs))
        }
        let image = judged.decoded.image
        guard let ref = judged.classified.upload.image else {
            return .finish(context.cannotContinue(.review(reason: "approved but no image id to write outputs for"), keep: "no image id to write outputs for"))
        }
        if context.dryRun {
            return .proceed(Written(judged: judged, outputs: ItemOutputs(
                approved: layout.relative(layout.approved(ref)), thumbnail: layout.relative(layout.thumbnail(ref)),
                approvedBytes: image.approvedJPEG.count, thumbnailBytes: image.thumbnailJPEG.count)))
        }
        do throws(FileOpError) {
            return .proceed(Written(judged: judged, outputs: try layout.writeOutputs(approved: image.approvedJPEG, thumbnail: image.thumbnailJPEG, for: ref)))
        } catch {
            let kept = context.current.map { "files could not follow the new verdict, kept as \($0.status.rawValue): \(error)" } ?? "\(error)"
            return .finish(context.cannotContinue(.review(reason: "approved but outputs could not be written: \(error)"), keep: kept))
        }
    }
}
