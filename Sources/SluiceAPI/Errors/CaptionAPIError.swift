import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The seed Caption Generation API's error envelope, used for everything under `/api/`:
/// `{"success": false, "error": {"code": "VAL_001", "message": "…", "timestamp": "…"}}`.
public struct CaptionAPIError: HTTPResponseError, Sendable {
    public enum Code: String, Sendable {
        /// Missing or invalid `X-App-Token` (401).
        case auth = "AUTH_001"
        /// Bad body, image type, size or base64 (400; unknown `/api/` paths use it with 404).
        case validation = "VAL_001"
        /// The caption provider failed or is not configured (500).
        case ai = "AI_001"
        /// Wrong HTTP method (405).
        case method = "METHOD_001"
        /// Over `limits.rate.caption` (seed: 60 per minute) from one client address (429).
        case rate = "RATE_001"

        var http: HTTPResponse.Status {
            switch self {
            case .auth: .unauthorized
            case .validation: .badRequest
            case .ai: .internalServerError
            case .method: .methodNotAllowed
            case .rate: .tooManyRequests
            }
        }
    }

    public var code: Code
    public var message: String
    public var status: HTTPResponse.Status
    public var headers: HTTPFields

    public init(_ code: Code, _ message: String, status: HTTPResponse.Status? = nil, headers: HTTPFields = [:]) {
        self.code = code
        self.message = message
        self.headers = headers
        self.status = status ?? code.http
    }

    /// The same failure as seen by a caption client.
    init(_ error: APIError) {
        switch error.code {
        case .unauthenticated, .permissionDenied: self.init(.auth, error.message, headers: error.headers)
        case .invalidArgument where error.status == .methodNotAllowed: self.init(.method, error.message, headers: error.headers)
        case .invalidArgument: self.init(.validation, error.message, status: error.status, headers: error.headers)
        case .notFound: self.init(.validation, error.message, status: .notFound, headers: error.headers)
        case .alreadyExists, .failedPrecondition: self.init(.validation, error.message, status: .conflict, headers: error.headers)
        case .resourceExhausted: self.init(.rate, error.message, headers: error.headers)
        case .internalError: self.init(.ai, error.message, headers: error.headers)
        }
    }

    struct Envelope: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
            var timestamp: String
        }

        var success = false
        var error: Detail
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let envelope = Envelope(error: .init(code: code.rawValue, message: message, timestamp: CaptionRoutes.timestamp(Date())))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(envelope)) ?? Data()
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
