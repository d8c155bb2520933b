import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import NIOCore

/// Request context carrying the authenticated principal, the client's address and the one JSON encoding every
/// answer uses.
public struct APIContext: RequestContext, SessionRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var principal: Principal?
    /// The review console's session (only `/console/` routes use it; the API never reads it).
    public let sessions = SessionContext<ConsoleSession>()
    /// The peer's IP address (per-IP limits); replaced by the first `X-Forwarded-For` entry when
    /// `api.trustForwardedFor` is on.
    public var clientAddress: String?

    public init(source: Source) {
        coreContext = .init(source: source)
        principal = nil
        clientAddress = source.channel.remoteAddress?.ipAddress
    }

    /// 25 MiB uploads are the largest bodies any endpoint takes.
    public var maxUploadSize: Int { 25 * 1024 * 1024 + 64 * 1024 }

    public var responseEncoder: APIJSONEncoder { APIJSONEncoder() }
    public var requestDecoder: JSONDecoder { JSONDecoder() }

    /// A path parameter, percent-decoded (clients encode `:` and other reserved characters).
    func pathParameter(_ name: String) throws -> String {
        let raw = try parameters.require(name)
        return raw.removingPercentEncoding ?? raw
    }

    func optionalPathParameter(_ name: String) -> String? {
        parameters.get(name).map { $0.removingPercentEncoding ?? $0 }
    }

    /// `value` as the JSON answer, with `status`.
    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        try responseEncoder.response(value, status: status)
    }
}

/// JSON answers: sorted keys, unescaped slashes, ISO 8601 dates, `Content-Type: application/json`.
public struct APIJSONEncoder: ResponseEncoder {
    public init() {}

    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response {
        try response(value, status: .ok)
    }

    func response(_ value: some Encodable, status: HTTPResponse.Status) throws -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: try data(value))))
    }

    func data(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(value)
    }
}
