import Foundation
import Hummingbird
import NIOCore
import SluiceCore
import SluicePipeline

/// An item's status as apps read it (`GET /v1/items/{textId}`, `GET /v1/items/{userId}/{imageId}`), live as
/// Server-Sent Events (`…/events`), and deletion on request (`DELETE`, app token).
struct ItemRoutes {
    let services: APIServices
    let now: @Sendable () -> Date

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.get("/v1/items/:id", use: textItem)
        routes.get("/v1/items/:id/:imageId", use: imageItem)
        routes.get("/v1/items/:id/:imageId/events", use: events)
        routes.delete("/v1/items/:id", use: deleteText)
        routes.delete("/v1/items/:id/:imageId", use: deleteImage)
        routes.delete("/v1/users/:userId", use: deleteUser)
        routes.post("/v1/items/:id/:imageId/appeal", use: appealImage)
        routes.post("/v1/appeals", use: appealItem)
        return routes
    }

    func textItem(_ request: Request, context: APIContext) async throws -> Response {
        try await item(try Self.textID(context), context: context)
    }

    /// A text item's id from the path: `[A-Za-z0-9_.:-]{1,128}`.
    static func textID(_ context: APIContext) throws -> ItemID {
        let raw = try context.pathParameter("id")
        guard Identifiers.isValidTextID(raw) else { throw APIError(.invalidArgument, "text id \(Identifiers.printable(raw)) is not valid: it must match [A-Za-z0-9_.:-]{1,128}") }
        return ItemID(raw)
    }

    func imageItem(_ request: Request, context: APIContext) async throws -> Response {
        // `/v1/items/{userId}/{imageId}`: the first segment shares the name `id` with `/v1/items/{textId}`.
        let image = try APIValidation.image(userId: try context.pathParameter("id"), imageId: try context.pathParameter("imageId"))
        if try await services.store.item(image.itemID) == nil, let pending = pendingResponse(image, context: context) {
            return try context.json(pending)
        }
        return try await item(image.itemID, context: context)
    }

    /// An upload in pending/ the daemon has not judged yet, for a caller who may see its owner's items: `pending`,
    /// stamped with when the file was written.
    private func pendingResponse(_ image: ImageRef, context: APIContext) -> ItemResponse? {
        guard context.principal?.maySee(owner: image.userId) == true, let file = services.layout.pendingUploads(of: image).first else { return nil }
        let written = (try? FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate]) as? Date
        return ItemResponse(pendingUpload: image, at: written ?? now())
    }

    private func item(_ id: ItemID, context: APIContext) async throws -> Response {
        try context.json(ItemResponse(try await visibleItem(id, context: context)))
    }

    /// The item when this caller may see it: their own, anything for an app, approved images for every signed-in
    /// user under `authenticated` visibility. Otherwise NOT_FOUND (existence is not disclosed).
    private func visibleItem(_ id: ItemID, context: APIContext) async throws -> Item {
        guard let item = try await services.store.item(id), let principal = context.principal,
              principal.maySee(owner: item.userId)
                || (item.kind == .image && item.status == .approved
                    && principal.maySeeApproved(owner: item.userId, visibility: services.config.api.images.visibility)) else {
            throw APIError(.notFound, "no item \(Identifiers.printable(id.rawValue))")
        }
        return item
    }

    // MARK: Live status

    /// Server-Sent Events: `event: status` with the item (as `GET` answers it) now and at every change of status;
    /// the stream ends at a final status (approved, blocked, rejected) or after `api.events.timeoutSeconds`. An upload
    /// still in pending/ that the daemon has not picked up yet is reported as pending.
    func events(_ request: Request, context: APIContext) async throws -> Response {
        let image = try APIValidation.image(userId: try context.pathParameter("id"), imageId: try context.pathParameter("imageId"))
        let first: ItemResponse
        if let item = try? await visibleItem(image.itemID, context: context) {
            first = ItemResponse(item)
        } else if let pending = pendingResponse(image, context: context) {
            first = pending
        } else {
            throw APIError(.notFound, "no item \(Identifiers.printable(image.itemID.rawValue))")
        }
        let store = services.store
        let settings = services.config.api.events
        let principal = context.principal
        let visibility = services.config.api.images.visibility
        let body = ResponseBody { writer in
            let clock = ContinuousClock()
            let deadline = clock.now + .milliseconds(Int64(settings.timeoutSeconds * 1000))
            var last = first
            var lastSent = clock.now
            try await writer.write(Self.event(first))
            while !Self.isFinal(last.status), clock.now < deadline {
                try await Task.sleep(for: .milliseconds(settings.pollMilliseconds))
                let current = try? await store.item(image.itemID)
                if let current, principal?.maySee(owner: current.userId) == true
                    || (current.status == .approved && principal?.maySeeApproved(owner: current.userId, visibility: visibility) == true),
                   current.status != last.status || current.updatedAt != last.updatedAt {
                    let response = ItemResponse(current)
                    if response.status != last.status {
                        try await writer.write(Self.event(response))
                        lastSent = clock.now
                    }
                    last = response
                } else if clock.now - lastSent > .seconds(15) {
                    try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    lastSent = clock.now
                }
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: body)
    }

    static func isFinal(_ status: ItemStatus) -> Bool { status == .approved || status == .blocked || status == .rejected }

    static func event(_ item: ItemResponse) throws -> ByteBuffer {
        let data = try APIJSONEncoder().data(item)
        return ByteBuffer(string: "event: status\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
    }

    // MARK: Appeals

    struct AppealBody: Decodable {
        var message: String
    }

    /// `POST /v1/appeals`: names the item in the body, so a text item can be appealed too (`/v1/items/{textId}/appeal`
    /// would be the path of an image called `appeal`).
    struct ItemAppealBody: Decodable {
        var item: String
        var message: String
    }

    func appealImage(_ request: Request, context: APIContext) async throws -> Response {
        let image = try APIValidation.image(userId: try context.pathParameter("id"), imageId: try context.pathParameter("imageId"))
        let user = try Self.appellant(context)
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard let appeal = try? JSONDecoder().decode(AppealBody.self, from: body) else {
            throw APIError(.invalidArgument, "body must be {\"message\": string}")
        }
        return try await self.appeal(image.itemID, by: user, message: appeal.message, context: context)
    }

    /// Any item, text or image, by the id its JSON carries (`{textId}`, or `{userId}/{imageId}`).
    func appealItem(_ request: Request, context: APIContext) async throws -> Response {
        let user = try Self.appellant(context)
        let body = try await request.body.collect(upTo: 64 * 1024)
        guard let appeal = try? JSONDecoder().decode(ItemAppealBody.self, from: body) else {
            throw APIError(.invalidArgument, "body must be {\"item\": string, \"message\": string}")
        }
        let parts = appeal.item.split(separator: "/", omittingEmptySubsequences: false)
        let id: ItemID
        switch parts.count {
        case 1:
            guard Identifiers.isValidTextID(appeal.item) else {
                throw APIError(.invalidArgument, "item \(Identifiers.printable(appeal.item)) is not valid: a text id matches [A-Za-z0-9_.:-]{1,128}, an image is {userId}/{imageId}")
            }
            id = ItemID(appeal.item)
        case 2:
            id = try APIValidation.image(userId: String(parts[0]), imageId: String(parts[1])).itemID
        default:
            throw APIError(.invalidArgument, "item \(Identifiers.printable(appeal.item)) is not valid: a text id matches [A-Za-z0-9_.:-]{1,128}, an image is {userId}/{imageId}")
        }
        return try await self.appeal(id, by: user, message: appeal.message, context: context)
    }

    /// The owner (their JWT, or a backend acting for them with `X-User-Id`) asks for a blocked item to be looked at
    /// again: `{message}` (1-1000 characters). The item goes back to review marked as an appeal; 409 when it is not
    /// blocked or was appealed before.
    private static func appellant(_ context: APIContext) throws -> String {
        guard let user = context.principal?.userId else {
            throw APIError(.permissionDenied, "an appeal is made by the item's owner: a user token, or an app token with X-User-Id")
        }
        return user
    }

    private func appeal(_ id: ItemID, by user: String, message: String, context: APIContext) async throws -> Response {
        try APIValidation.refuseNUL(message, "message")
        let message = message.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...1000).contains(message.unicodeScalars.count) else { throw APIError(.invalidArgument, "message must be 1-1000 characters") }
        guard let item = try await services.store.item(id), item.userId == user else {
            throw APIError(.notFound, "no item \(Identifiers.printable(id.rawValue))")
        }
        guard item.status == .blocked else {
            throw APIError(.failedPrecondition, "\(id.rawValue) is \(item.status.rawValue); only blocked items can be appealed")
        }
        do {
            let appealed = try await services.decisions.appeal(id, by: user, message: message, at: now())
            return try context.json(ItemResponse(appealed), status: .accepted)
        } catch let error as DecisionError {
            throw APIError(.alreadyExists, error.message)
        }
    }

    // MARK: Deletion

    func deleteText(_ request: Request, context: APIContext) async throws -> Response {
        try await erase(try Self.textID(context), context: context)
    }

    func deleteImage(_ request: Request, context: APIContext) async throws -> Response {
        let image = try APIValidation.image(userId: try context.pathParameter("id"), imageId: try context.pathParameter("imageId"))
        return try await erase(image.itemID, owner: image.userId, context: context)
    }

    /// Every file and item of a user (their reports keep no trace of them either).
    func deleteUser(_ request: Request, context: APIContext) async throws -> Response {
        let userId = try context.pathParameter("userId")
        try APIValidation.segment(userId, "userId")
        let by = try Self.backend(context, for: "erase users", owner: userId)
        let summary = try await services.erasure.eraseUser(userId, by: by, reason: "user erased through the API", at: now())
        return try context.json(ErasureResult(summary))
    }

    /// `owner`: the user in an image's path; a text item's is read from the store.
    private func erase(_ id: ItemID, owner: String? = nil, context: APIContext) async throws -> Response {
        var owner = owner
        // Only a backend acting for a user needs a text item's owner.
        if owner == nil, case .app(_?)? = context.principal { owner = try await services.store.item(id)?.userId }
        let by = try Self.backend(context, for: "erase items", owner: owner)
        guard let summary = try await services.erasure.erase(id, by: by, reason: "erased through the API", at: now()) else {
            throw APIError(.notFound, "no item \(Identifiers.printable(id.rawValue))")
        }
        return try context.json(ErasureResult(summary))
    }

    /// Erasure is for backends (app tokens); it is recorded as done by `app` (acting for a user when one is named).
    /// With `owner`, a backend acting for a user (`X-User-Id`) may act only on that user's own things.
    static func backend(_ context: APIContext, for what: String, owner: String? = nil) throws -> String {
        guard case let .app(actingFor) = context.principal else {
            throw APIError(.permissionDenied, "only a backend (app token) may \(what)")
        }
        if let actingFor, let owner, actingFor != owner {
            throw APIError(.permissionDenied, "X-User-Id names \(actingFor): a backend acting for a user may \(what) of that user only, "
                           + "and this is \(owner)'s; leave X-User-Id out to act as the backend")
        }
        return actingFor.map { "app for \($0)" } ?? "app"
    }

    /// What only the backend itself does (every user's reports, hash banks, metrics, a profile's trusted flag and
    /// account age): refused when it names a user to act for, since no user may.
    static func backendItself(_ context: APIContext, for what: String) throws -> String {
        let by = try backend(context, for: what)
        if case let .app(actingFor?)? = context.principal {
            throw APIError(.permissionDenied, "X-User-Id names \(actingFor), and no user may \(what); leave X-User-Id out to act as the backend")
        }
        return by
    }
}

struct ErasureResult: Encodable {
    var erased: [ItemID]
    var files: Int

    init(_ summary: Erasure.Summary) {
        erased = summary.items
        files = summary.files
    }
}

/// What apps read about an item: a deliberate public projection of `Item`, with `imageStatus` as the seed
/// clients expect.
struct ItemResponse: Encodable {
    var id: ItemID
    var kind: ItemKind
    var userId: String
    var status: ItemStatus
    var imageStatus: String
    var reason: String?
    var caption: String?
    var priority: PriorityVerdict?
    var text: TextVerdict?
    /// Text messages: what the sender is told by the conversation rules (seed 004's "This user has blocked you").
    var autoReply: String?
    /// Images: the PDQ hash {hash, quality} and a bank match {bank, distance, hash, action, acted}.
    var pdq: PDQFingerprint?
    var match: MatchResponse?
    var createdAt: Date
    var updatedAt: Date

    struct MatchResponse: Encodable {
        var bank: String
        var distance: Int
        var hash: String
        var action: String
        var acted: Bool
    }

    /// Seed 000's `imageStatus`: approved, pending (review included) or blocked (rejected included).
    static func imageStatus(_ status: ItemStatus) -> String {
        switch status {
        case .approved: "approved"
        case .pending, .review: "pending"
        case .blocked, .rejected: "blocked"
        }
    }

    /// An upload the daemon has not picked up yet.
    init(pendingUpload image: ImageRef, at date: Date) {
        id = image.itemID
        kind = .image
        userId = image.userId
        status = .pending
        imageStatus = "pending"
        createdAt = date
        updatedAt = date
    }

    init(_ item: Item) {
        id = item.id
        kind = item.kind
        userId = item.userId
        status = item.status
        imageStatus = Self.imageStatus(item.status)
        reason = item.reason
        caption = item.caption?.caption?.caption
        priority = item.priority
        text = item.textVerdict
        autoReply = item.conversation?.autoReply
        pdq = item.pdq
        match = item.match.map { MatchResponse(bank: $0.bank, distance: $0.distance, hash: $0.hash.hex, action: $0.action.rawValue, acted: $0.acted) }
        createdAt = item.createdAt
        updatedAt = item.updatedAt
    }
}

/// Checks on ids from URLs and bodies, with the envelope's message.
enum APIValidation {
    /// A text that is stored (a report's description, an appeal, a note) may not hold a NUL (`\u0000`): a store would
    /// cut the text there (SQLite) or refuse it (PostgreSQL), so it would be kept shorter than it was sent. Fields
    /// that are only read are not checked (`validate_text` judges a NUL as an invisible character).
    static func refuseNUL(_ value: String?, _ field: String) throws {
        if let value, value.utf8.contains(0) { throw APIError(.invalidArgument, "\(field) may not contain a NUL character (\\u0000)") }
    }

    static func segment(_ value: String, _ role: String) throws {
        if let problem = Identifiers.problem(with: value, role: role) { throw APIError(.invalidArgument, problem) }
    }

    static func image(userId: String, imageId: String) throws -> ImageRef {
        try segment(userId, "userId")
        try segment(imageId, "imageId")
        guard let image = ImageRef(userId: userId, imageId: imageId) else { throw APIError(.invalidArgument, "image id is not valid") }
        return image
    }
}
