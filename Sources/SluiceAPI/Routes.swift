import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceCore
import SluiceImaging
import SluiceStore
import SluiceText

/// The handlers; each maps bad input to the documented envelope.
struct Routes: Sendable {
    let services: APIServices
    let now: @Sendable () -> Date
    let health: HealthProbe

    /// The seed's limits: uploads 20 per hour, text messages 60 per minute, reports 10 per hour, per user.
    enum Limit: String, CaseIterable {
        case imageUpload = "image_upload"
        case textMessage = "text_message"
        case report

        var limit: Int {
            switch self {
            case .imageUpload: 20
            case .textMessage: 60
            case .report: 10
            }
        }

        var windowSeconds: Int { self == .textMessage ? 60 : 3600 }
    }

    /// Counts a request for the caller's user; over the limit is RESOURCE_EXHAUSTED with `resetAt`. Limits are
    /// per user: a trusted backend not acting for a user (no `X-User-Id`) is not limited.
    func consume(_ limit: Limit, context: APIContext) throws {
        guard let user = context.principal?.userId else { return }
        let state = try services.store.consumeRateLimit(key: "\(limit.rawValue):\(user)", limit: limit.limit,
                                                         windowSeconds: limit.windowSeconds, now: now())
        guard state.allowed else {
            throw APIError(.resourceExhausted, "\(limit.rawValue) limit of \(limit.limit) per \(limit.windowSeconds == 60 ? "minute" : "hour") reached; resets at \(state.resetAt.formatted(.iso8601))",
                           headers: retryAfter(state))
        }
    }

    /// `Retry-After` in whole seconds (at least 1) until a limit's window resets.
    func retryAfter(_ state: RateLimitState) -> HTTPFields {
        [.retryAfter: "\(max(1, Int(state.resetAt.timeIntervalSince(now()).rounded(.up))))"]
    }

    // MARK: Items

    func textItem(_ request: Request, context: APIContext) async throws -> Response {
        try item(id: try context.parameters.require("id"), context: context)
    }

    func imageItem(_ request: Request, context: APIContext) async throws -> Response {
        // `/v1/items/{userId}/{imageId}`: the first segment shares the name `id` with `/v1/items/{textId}`.
        let userId = try context.parameters.require("id")
        let imageId = try context.parameters.require("imageId")
        try Self.validate(userId, "userId")
        try Self.validate(imageId, "imageId")
        return try item(id: "\(userId)/\(imageId)", context: context)
    }

    private func item(id: String, context: APIContext) throws -> Response {
        guard id.utf8.count <= 257, !id.contains("..") else { throw APIError(.invalidArgument, "item id is not valid") }
        guard let item = try services.store.item(id: id), context.principal?.maySee(owner: item.userId) == true else {
            throw APIError(.notFound, "no item \(Self.quoted(id))")
        }
        return try json(ItemResponse(item))
    }

    // MARK: Files

    /// Approved outputs only: never anything pending, in review, quarantined or rejected.
    func image(_ request: Request, context: APIContext) async throws -> Response {
        let folder = try context.parameters.require("folder")
        let userId = try context.parameters.require("userId")
        let file = try context.parameters.require("file")
        guard folder == "approved" || folder == "thumbnails" else { throw APIError(.notFound, "no such image folder \(Self.quoted(folder))") }
        guard file.hasSuffix(".jpg") else { throw APIError(.notFound, "images are served as {imageId}.jpg") }
        let imageId = String(file.dropLast(4))
        try Self.validate(userId, "userId")
        try Self.validate(imageId, "imageId")
        guard let item = try services.store.item(id: "\(userId)/\(imageId)"), item.status == .approved,
              context.principal?.maySee(owner: item.userId) == true,
              let relative = folder == "approved" ? item.outputs.approved : item.outputs.thumbnail else {
            throw APIError(.notFound, "no approved image \(userId)/\(imageId)")
        }
        let url = services.config.dataRoot.appendingPathComponent(relative)
        guard let data = try? Data(contentsOf: url) else { throw APIError(.notFound, "no approved image \(userId)/\(imageId)") }
        let etag = "\"" + SHA256.hash(data: data).prefix(12).map { String(format: "%02x", $0) }.joined() + "\""
        var headers: HTTPFields = [.contentType: "image/jpeg", .eTag: etag, .cacheControl: "private, max-age=3600"]
        if request.headers[.ifNoneMatch]?.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag }) == true {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    // MARK: Firebase callable

    /// `POST /v1/functions/{name}` and `POST /{projectId}/{region}/{name}`: request `{"data": {…}}`,
    /// response `{"result": {…}}`.
    func callable(_ request: Request, context: APIContext) async throws -> Response {
        let name = try context.parameters.require("name")
        let body = try await request.body.collect(upTo: 1 << 20)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] else {
            throw APIError(.invalidArgument, "body must be a JSON object {\"data\": {…}}")
        }
        guard let data = object["data"] as? [String: Any] else { throw APIError(.invalidArgument, "missing \"data\" object") }
        switch name {
        case "validate_text":
            guard let text = data["text"] as? String else { throw APIError(.invalidArgument, "data.text must be a string") }
            try consume(.textMessage, context: context)
            if let context = data["context"], !(context is String), !(context is NSNull) {
                throw APIError(.invalidArgument, "data.context must be a string")
            }
            let verdict: TextVerdict
            do throws(TextInputError) {
                verdict = try services.filter.check(text)
            } catch {
                throw APIError(.invalidArgument, error.message)
            }
            return try json(CallableResult(result: ValidateTextResult(allowed: verdict.allowed, reason: verdict.reason)))
        case "detectPriority":
            guard let text = data["messageText"] as? String, !text.isEmpty else {
                throw APIError(.invalidArgument, "data.messageText must be a non-empty string")
            }
            let conversation = data["conversationContext"] as? String
            let verdict = await services.priority.score(text, context: conversation)
            return try json(CallableResult(result: verdict))
        case "submit_report":
            guard let messageId = data["messageId"] as? String, (1...256).contains(messageId.utf8.count) else {
                throw APIError(.invalidArgument, "data.messageId must be a string of 1-256 bytes")
            }
            guard let category = data["category"] as? String, Report.categories.contains(category) else {
                throw APIError(.invalidArgument, "data.category must be one of \(Report.categories.joined(separator: ", "))")
            }
            var description: String?
            if let raw = data["description"], !(raw is NSNull) {
                guard let value = raw as? String else { throw APIError(.invalidArgument, "data.description must be a string") }
                guard value.count <= 1000 else { throw APIError(.invalidArgument, "data.description is \(value.count) characters, over 1000") }
                description = value
            }
            try consume(.report, context: context)
            let report = Report(reportId: "rpt_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""),
                                messageId: messageId, category: category, description: description,
                                reporterUserId: context.principal?.userId, createdAt: now())
            try services.store.recordReport(report)
            return try json(CallableResult(result: ReportResult(success: true, reportId: report.reportId)))
        case "get_rate_limits":
            guard let user = context.principal?.userId else {
                throw APIError(.invalidArgument, "no user: send X-User-Id with the app token, or a user token")
            }
            var limits: [String: RateLimitState] = [:]
            for limit in Limit.allCases {
                limits[limit.rawValue] = try services.store.rateLimit(key: "\(limit.rawValue):\(user)", limit: limit.limit,
                                                                      windowSeconds: limit.windowSeconds, now: now())
            }
            return try json(CallableResult(result: limits))
        default:
            throw APIError(.notFound, "no callable function \(Self.quoted(name))")
        }
    }

    // MARK: Uploads

    /// `POST /v1/uploads/{userId}` with the image as the body: checked by magic bytes, written into pending/
    /// atomically (dotfile, then rename); the daemon moderates it.
    func upload(_ request: Request, context: APIContext) async throws -> Response {
        let userId = try context.parameters.require("userId")
        try Self.validate(userId, "userId")
        if case let .user(id) = context.principal, id != userId { throw APIError(.notFound, "users upload only for themselves") }
        guard let type = request.headers[.contentType], type.lowercased().hasPrefix("image/") else {
            throw APIError(.invalidArgument, "Content-Type must be an image type")
        }
        let maxBytes = services.config.limits.maxBytes
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: maxBytes) } catch {
            throw APIError(.invalidArgument, "image is over the \(maxBytes) byte limit")
        }
        let data = Data(buffer: body)
        let format: ImageFormat
        do throws(ImagingError) { format = try FormatSniffer.sniff(data) } catch { throw APIError(.invalidArgument, error.message) }
        try consume(.imageUpload, context: context)
        let imageId = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let folder = services.config.dataRoot.appendingPathComponent("pending").appendingPathComponent(userId)
        let temp = folder.appendingPathComponent(".\(imageId).upload")
        let final = folder.appendingPathComponent("\(imageId).\(format.fileExtension)")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try data.write(to: temp, options: .atomic)
            try FileManager.default.moveItem(at: temp, to: final)
        } catch {
            try? FileManager.default.removeItem(at: temp)
            throw APIError(.internalError, "upload could not be stored")
        }
        return try json(UploadResult(id: "\(userId)/\(imageId)", imageId: imageId, status: "pending", imageStatus: "pending"), status: .created)
    }

    // MARK: Helpers

    static func validate(_ value: String, _ role: String) throws {
        if let problem = Identifiers.problem(with: value, role: role) { throw APIError(.invalidArgument, problem) }
    }

    static func quoted(_ value: String) -> String {
        "\"" + String(value.unicodeScalars.prefix(80).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) }) + "\""
    }

    func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

struct CallableResult<T: Encodable>: Encodable { var result: T }

struct ReportResult: Encodable {
    var success: Bool
    var reportId: String
}

struct UploadResult: Encodable {
    var id: String
    var imageId: String
    var status: String
    var imageStatus: String
}

struct ValidateTextResult: Encodable {
    var allowed: Bool
    var reason: String?

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allowed, forKey: .allowed)
        try c.encode(reason, forKey: .reason)
    }

    enum CodingKeys: String, CodingKey { case allowed, reason }
}

/// What apps read about an item; `imageStatus` as the seed clients expect.
struct ItemResponse: Encodable {
    var id: String
    var kind: ItemKind
    var userId: String
    var status: ItemStatus
    var imageStatus: String
    var reason: String?
    var caption: String?
    var priority: PriorityVerdict?
    var text: TextVerdict?
    var createdAt: Date
    var updatedAt: Date

    init(_ item: Item) {
        id = item.id
        kind = item.kind
        userId = item.userId
        status = item.status
        imageStatus = switch item.status {
        case .approved: "approved"
        case .pending, .review: "pending"
        case .blocked, .rejected: "blocked"
        }
        reason = item.reason
        caption = item.caption?.caption?.caption
        priority = item.priority
        text = item.textVerdict
        createdAt = item.createdAt
        updatedAt = item.updatedAt
    }
}
