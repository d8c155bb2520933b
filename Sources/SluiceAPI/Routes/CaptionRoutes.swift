import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceCore
import SluicePipeline

/// `POST /api/generateCaption`, exactly as the seed Caption Generation API: `X-App-Token`, body
/// `{"imageData": base64, "mimeType": "image/jpeg|png|webp|heic"}` (at most 5 MB after base64 encoding),
/// `limits.rate.caption` per client address (seed: 60 per minute) with `X-RateLimit-*` headers. The image runs
/// through the image pipeline's own sniff, limits, decode and caption stages (the daemon's), so it is checked like
/// an upload and the provider gets the same metadata-free JPEG the daemon sends: no GPS or other EXIF leaves the
/// machine.
struct CaptionRoutes {
    static let mimeTypes: [String: ImageFormat] = ["image/jpeg": .jpeg, "image/png": .png, "image/webp": .webp, "image/heic": .heif]
    /// The seed: "Maximum 5MB after base64 encoding".
    static let maxBase64Bytes = 5 * 1024 * 1024

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
        let rule = services.config.limits.rate.caption
        let limit = try await limits.ledger.consume(key: "caption:\(client)", limit: rule.limit, windowSeconds: rule.windowSeconds,
                                                             now: now())
        let rateHeaders = Self.rateLimitHeaders(limit)
        do {
            guard limit.allowed else {
                throw CaptionAPIError(.rate, "caption limit of \(rule.limit) per \(rule.windowSeconds) s reached for \(client); resets at \(limit.resetAt.formatted(.iso8601))",
                                      headers: limits.retryAfter(limit))
            }
            var response = try await caption(request, context: context, started: started)
            for field in rateHeaders { response.headers.append(field) }
            return response
        } catch var error as CaptionAPIError {
            // Errors after the rate check carry the same headers as a caption does, an X-Request-Id included.
            for field in rateHeaders { error.headers.append(field) }
            if let name = HTTPField.Name(SluiceHeader.requestId) { error.headers.append(HTTPField(name: name, value: Self.requestId(at: now()))) }
            throw error
        }
    }

    private func caption(_ request: Request, context: APIContext, started: ContinuousClock.Instant) async throws -> Response {
        // Seed 002: the Content-Type header is required and must be application/json (parameters such as charset allowed).
        let declaredType = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard declaredType == "application/json" else {
            throw CaptionAPIError(.validation, "Content-Type must be application/json, not \(request.headers[.contentType].map { Identifiers.printable($0, limit: 60) } ?? "missing")")
        }
        let body: ByteBuffer
        do { body = try await request.body.collect(upTo: Self.maxBase64Bytes + 64 * 1024) } catch {
            throw CaptionAPIError(.validation, "request body is too large: imageData must be at most 5 MB after base64 encoding")
        }
        let fields = try Self.decode(body)
        guard let declared = Self.mimeTypes[fields.mimeType.lowercased()] else {
            throw CaptionAPIError(.validation, "mimeType \(Identifiers.printable(fields.mimeType)) is not supported; use image/jpeg, image/png, image/webp or image/heic")
        }
        guard !fields.imageData.isEmpty else { throw CaptionAPIError(.validation, "imageData must be a non-empty base64 string") }
        guard fields.imageData.utf8.count <= Self.maxBase64Bytes else {
            throw CaptionAPIError(.validation, "imageData is \(fields.imageData.utf8.count) bytes, over the 5 MB limit after base64 encoding")
        }
        guard let image = Self.decodeBase64(fields.imageData) else { throw CaptionAPIError(.validation, "imageData is not valid base64") }
        let sniffed: ImageFormat
        do throws(ImagingError) { sniffed = try services.images.processor.sniff(image) } catch {
            throw CaptionAPIError(.validation, "imageData is not a supported image: \(error.message)")
        }
        guard sniffed == declared else {
            throw CaptionAPIError(.validation, "imageData is \(sniffed.rawValue) but mimeType says \(fields.mimeType)")
        }
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
                throw CaptionAPIError(.ai, "caption provider \(provider) failed: it \(error.publicSummary) (details are in the server's log)")
            case nil:
                throw CaptionAPIError(.ai, "captioning did not run")
            }
        }
        let requestId = Self.requestId(at: now())
        let elapsed = Int((ContinuousClock.now - started).milliseconds.rounded())
        let usage = caption.usage
        let envelope = CaptionSuccess(
            data: .init(caption: caption.caption, provider: Self.displayName(caption.provider), model: caption.model,
                        confidence: (caption.confidence ?? .unknown).rawValue,
                        usage: usage.inputTokens.flatMap { prompt in
                            usage.outputTokens.map { .init(prompt_tokens: prompt, completion_tokens: $0, total_tokens: usage.totalTokens ?? prompt + $0) }
                        },
                        processingTime: "\(elapsed)ms", requestId: requestId),
            metadata: .init(timestamp: Self.timestamp(now()), provider: caption.provider, requestId: requestId, processingTime: elapsed,
                            imageSize: image.count, mimeType: fields.mimeType.lowercased()))
        var response = try context.json(envelope)
        response.headers.set(SluiceHeader.requestId, to: requestId)
        return response
    }

    /// `X-RateLimit-Limit`, `-Remaining` and `-Reset` (Unix seconds when the window ends).
    static func rateLimitHeaders(_ state: RateLimitState) -> [HTTPField] {
        [("X-RateLimit-Limit", "\(state.limit)"), ("X-RateLimit-Remaining", "\(state.remaining)"),
         ("X-RateLimit-Reset", "\(Int(state.resetAt.timeIntervalSince1970))")].compactMap { name, value in
            HTTPField.Name(name).map { HTTPField(name: $0, value: value) }
        }
    }

    /// `req_{milliseconds}_{random}`, the seed's shape.
    static func requestId(at date: Date) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        let suffix = String((0..<6).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
        return "req_\(Int64(date.timeIntervalSince1970 * 1000))_\(suffix)"
    }

    /// ISO 8601 with milliseconds, UTC: `2024-01-15T10:30:45.123Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    /// How `data.provider` names the adapter (`metadata.provider` keeps its config name).
    static func displayName(_ provider: String) -> String {
        switch provider {
        case CaptionProviderKind.openAICompatible.rawValue: "OpenAI-compatible"
        case CaptionProviderKind.anthropic.rawValue: "Anthropic"
        case CaptionProviderKind.gemini.rawValue: "Gemini"
        default: provider
        }
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

/// The seed's success envelope: `{success: true, data: {…}, metadata: {…}}`.
struct CaptionSuccess: Encodable {
    struct Usage: Encodable {
        var prompt_tokens: Int
        var completion_tokens: Int
        var total_tokens: Int
    }

    struct Payload: Encodable {
        var caption: String
        /// The provider as people name it (`OpenAI-compatible`, `Anthropic`, `Gemini`).
        var provider: String
        var model: String
        /// `high`, `medium`, `low` from token log-probabilities when the provider reports them, else `unknown`.
        var confidence: String
        /// Null when the provider reported no token counts.
        var usage: Usage?
        /// The whole request, e.g. `"2847ms"`.
        var processingTime: String
        var requestId: String

        enum CodingKeys: String, CodingKey { case caption, provider, model, confidence, usage, processingTime, requestId }

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
    }

    struct Metadata: Encodable {
        var timestamp: String
        /// The adapter's config name (`openai-compatible`, `anthropic`, `gemini`).
        var provider: String
        var requestId: String
        /// Milliseconds for the whole request.
        var processingTime: Int
        /// Bytes of the decoded image.
        var imageSize: Int
        var mimeType: String
    }

    var success = true
    var data: Payload
    var metadata: Metadata
}
