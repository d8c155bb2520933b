import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceCore
import SluiceStore
import SluiceText

/// The handlers; each maps bad input to the documented envelope.
struct Routes: Sendable {
    let services: APIServices

    // MARK: Health

    func health(_ request: Request, context: APIContext) async throws -> Response {
        let storeOK = (try? services.store.countsByStatus()) != nil
        return try json(["status": storeOK ? "ok" : "degraded", "store": storeOK ? "reachable" : "unreachable"],
                        status: storeOK ? .ok : .serviceUnavailable)
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
        var request = request
        let body = try await request.body.collect(upTo: 1 << 20)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] else {
            throw APIError(.invalidArgument, "body must be a JSON object {\"data\": {…}}")
        }
        guard let data = object["data"] as? [String: Any] else { throw APIError(.invalidArgument, "missing \"data\" object") }
        switch name {
        case "validate_text":
            guard let text = data["text"] as? String else { throw APIError(.invalidArgument, "data.text must be a string") }
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
        default:
            throw APIError(.notFound, "no callable function \(Self.quoted(name))")
        }
    }

    // MARK: Helpers

    static func validate(_ value: String, _ role: String) throws {
        if let problem = Identifiers.problem(with: value, role: role) { throw APIError(.invalidArgument, problem) }
    }

    static func quoted(_ value: String) -> String {
        "\"" + String(value.unicodeScalars.prefix(80).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) }) + "\""
    }

    private func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        let data = try encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

struct CallableResult<T: Encodable>: Encodable { var result: T }

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
