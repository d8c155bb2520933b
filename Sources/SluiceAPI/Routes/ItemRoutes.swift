import Foundation
import Hummingbird
import SluiceCore

/// `GET /v1/items/{textId}` and `GET /v1/items/{userId}/{imageId}`: an item's status as apps read it.
struct ItemRoutes {
    let services: APIServices

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.get("/v1/items/:id", use: textItem)
        routes.get("/v1/items/:id/:imageId", use: imageItem)
        return routes
    }

    func textItem(_ request: Request, context: APIContext) async throws -> Response {
        try await item(ItemID(try context.parameters.require("id")), context: context)
    }

    func imageItem(_ request: Request, context: APIContext) async throws -> Response {
        // `/v1/items/{userId}/{imageId}`: the first segment shares the name `id` with `/v1/items/{textId}`.
        let image = try APIValidation.image(userId: try context.parameters.require("id"), imageId: try context.parameters.require("imageId"))
        return try await item(image.itemID, context: context)
    }

    private func item(_ id: ItemID, context: APIContext) async throws -> Response {
        guard id.rawValue.utf8.count <= 257, !id.rawValue.contains("..") else { throw APIError(.invalidArgument, "item id is not valid") }
        guard let item = try await services.store.item(id), context.principal?.maySee(owner: item.userId) == true else {
            throw APIError(.notFound, "no item \(Identifiers.printable(id.rawValue))")
        }
        return try context.json(ItemResponse(item))
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

/// Checks on ids from URLs and bodies, with the envelope's message.
enum APIValidation {
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
