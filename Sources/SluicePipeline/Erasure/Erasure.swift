import Foundation
import SluiceCore

/// Deletion on request: every file of an item (approved, thumbnail, quarantine, review, rejected, pending) and its
/// row and history; a tombstone (who, when, content hash) stays for audit, and webhooks hear `item.deleted`.
/// An item's files go before its row, and a user's queued lines and relations before their files and rows, so a run
/// that is interrupted can simply be repeated.
public struct Erasure: Sendable {
    public struct Summary: Sendable, Codable, Equatable {
        public var items: [ItemID] = []
        public var files = 0
    }

    let store: any StatusStore
    let layout: OutputLayout

    public init(store: any StatusStore, layout: OutputLayout) {
        self.store = store
        self.layout = layout
    }

    /// One item: an image (`{userId}/{imageId}`) or a text item. Nil when there was nothing to erase.
    public func erase(_ id: ItemID, by: String, reason: String, at date: Date = Date()) async throws -> Summary? {
        var summary = Summary()
        summary.files = try removeFiles(of: id)
        summary.items = try await store.eraseItems([id], by: by, reason: reason, at: date).map(\.id)
        // A daemon that committed this upload's verdict between the files and the row wrote its outputs first.
        _ = try removeFiles(of: id)
        try await store.redactWebhookReasons(of: summary.items)
        // An upload not judged yet has no row: its files were it, and it is named as erased.
        if summary.items.isEmpty, summary.files > 0 { summary.items = [id] }
        return summary.items.isEmpty && summary.files == 0 ? nil : summary
    }

    /// Everything of one user: their lines in the text queue, their folders in every part of the contract, every
    /// item, their name on the reports they filed, and their relations (profile, follows, blocks, history, message
    /// requests, counters, rate-limit windows).
    ///
    /// Queued lines go first: their lines in queue files not read yet are blanked, then the relations go, leaving the
    /// erasure in the relation history. A daemon reads that history's point before it reads a queue file
    /// (`TextQueueIngestor.process`), and its writes leave out the lines of users erased after that point
    /// (`PreparedVerdicts.erasuresSeenUpTo`): a file it read before the blanking is written without this user, and a
    /// file it reads after the point was blanked first. A line it wrote before the relations went is an item, deleted
    /// below. Lines are blanked in place, so a writer appending to a queue file loses nothing; a line it is still in
    /// the middle of (the last, with no newline yet) is not blanked, and is recorded once written.
    public func eraseUser(_ userId: String, by: String, reason: String, at date: Date = Date()) async throws -> Summary {
        var summary = Summary()
        try blankQueueLines(of: userId, in: layout.root.textQueue)
        try await store.eraseRelations(of: userId)
        summary.files = try removeFolders(of: userId)
        // 500 items a transaction, so a daemon writing verdicts meanwhile waits for one of them, not for all.
        for chunk in try await store.itemIDs(matching: ItemFilter(userId: userId)).chunked(500) {
            summary.items += try await store.eraseItems(Array(chunk), by: by, reason: reason, at: date).map(\.id)
        }
        // A daemon that committed a verdict of theirs between the files and the rows wrote its outputs before that: the
        // folders go once more (a verdict committed after the rows went is not recorded at all: recordUploadVerdict).
        _ = try removeFolders(of: userId)
        try await store.redactWebhookReasons(of: summary.items)
        try await store.anonymizeReports(by: userId)
        try blankQueueLines(of: userId, in: layout.root.finishedTextQueue)
        return summary
    }

    /// Every file of an image item (none for text); how many there were.
    private func removeFiles(of id: ItemID) throws -> Int {
        guard let image = id.image else { return 0 }
        let files = layout.files(of: image)
        for file in files { try FileOps.remove(file) }
        return files.count
    }

    /// A user's folder in every part of the contract; how many files they held.
    private func removeFolders(of userId: String) throws -> Int {
        var count = 0
        for folder in layout.folders(ofUser: userId) {
            let files = (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String]) ?? []
            count += files.filter { FileType(at: folder.appendingPathComponent($0)) == .regular }.count
            do {
                try FileManager.default.removeItem(at: folder)
            } catch {
                throw FileOpError("remove", folder.path, reason: (error as NSError).localizedDescription)
            }
            FileOps.syncFolder(folder.deletingLastPathComponent())
        }
        return count
    }

    /// The text queue files in `folder` (`queues/text/` not read yet, `queues/text/done/` read) keep no line of an
    /// erased user: each of their lines becomes spaces, in place (`FileOps.blankLinesInPlace`: the line stays, blank, so
    /// the others keep the numbers their items cite as `source`, and the daemon skips it). Nothing is renamed, so a
    /// writer appending to a file, a file renamed in under the same name meanwhile, or another erasure blanking the
    /// same file loses nothing.
    func blankQueueLines(of userId: String, in folder: URL) throws {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let needle = Data("\"\(userId)\"".utf8)
        for name in names.sorted() where name.hasSuffix(".jsonl") && !PendingUpload.isInProgress(name) {
            try FileOps.blankLinesInPlace(folder.appendingPathComponent(name)) { line in
                guard line.range(of: needle) != nil,
                      let object = (try? JSONSerialization.jsonObject(with: line)) as? [String: Any] else { return false }
                return (object["userId"] as? String) == userId || (object["senderId"] as? String) == userId
            }
        }
    }
}
