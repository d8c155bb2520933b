import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceCore
import SluicePipeline

/// `POST /api/generateCaption`, as the seed Caption Generation API: `X-App-Token`, body
/// `{"imageData": base64, "mimeType": "image/jpeg|png|webp|heic"}`, at most 5 MB of image, 60 requests per
/// minute per client address. The image runs through the image pipeline's own sniff, limits, decode and caption
/// stages (the daemon's), so it is checked like an upload (magic bytes must match `mimeType`, header limits
/// before decoding) and the provider gets the same metadata-free JPEG the daemon sends: no GPS or other EXIF
/// leaves the machine.
struct CaptionRoutes {
    static let mimeTypes: [String: ImageFormat] = ["image/jpeg": .jpeg, "image/png": .png, "image/webp": .webp, "image/heic": .heif]
    static let maxImageBytes = 5 * 1024 * 1024
    static let perMinute = 60

    let services: APIServices
    let limits: RateLimits
    let now: @Sendable () -> Date

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.post("/api/generateCaption", use: generateCaption)
        return routes
    }

    struct Body: Decodable {
        var imageData: String
        var mimeType: String
    }

    func generateCaption(_ request: Request, context: APIContext) async throws -> Response {
        let started = ContinuousClock.now
        guard case .app = context.principal, request.headers.first(named: SluiceHeader.appToken) != nil else {
            throw CaptionAPIError(.auth, "X-App-Token header with a valid app token is required")
        }
        let client = context.clientAddress ?? "unknown"
        let limit = try await services.store.consumeRateLimit(key: "caption:\(client)", limit: Self.perMinute, windowSeconds: 60, now: now())
        guard limit.allowed else {
            throw CaptionAPIError(.rate, "caption limit of \(Self.perMinute) per minute reached for \(client); resets at \(limit.resetAt.formatted(.iso8601))",
                                  headers: limits.retryAfter(limit))
        }
        // Base64 of 5 MB plus the JSON around it.
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: Self.maxImageBytes / 3 * 4 + 64 * 1024) } catch {
            throw CaptionAPIError(.validation, "request body is too large: the image must be at most 5 MB")
        }
        let fields = try Self.decode(body)
        guard let declared = Self.mimeTypes[fields.mimeType.lowercased()] else {
            throw CaptionAPIError(.validation, "mimeType \(Identifiers.printable(fields.mimeType)) is not supported; use image/jpeg, image/png, image/webp or image/heic")
        }
        guard !fields.imageData.isEmpty else { throw CaptionAPIError(.validation, "imageData must be a non-empty base64 string") }
        guard let image = Self.decodeBase64(fields.imageData) else { throw CaptionAPIError(.validation, "imageData is not valid base64") }
        guard image.count <= Self.maxImageBytes else {
            throw CaptionAPIError(.validation, "image is \(image.count) bytes, over the 5 MB (\(Self.maxImageBytes) bytes) limit")
        }
        let sniffed: ImageFormat
        do throws(ImagingError) { sniffed = try services.images.processor.sniff(image) } catch {
            throw CaptionAPIError(.validation, "imageData is not a supported image: \(error.message)")
        }
        guard sniffed == declared else {
            throw CaptionAPIError(.validation, "imageData is \(sniffed.rawValue) but mimeType says \(fields.mimeType)")
        }
        let mimeType = fields.mimeType
        let run = await services.images.captioning.run(ImageUpload(image: nil, bytes: image), context: .intake)
        let caption: Caption
        switch run.end {
        case let .stopped(.verdict(.rejected(reason)), _, _):
            throw CaptionAPIError(.validation, "image cannot be used: \(reason)")
        case let .stopped(conclusion, _, _):
            throw CaptionAPIError(.ai, "image could not be prepared: \(conclusion)")
        case let .completed(captioned):
            switch captioned.result {
            case let .caption(made)?:
                caption = made
            case let .unavailable(reason)?:
                throw CaptionAPIError(.ai, "captioning is not available: \(reason)")
            case let .failed(provider, error)?:
                context.logger.warning("caption provider failed", metadata: ["provider": "\(provider)", "error": "\(error.message)"])
                throw CaptionAPIError(.ai, "caption provider \(provider) failed: \(error.message)")
            case nil:
                throw CaptionAPIError(.ai, "captioning did not run")
            }
        }
        let requestId = "req_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let elapsed = (ContinuousClock.now - started).milliseconds
        let envelope = CaptionSuccess(
            data: .init(caption: caption.caption, provider: caption.provider, model: caption.model, confidence: nil,
                        usage: caption.usage, processingTime: Int(elapsed.rounded()), requestId: requestId),
            metadata: .init(timestamp: now().formatted(.iso8601), mimeType: mimeType.lowercased(), imageBytes: image.count,
                            providerTimeMs: Int(caption.processingTimeMs.rounded()), rateLimit: .init(limit: Self.perMinute,
                            remaining: limit.remaining, resetAt: limit.resetAt.formatted(.iso8601))))
        var response = try context.json(envelope)
        response.headers.set(SluiceHeader.requestId, to: requestId)
        return response
    }

    /// The body's two fields, or what was wrong with it.
    static func decode(_ body: ByteBuffer) throws -> Body {
        do {
            return try JSONDecoder().decode(Body.self, from: Data(buffer: body))
        } catch {
            let field: String? = switch error as? DecodingError {
            case let .typeMismatch(_, context)?, let .valueNotFound(_, context)?: context.codingPath.first?.stringValue
            case let .keyNotFound(key, context)?: (context.codingPath.first ?? key).stringValue
            default: nil
            }
            let message = switch field {
            case "mimeType": "mimeType must be a string"
            case "imageData": "imageData must be a non-empty base64 string"
            default: "body must be a JSON object {\"imageData\": base64, \"mimeType\": …}"
            }
            throw CaptionAPIError(.validation, message)
        }
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
