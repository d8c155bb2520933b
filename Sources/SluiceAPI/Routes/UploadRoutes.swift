import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceCore

/// Uploads into pending/ for the daemon, written the way `OutputLayout` writes every file (temp → fsync →
/// rename): `POST /v1/uploads/{userId}` (Sluice picks the image id) and `PUT /v1/uploads/{userId}/{imageId}`
/// (the client's id, as the seed's storage path `pending/{userId}/{imageId}`).
struct UploadRoutes {
    let services: APIServices
    let limits: RateLimits
    let inFlight = UploadsInFlight()

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.post("/v1/uploads/:userId", use: post)
        routes.put("/v1/uploads/:userId/:imageId", use: put)
        return routes
    }

    func post(_ request: Request, context: APIContext) async throws -> Response {
        let userId = try context.pathParameter("userId")
        let imageId = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        return try await upload(request, context: context, userId: userId, imageId: imageId)
    }

    /// 201 for a new upload; 200 when the same bytes are already pending or judged under this id (with the item's
    /// status); 409 when different bytes are: an item is never replaced by an upload (erase it first).
    func put(_ request: Request, context: APIContext) async throws -> Response {
        try await upload(request, context: context, userId: try context.pathParameter("userId"),
                         imageId: try context.pathParameter("imageId"))
    }

    private func upload(_ request: Request, context: APIContext, userId: String, imageId: String) async throws -> Response {
        let image = try APIValidation.image(userId: userId, imageId: imageId)
        if case let .user(id) = context.principal, id != userId { throw APIError(.notFound, "users upload only for themselves") }
        if case let .app(actingFor?) = context.principal, actingFor != userId {
            throw APIError(.permissionDenied, "X-User-Id names \(actingFor): a backend acting for a user uploads for that user only, and this "
                           + "path is \(userId)'s; leave X-User-Id out to upload as the backend")
        }
        guard let type = request.headers[.contentType], type.lowercased().hasPrefix("image/") else {
            throw APIError(.invalidArgument, "Content-Type must be an image type")
        }
        let maxBytes = services.config.limits.maxBytes
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: maxBytes) } catch {
            throw APIError(.invalidArgument, "image is over the \(maxBytes) byte limit", status: .contentTooLarge)
        }
        let data = Data(buffer: body)
        let format: ImageFormat
        do throws(ImagingError) { format = try services.images.processor.sniff(data) } catch { throw APIError(.invalidArgument, error.message) }
        let response = try await inFlight.exclusively(image.itemID) {
            try await store(data, format: format, as: image, context: context)
        }
        return try context.json(response.result, status: response.status)
    }

    /// What is already pending or judged under the id decides; otherwise the bytes are written to pending/.
    private func store(_ data: Data, format: ImageFormat, as image: ImageRef, context: APIContext) async throws -> (result: UploadResult, status: HTTPResponse.Status) {
        let (userId, imageId) = (image.userId, image.imageId)
        let layout = services.layout
        if let pending = layout.pendingUploads(of: image).first {
            guard (try? Data(contentsOf: pending)) == data else {
                throw APIError(.alreadyExists, "\(image) already has a different upload in progress")
            }
            return (UploadResult(id: image.itemID, userId: userId, imageId: imageId, status: "pending", imageStatus: "pending"), .ok)
        }
        if let existing = try await services.store.item(image.itemID) {
            // Judged already (approved, blocked, held for review or an appeal): the same bytes are that item; other
            // bytes would silently replace its verdict and files.
            guard existing.contentHash == ContentHash.sha256(data) else {
                // Erasing is for backends: a user is told what they can do.
                let way = if case .app = context.principal { "erase it (DELETE /v1/items/\(userId)/\(imageId)) or upload under another id" }
                          else { "upload under another id" }
                throw APIError(.alreadyExists, "\(image) already holds an item (\(existing.status.rawValue)) with different bytes; \(way)")
            }
            return (UploadResult(id: image.itemID, userId: userId, imageId: imageId, status: existing.status.rawValue,
                                 imageStatus: ItemResponse.imageStatus(existing.status)), .ok)
        }
        try await limits.consume(.imageUpload, context: context)
        do {
            _ = try layout.writeUpload(data, as: image, fileExtension: format.fileExtension)
        } catch {
            // Another API server stored one under this id meanwhile.
            if !layout.pendingUploads(of: image).isEmpty { throw APIError(.alreadyExists, "\(image) already has an upload in progress") }
            context.logger.error("upload not stored", metadata: ["error": "\(error)"])
            throw APIError(.internalError, "upload could not be stored")
        }
        return (UploadResult(id: image.itemID, userId: userId, imageId: imageId, status: "pending", imageStatus: "pending"), .created)
    }
}

struct UploadResult: Encodable {
    var id: ItemID
    var userId: String
    var imageId: String
    var status: String
    var imageStatus: String
}
