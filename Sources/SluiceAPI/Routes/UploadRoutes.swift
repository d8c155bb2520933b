import Foundation
import Hummingbird
import NIOCore
import SluiceCore

/// `POST /v1/uploads/{userId}` with the image as the body: checked by magic bytes, written into pending/ the way
/// `OutputLayout` writes every file (temp → fsync → rename); the daemon moderates it.
struct UploadRoutes {
    let services: APIServices
    let limits: RateLimits

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.post("/v1/uploads/:userId", use: upload)
        return routes
    }

    func upload(_ request: Request, context: APIContext) async throws -> Response {
        let userId = try context.parameters.require("userId")
        try APIValidation.segment(userId, "userId")
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
        do throws(ImagingError) { format = try services.images.processor.sniff(data) } catch { throw APIError(.invalidArgument, error.message) }
        try await limits.consume(.imageUpload, context: context)
        let imageId = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        guard let image = ImageRef(userId: userId, imageId: imageId) else { throw APIError(.invalidArgument, "image id is not valid") }
        do {
            _ = try services.layout.writeUpload(data, as: image, fileExtension: format.fileExtension)
        } catch {
            context.logger.error("upload not stored", metadata: ["error": "\(error)"])
            throw APIError(.internalError, "upload could not be stored")
        }
        return try context.json(UploadResult(id: image.itemID, imageId: imageId, status: "pending", imageStatus: "pending"), status: .created)
    }
}

struct UploadResult: Encodable {
    var id: ItemID
    var imageId: String
    var status: String
    var imageStatus: String
}
