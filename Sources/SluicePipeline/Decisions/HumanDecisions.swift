import Foundation
import SluiceCore

/// The one path for a person's decision (CLI, API, console): the decision becomes the item's verdict through
/// the image pipeline (approving produces the approved outputs from the kept original, exactly as an automatic
/// approval; blocking keeps the original in quarantine), is recorded on the item as final, and is a `review`
/// event naming who, the note and the previous status.
public struct HumanDecisions: Sendable {
    public enum Choice: String, Sendable, CaseIterable {
        case approve, block

        var status: ItemStatus { self == .approve ? .approved : .blocked }
    }

    let store: any StatusStore
    let images: ImagePipeline
    let maxBytes: Int

    public init(store: any StatusStore, images: ImagePipeline, maxBytes: Int) {
        self.store = store
        self.images = images
        self.maxBytes = maxBytes
    }

    /// Decides an item in review.
    public func decide(_ id: ItemID, _ choice: Choice, by: String, note: String?, at now: Date = Date()) async throws -> Item {
        guard let item = try await store.item(id) else { throw DecisionError("no item with id \"\(id)\"") }
        guard item.status == .review else { throw DecisionError("\(id) is \(item.status.rawValue), not in review") }
        let decision = HumanDecision(by: by, at: now, note: note, decision: choice.status)
        var decided = item
        decided.decision = decision
        decided.updatedAt = now
        guard item.kind == .image else {
            decided.status = choice.status
            decided.reason = decision.summary
            try await store.recordDecision(decided, from: item.status)
            return decided
        }
        let layout = images.layout
        var judged: Item
        if choice == .block {
            judged = decided
            judged.status = .blocked
            judged.reason = decision.summary
        } else {
            guard let original = item.original.map(layout.absolute) else { throw DecisionError("\(id) has no original to approve") }
            let bytes: Data
            do { bytes = try FileOps.readRegularFile(original, limit: maxBytes) } catch {
                throw DecisionError("cannot read \(layout.relative(original)): \(error)")
            }
            let run = await images.run(ImageUpload(image: id.image, bytes: bytes),
                                       context: StageContext(mode: .decision(decision), current: item))
            guard let result = run.item(from: decided, scope: .rejudge) else {
                throw DecisionError("\(id) cannot be approved: \(run.keptBecause ?? "the pipeline stopped")")
            }
            judged = result
        }
        let move = layout.move(from: item, to: judged, source: .stored)
        try move.prepare()
        try await store.recordDecision(move.item, from: item.status)
        try? move.finish()
        if move.item.status == .blocked { await images.matcher?.imageBlocked(move.item) }
        return move.item
    }
}

extension HumanDecisions {
    /// Puts a decided item back in review: a reviewer may reverse their own decision, an admin anyone's. Its public
    /// outputs are withdrawn (the approved JPEG is kept in review/ as its original) until a person decides again.
    public func undo(_ id: ItemID, by: String, isAdmin: Bool, at now: Date = Date()) async throws -> Item {
        guard let item = try await store.item(id) else { throw DecisionError("no item with id \"\(id)\"") }
        guard let decision = item.decision else { throw DecisionError("\(id) has no human decision to undo") }
        guard isAdmin || decision.by == by else {
            throw DecisionError("\(id) was decided by \(decision.by); only they or an admin may undo it")
        }
        return try await sendToReview(item, reason: "decision by \(decision.by) undone by \(by)", decisionBy: by, note: "undo", at: now)
    }

    /// The owner's appeal of a blocked item: it goes back to review, marked as an appeal with their message, and
    /// the decision that follows reaches the app like any other (webhooks).
    public func appeal(_ id: ItemID, by userId: String, message: String, at now: Date = Date()) async throws -> Item {
        guard let item = try await store.item(id) else { throw DecisionError("no item with id \"\(id)\"") }
        guard item.userId == userId else { throw DecisionError("only the owner may appeal \(id)") }
        guard item.status == .blocked else { throw DecisionError("\(id) is \(item.status.rawValue); only blocked items can be appealed") }
        guard try await store.recordAppeal(Appeal(itemId: id, userId: userId, message: message, at: now)) else {
            throw DecisionError("\(id) was appealed before")
        }
        return try await sendToReview(item, reason: "appeal by the owner", decisionBy: userId, note: message, at: now)
    }

    /// Sends an approved item back to review (reports): its public outputs are withdrawn until a person decides.
    /// Items in any other status are left alone (nil).
    public func withdraw(_ id: ItemID, reason: String, at now: Date = Date()) async throws -> Item? {
        guard let item = try await store.item(id), item.status == .approved else { return nil }
        return try await sendToReview(item, reason: reason, decisionBy: "reports", note: reason, at: now)
    }

    private func sendToReview(_ item: Item, reason: String, decisionBy: String, note: String, at now: Date) async throws -> Item {
        var updated = item
        updated.status = .review
        updated.reason = reason
        updated.decision = nil
        updated.updatedAt = now
        let move = images.layout.move(from: item, to: updated, source: .stored)
        try move.prepare()
        try await store.recordStatusChange(move.item, from: item.status, type: "review", detail: "\(reason) (\(note))")
        try? move.finish()
        return move.item
    }
}

/// A decision that cannot be carried out; `message` says why.
public struct DecisionError: Error, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
