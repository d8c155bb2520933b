import Foundation
import GRDB
import SluiceCore

/// The `item` table's row; private to the store.
struct ItemRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "item"

    /// The stored row of item `id`, read by a statement prepared once per connection. `fetchOne(db, key:)` built,
    /// authorised and prepared its query on every call, and an upload reads its row three times (before it is
    /// judged, when received, when its verdict is recorded): ~5% of the daemon's CPU for a small image in a profile.
    static func stored(_ db: Database, id: String) throws -> ItemRow? {
        try fetchOne(db.cachedStatement(sql: "SELECT * FROM item WHERE id = ?"), arguments: [id])
    }

    var id: String
    var kind: ItemKind
    var userId: String
    var status: ItemStatus
    var reason: String?
    var provider: String?
    var adult: Likelihood?
    var spoof: Likelihood?
    var medical: Likelihood?
    var violence: Likelihood?
    var racy: Likelihood?
    var exifHadGPS: Bool?
    var exifMake: String?
    var exifModel: String?
    var exifOrientation: Int?
    var approvedPath: String?
    var approvedBytes: Int?
    var thumbnailPath: String?
    var thumbnailBytes: Int?
    var originalPath: String?
    var format: String?
    var width: Int?
    var height: Int?
    var sourceBytes: Int?
    var contentHash: String?
    var decodeMs: Double?
    var classifyMs: Double?
    var writeMs: Double?
    var totalMs: Double?
    var attempts: Int
    var createdAt: Date
    var updatedAt: Date
    var text: String?
    var textContext: String?
    var textKind: String?
    var textSource: String?
    /// The filter verdict as JSON.
    var textVerdict: String?
    /// Priority verdict and caption outcome as JSON; the caption text also on its own for search.
    var priority: String?
    var recipientId: String?
    var conversationId: String?
    var sentAt: Date?
    /// The line's `members` list as a JSON array (the thread triggers read it with json_each).
    var members: String?
    var conversation: String?
    var caption: String?
    var captionText: String?
    var reviewedBy: String?
    var reviewedAt: Date?
    var reviewNote: String?
    var reviewedStatus: ItemStatus?
    var pdqHash: String?
    var pdqQuality: Int?
    /// The bank match and the reused classification as JSON.
    var bankMatch: String?
    var reusedFrom: String?

    /// The columns queries name, declared once.
    enum Columns {
        static let id = Column(CodingKeys.id)
        static let kind = Column(CodingKeys.kind)
        static let userId = Column(CodingKeys.userId)
        static let status = Column(CodingKeys.status)
        static let createdAt = Column(CodingKeys.createdAt)
        static let updatedAt = Column(CodingKeys.updatedAt)
    }

    init(_ item: Item) {
        id = item.id.rawValue
        kind = item.kind
        userId = item.userId
        status = item.status
        reason = item.reason
        provider = item.provider
        adult = item.safeSearch?.adult
        spoof = item.safeSearch?.spoof
        medical = item.safeSearch?.medical
        violence = item.safeSearch?.violence
        racy = item.safeSearch?.racy
        exifHadGPS = item.exif?.hadGPS
        exifMake = item.exif?.make
        exifModel = item.exif?.model
        exifOrientation = item.exif?.orientation
        approvedPath = item.outputs.approved
        approvedBytes = item.outputs.approvedBytes
        thumbnailPath = item.outputs.thumbnail
        thumbnailBytes = item.outputs.thumbnailBytes
        originalPath = item.original
        format = item.format
        width = item.width
        height = item.height
        sourceBytes = item.sourceBytes
        contentHash = item.contentHash
        decodeMs = item.timings.decodeMs
        classifyMs = item.timings.classifyMs
        writeMs = item.timings.writeMs
        totalMs = item.timings.totalMs
        attempts = item.attempts
        createdAt = item.createdAt
        updatedAt = item.updatedAt
        text = item.content?.text
        textContext = item.content?.context
        textKind = item.content?.kind
        textSource = item.content?.source
        textVerdict = item.textVerdict.flatMap(Self.json)
        priority = item.priority.flatMap(Self.json)
        recipientId = item.content?.recipientId
        conversationId = item.content?.conversationId
        sentAt = item.content?.sentAt
        members = item.content?.members.flatMap(Self.json)
        conversation = item.conversation.flatMap(Self.json)
        caption = item.caption.flatMap(Self.json)
        captionText = item.caption?.caption?.caption
        reviewedBy = item.decision?.by
        reviewedAt = item.decision?.at
        reviewNote = item.decision?.note
        reviewedStatus = item.decision?.decision
        pdqHash = item.pdq?.hash.hex
        pdqQuality = item.pdq?.quality
        bankMatch = item.match.flatMap(Self.json)
        reusedFrom = item.reused.flatMap(Self.json)
    }

    /// Sorted keys: the same value always has the same text, so reprocessing can compare without decoding.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()
    private static let decoder = JSONDecoder()

    static func json<T: Encodable>(_ value: T) -> String? {
        if let canonical = value as? any CanonicalJSON { return canonical.canonicalJSON }
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String?) -> T? {
        text.flatMap { try? decoder.decode(type, from: Data($0.utf8)) }
    }

    var item: Item {
        var safeSearch: SafeSearch?
        if let adult, let spoof, let medical, let violence, let racy {
            safeSearch = SafeSearch(adult: adult, spoof: spoof, medical: medical, violence: violence, racy: racy)
        }
        let exif = exifHadGPS.map { ExifFindings(hadGPS: $0, make: exifMake, model: exifModel, orientation: exifOrientation) }
        return Item(id: ItemID(id), kind: kind, userId: userId, status: status, reason: reason, provider: provider,
                    safeSearch: safeSearch, exif: exif,
                    outputs: ItemOutputs(approved: approvedPath, thumbnail: thumbnailPath,
                                         approvedBytes: approvedBytes, thumbnailBytes: thumbnailBytes),
                    original: originalPath, format: format, width: width, height: height, sourceBytes: sourceBytes,
                    contentHash: contentHash,
                    timings: StageTimings(decodeMs: decodeMs, classifyMs: classifyMs, writeMs: writeMs, totalMs: totalMs),
                    attempts: attempts, createdAt: createdAt, updatedAt: updatedAt,
                    content: text.map { TextContent(text: $0, context: textContext, kind: textKind, source: textSource, recipientId: recipientId,
                                                    conversationId: conversationId, sentAt: sentAt,
                                                    members: Self.decode([String].self, members)) },
                    textVerdict: Self.decode(TextVerdict.self, textVerdict), priority: Self.decode(PriorityVerdict.self, priority),
                    caption: Self.decode(CaptionOutcome.self, caption),
                    decision: reviewedBy.map { HumanDecision(by: $0, at: reviewedAt ?? updatedAt, note: reviewNote, decision: reviewedStatus) },
                    conversation: Self.decode(ConversationVerdict.self, conversation),
                    pdq: pdqHash.flatMap { PDQHash(hex: $0) }.map { PDQFingerprint(hash: $0, quality: pdqQuality ?? 0) },
                    match: Self.decode(BankMatch.self, bankMatch), reused: Self.decode(ReusedClassification.self, reusedFrom))
    }
}

/// The `event` table's row; private to the store.
struct EventRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "event"

    var seq: Int64?
    var itemId: String
    var at: Date
    var type: String
    var fromStatus: ItemStatus?
    var toStatus: ItemStatus?
    var stage: String?
    var detail: String?

    enum Columns {
        static let seq = Column(CodingKeys.seq)
        static let itemId = Column(CodingKeys.itemId)
        static let type = Column(CodingKeys.type)
    }

    init(_ event: ItemEvent) {
        itemId = event.itemId.rawValue
        at = event.at
        type = event.type
        fromStatus = event.fromStatus
        toStatus = event.toStatus
        stage = event.stage
        detail = event.detail
    }

    var event: ItemEvent {
        ItemEvent(itemId: ItemID(itemId), at: at, type: type, fromStatus: fromStatus, toStatus: toStatus, stage: stage, detail: detail)
    }
}
