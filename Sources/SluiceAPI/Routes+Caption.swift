import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceCore

/// `POST /api/generateCaption`, as the seed Caption Generation API: `X-App-Token`, body
/// `{"imageData": base64, "mimeType": "image/jpeg|png|webp|heic"}`, at most 5 MB of image, 60 requests per
/// minute per client address. The image is checked like an upload (magic bytes must match `mimeType`, header
/// limits before decoding) and re-encoded by libvips to a metadata-free JPEG before it reaches the provider,
/// so GPS and other EXIF never leave the machine.
extension Routes {
    static let captionMimeTypes: [String: ImageFormat] = ["image/jpeg": .jpeg, "image/png": .png, "image/webp": .webp, "image/heic": .heif]
    static let captionMaxImageBytes = 5 * 1024 * 1024
    static let captionPerMinute = 60

    func generateCaption(_ request: Request, context: APIContext) async throws -> Response {
        let started = ContinuousClock.now
        guard case .app = context.principal, request.headers[.init("X-App-Token")!] != nil else {
            throw CaptionAPIError(.auth, "X-App-Token header with a valid app token is required")
        }
        let client = context.clientAddress ?? "unknown"
        let limit = try services.store.consumeRateLimit(key: "caption:\(client)", limit: Self.captionPerMinute, windowSeconds: 60, now: now())
        guard limit.allowed else {
            throw CaptionAPIError(.rate, "caption limit of \(Self.captionPerMinute) per minute reached for \(client); resets at \(limit.resetAt.formatted(.iso8601))",
                                  headers: retryAfter(limit))
        }
        // Base64 of 5 MB plus the JSON around it.
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: Self.captionMaxImageBytes / 3 * 4 + 64 * 1024) } catch {
            throw CaptionAPIError(.validation, "request body is too large: the image must be at most 5 MB")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] else {
            throw CaptionAPIError(.validation, "body must be a JSON object {\"imageData\": base64, \"mimeType\": …}")
        }
        guard let mimeType = object["mimeType"] as? String else { throw CaptionAPIError(.validation, "mimeType must be a string") }
        guard let declared = Self.captionMimeTypes[mimeType.lowercased()] else {
            throw CaptionAPIError(.validation, "mimeType \(Self.quoted(mimeType)) is not supported; use image/jpeg, image/png, image/webp or image/heic")
        }
        guard let encoded = object["imageData"] as? String, !encoded.isEmpty else {
            throw CaptionAPIError(.validation, "imageData must be a non-empty base64 string")
        }
        guard let image = Self.decodeBase64(encoded) else { throw CaptionAPIError(.validation, "imageData is not valid base64") }
        guard image.count <= Self.captionMaxImageBytes else {
            throw CaptionAPIError(.validation, "image is \(image.count) bytes, over the 5 MB (\(Self.captionMaxImageBytes) bytes) limit")
        }
        let processor = services.processor
        let sniffed: ImageFormat
        do throws(ImagingError) { sniffed = try processor.sniff(image) } catch {
            throw CaptionAPIError(.validation, "imageData is not a supported image: \(error.message)")
        }
        guard sniffed == declared else {
            throw CaptionAPIError(.validation, "imageData is \(sniffed.rawValue) but mimeType says \(mimeType)")
        }
        let caption: Caption
        switch services.captions {
        case let .failure(reason):
            throw CaptionAPIError(.ai, "captioning is not available: \(reason.reason)")
        case let .success(provider):
            let options = ImageOptions(config: services.config)
            let prepared = await services.pool.imaging { () throws(ImagingError) -> ProcessedImage in
                try processor.decodeChecked(image, format: sniffed, options: options)
            }
            let jpeg: Data
            switch prepared {
            case .none: throw CaptionAPIError(.ai, "image workers are shutting down")
            case let .failure(error)?: throw CaptionAPIError(.validation, "image cannot be used: \(error.message)")
            case let .success(processed)?: jpeg = processed.approvedJPEG
            }
            do throws(ProviderError) {
                caption = try await provider.caption(jpeg, mimeType: "image/jpeg")
            } catch {
                context.logger.warning("caption provider failed", metadata: ["provider": "\(provider.name)", "error": "\(error.message)"])
                throw CaptionAPIError(.ai, "caption provider \(provider.name) failed: \(error.message)")
            }
        }
        let requestId = "req_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let elapsed = (ContinuousClock.now - started).milliseconds
        let envelope = CaptionSuccess(
            data: .init(caption: caption.caption, provider: caption.provider, model: caption.model, confidence: nil,
                        usage: caption.usage, processingTime: Int(elapsed.rounded()), requestId: requestId),
            metadata: .init(timestamp: now().formatted(.iso8601), mimeType: mimeType.lowercased(), imageBytes: image.count,
                            providerTimeMs: Int(caption.processingTimeMs.rounded()), rateLimit: .init(limit: Self.captionPerMinute,
                            remaining: limit.remaining, resetAt: limit.resetAt.formatted(.iso8601))))
        var response = try json(envelope)
        response.headers[.init("X-Request-Id")!] = requestId
        return response
    }

    /// Standard or URL-safe base64, with or without padding or line breaks; a `data:` URL prefix is accepted.
    static func decodeBase64(_ text: String) -> Data? {
        var body = Substring(text)
        if body.hasPrefix("data:"), let comma = body.firstIndex(of: ",") { body = body[body.index(after: comma)...] }
        var cleaned = body.filter { !$0.isWhitespace }.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while cleaned.count % 4 != 0 { cleaned += "=" }
        return Data(base64Encoded: cleaned)
    }
}

/// `{success: true, data: {…}, metadata: {…}}`.
struct CaptionSuccess: Encodable {
    struct Payload: Encodable {
        var caption: String
        var provider: String
        var model: String
        /// LLM captioners report no confidence; null rather than an invented number.
        var confidence: Double?
        var usage: CaptionUsage
        /// Milliseconds for the whole request (checks, re-encoding and the provider call).
        var processingTime: Int
        var requestId: String

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(caption, forKey: .caption)
            try c.encode(provider, forKey: .provider)
            try c.encode(model, forKey: .model)
            try c.encode(confidence, forKey: .confidence)
            try c.encode(usage, forKey: .usage)
            try c.encode(processingTime, forKey: .processingTime)
            try c.encode(requestId, forKey: .requestId)
        }

        enum CodingKeys: String, CodingKey { case caption, provider, model, confidence, usage, processingTime, requestId }
    }

    struct Metadata: Encodable {
        struct RateLimit: Encodable {
            var limit: Int
            var remaining: Int
            var resetAt: String
        }

        var timestamp: String
        var mimeType: String
        var imageBytes: Int
        var providerTimeMs: Int
        var rateLimit: RateLimit
    }

    var success = true
    var data: Payload
    var metadata: Metadata
}
