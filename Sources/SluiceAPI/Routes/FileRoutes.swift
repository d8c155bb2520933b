import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceCore

/// `GET /v1/images/{approved|thumbnails}/{userId}/{imageId}.jpg`: approved outputs only, never anything pending,
/// in review, quarantined or rejected; `ETag` and 304. `HEAD` answers the same status and headers (with the length)
/// without the body, for caches and link checkers.
struct FileRoutes {
    let services: APIServices

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        // HEAD is answered from GET for every route (HeadAsGetResponder).
        routes.get("/v1/images/:folder/:userId/:file", use: { try await image($0, context: $1) })
        return routes
    }

    func image(_ request: Request, context: APIContext) async throws -> Response {
        let folder = try context.pathParameter("folder")
        let userId = try context.pathParameter("userId")
        let file = try context.pathParameter("file")
        guard folder == "approved" || folder == "thumbnails" else { throw APIError(.notFound, "no such image folder \(Identifiers.printable(folder))") }
        guard file.hasSuffix(".jpg") else { throw APIError(.notFound, "images are served as {imageId}.jpg") }
        let image = try APIValidation.image(userId: userId, imageId: String(file.dropLast(4)))
        guard let item = try await services.store.item(image.itemID), item.status == .approved,
              context.principal?.maySeeApproved(owner: item.userId, visibility: services.config.api.images.visibility) == true,
              let relative = folder == "approved" ? item.outputs.approved : item.outputs.thumbnail else {
            throw APIError(.notFound, "no approved image \(image)")
        }
        guard let data = try? Data(contentsOf: services.layout.absolute(relative)) else { throw APIError(.notFound, "no approved image \(image)") }
        let etag = "\"" + ContentHash.sha256Prefix(data, bytes: 12) + "\""
        var headers: HTTPFields = [.contentType: "image/jpeg", .eTag: etag, .cacheControl: "private, max-age=3600"]
        // RFC 9110's weak comparison: `*`, or any listed tag whose opaque part is ours (`W/"…"` included).
        let matches = request.headers[.ifNoneMatch]?.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        } ?? false
        if matches {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
