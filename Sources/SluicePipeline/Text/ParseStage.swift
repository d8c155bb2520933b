import Foundation
import SluiceCore

/// 1. A queue line as one JSON object `{"id", "userId" (or seed 000's "senderId"), "text", "context"?, "kind"?,
/// "recipientId"?, "conversationId"?, "sentAt"?, "members"?}`; anything else is rejected with a reason naming the file and line
/// (the rest of the file goes on).
struct ParseStage: Stage {
    static let kinds: Set<String> = ["message", "post", "comment"]
    static let fields: Set<String> = ["id", "userId", "senderId", "text", "context", "kind", "recipientId", "conversationId", "sentAt", "members"]
    /// Most members a line may list for its conversation.
    static let maxMembers = 1000
    let name = "parse"

    func run(_ line: QueueLine, context: StageContext) async -> StageOutcome<ParsedMessage> {
        func rejected(_ id: ItemID, userId: String = "", _ reason: String) -> StageOutcome<ParsedMessage> {
            .finish(.verdict(.rejected(reason: "\(line.source): \(reason)")),
                    facts: RejectedLine(id: id, userId: userId, content: nil, contentHash: ContentHash.sha256(line.bytes)))
        }
        let object: [String: Any]
        switch JSONLine.object(line.bytes) {
        case let .success(value): object = value
        case let .failure(problem): return rejected(line.fallbackID, problem.message)
        }
        guard let rawID = object["id"] else { return rejected(line.fallbackID, "missing field \"id\"") }
        guard let raw = rawID as? String, Identifiers.isValidTextID(raw) else {
            return rejected(line.fallbackID, "bad id \(Self.describe(rawID)): must match [A-Za-z0-9_.:-]{1,128}")
        }
        let id = ItemID(raw)
        if object["userId"] != nil, object["senderId"] != nil { return rejected(id, "give \"userId\" or \"senderId\", not both") }
        guard let rawUser = object["userId"] ?? object["senderId"] else { return rejected(id, "missing field \"userId\"") }
        guard let userId = rawUser as? String, Identifiers.isValidSegment(userId) else {
            return rejected(id, "bad userId \(Self.describe(rawUser)): must match [A-Za-z0-9_-]{1,128}")
        }
        guard let rawText = object["text"] else { return rejected(id, userId: userId, "missing field \"text\"") }
        guard let text = rawText as? String else { return rejected(id, userId: userId, "field \"text\" must be a string") }
        // A NUL would be cut off by SQLite's text and is refused by PostgreSQL's: the stored message would not be the
        // one judged (and a later `reprocess` would judge what was kept).
        if text.utf8.contains(0) { return rejected(id, userId: userId, "field \"text\" contains a NUL character (\\u0000)") }
        var textContext: String?
        if let rawContext = object["context"], !(rawContext is NSNull) {
            guard let value = rawContext as? String else { return rejected(id, userId: userId, "field \"context\" must be a string") }
            if value.utf8.contains(0) { return rejected(id, userId: userId, "field \"context\" contains a NUL character (\\u0000)") }
            textContext = value
        }
        var kind: String?
        if let rawKind = object["kind"], !(rawKind is NSNull) {
            guard let value = rawKind as? String, Self.kinds.contains(value) else {
                return rejected(id, userId: userId, "field \"kind\" must be one of message, post, comment")
            }
            kind = value
        }
        // The ids of the recipient and the conversation: nil when absent or null, a reason when not a valid id.
        func related(_ field: String) -> Result<String?, FieldProblem> {
            guard let raw = object[field], !(raw is NSNull) else { return .success(nil) }
            guard let value = raw as? String, Identifiers.isValidSegment(value) else {
                return .failure(FieldProblem(message: "bad \(field) \(Self.describe(raw)): must match [A-Za-z0-9_-]{1,128}"))
            }
            return .success(value)
        }
        let recipientId: String?
        let conversationId: String?
        switch (related("recipientId"), related("conversationId")) {
        case let (.failure(problem), _), let (_, .failure(problem)): return rejected(id, userId: userId, problem.message)
        case let (.success(recipient), .success(conversation)): (recipientId, conversationId) = (recipient, conversation)
        }
        var sentAt: Date?
        if let raw = object["sentAt"], !(raw is NSNull) {
            guard let value = raw as? String, let date = Self.date(value) else {
                return rejected(id, userId: userId, "field \"sentAt\" must be an ISO 8601 date-time that exists")
            }
            sentAt = date
        }
        var members: [String]?
        if let raw = object["members"], !(raw is NSNull) {
            guard let list = raw as? [Any] else { return rejected(id, userId: userId, "field \"members\" must be an array of user ids") }
            guard conversationId != nil else { return rejected(id, userId: userId, "field \"members\" needs a \"conversationId\"") }
            guard list.count <= Self.maxMembers else {
                return rejected(id, userId: userId, "field \"members\" lists \(list.count) users; at most \(Self.maxMembers)")
            }
            var users: [String] = []
            for (index, entry) in list.enumerated() {
                guard let member = entry as? String, Identifiers.isValidSegment(member) else {
                    return rejected(id, userId: userId, "bad members[\(index)] \(Self.describe(entry)): must match [A-Za-z0-9_-]{1,128}")
                }
                users.append(member)
            }
            members = users
        }
        // The first unknown field in sorted order, found without listing them (an array for every line).
        if let extra = object.keys.lazy.filter({ !Self.fields.contains($0) }).min() {
            return rejected(id, userId: userId, "unknown field \"\(extra)\"")
        }
        var message = ParsedMessage(id: id, userId: userId,
                                    content: TextContent(text: text, context: textContext, kind: kind, source: line.source,
                                                         recipientId: recipientId, conversationId: conversationId,
                                                         sentAt: sentAt, members: members),
                                    sentAt: sentAt)
        message.mayBeReplay = line.mayBeReplay
        message.erasuresSeenUpTo = line.erasuresSeenUpTo
        return .proceed(message)
    }

    /// Why a field of a line is refused.
    struct FieldProblem: Error {
        var message: String
    }

    static func date(_ text: String) -> Date? { Relations.date(text) }

    private static func describe(_ value: Any) -> String {
        if let string = value as? String {
            let shown = String(string.unicodeScalars.prefix(40).map { $0.value < 0x20 ? "?" : Character($0) })
            return "\"\(shown)\(string.unicodeScalars.count > 40 ? "…" : "")\""
        }
        if value is NSNull { return "null" }
        if value is NSNumber { return "(a number)" }
        return "(not a string)"
    }
}
