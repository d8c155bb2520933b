import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The documented error envelope: `{"error": {"status": "...", "message": "..."}}` with the matching HTTP code,
/// for REST and Firebase-callable endpoints alike. Never a bare 500.
public struct APIError: HTTPResponseError, Sendable {
    public enum Status: String, Sendable {
        case unauthenticated = "UNAUTHENTICATED"
        case permissionDenied = "PERMISSION_DENIED"
        case invalidArgument = "INVALID_ARGUMENT"
        case resourceExhausted = "RESOURCE_EXHAUSTED"
        case notFound = "NOT_FOUND"
        case alreadyExists = "ALREADY_EXISTS"
        /// The item is not in a state that allows this (e.g. an appeal of an item that is not blocked).
        case failedPrecondition = "FAILED_PRECONDITION"
        case internalError = "INTERNAL"

        var http: HTTPResponse.Status {
            switch self {
            case .unauthenticated: .unauthorized
            case .permissionDenied: .forbidden
            case .invalidArgument: .badRequest
            case .resourceExhausted: .tooManyRequests
            case .notFound: .notFound
            case .alreadyExists, .failedPrecondition: .conflict
            case .internalError: .internalServerError
            }
        }
    }

    public var code: Status
    public var message: String
    /// The HTTP code when it is not the status's usual one (405 for a wrong method).
    public var status: HTTPResponse.Status
    /// Extra headers: `Allow` on 405, `Retry-After` on 429.
    public var headers: HTTPFields

    public init(_ code: Status, _ message: String, status: HTTPResponse.Status? = nil, headers: HTTPFields = [:]) {
        self.code = code
        self.message = message
        self.status = status ?? code.http
        self.headers = headers
    }

    /// `{"error": {"message": …, "status": …}}`, sorted keys: the one encoding of the envelope, also written by
    /// `ProtocolErrorEnvelopeHandler` for requests that never reach the router.
    var envelopeJSON: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(["error": ["status": code.rawValue, "message": message]])) ?? Data()
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let data = envelopeJSON
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
