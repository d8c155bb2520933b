import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import SluiceCore

/// One HTTP exchange with a provider: timeout, response size cap, status mapping, credentials scrubbed from
/// every message. Shared by all adapters.
public struct ProviderHTTP: Sendable {
    public let name: String
    let client: HTTPClient
    let timeout: TimeAmount
    let maxResponseBytes: Int
    let secrets: [String]

    public init(name: String, client: HTTPClient = .providers, timeoutSeconds: Double, maxResponseBytes: Int, secrets: [String?]) {
        self.name = name
        self.client = client
        timeout = .milliseconds(Int64(timeoutSeconds * 1000))
        self.maxResponseBytes = maxResponseBytes
        self.secrets = secrets.compactMap { $0 }.filter { !$0.isEmpty }
    }

    /// POSTs JSON and returns the body of a 2xx answer; anything else is a `ProviderError` whose message quotes
    /// the provider's own error text (found by `errorMessage`).
    public func postJSON(_ url: String, headers: [(String, String)], body: Data,
                         errorMessage: @Sendable (Data) -> String? = ProviderHTTP.genericErrorMessage) async throws(ProviderError) -> Data {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Accept", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(data: body))
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            let maxResponseBytes = maxResponseBytes
            (response, bytes) = try await client.exchange(request, timeout: timeout) { response in
                (response, try await response.body.collect(upTo: maxResponseBytes))
            }
        } catch let error as HTTPClientError where error == .connectTimeout {
            // Opening the connection took longer than `HTTPClient.providerConnectTimeout` (a test's own client may set
            // another), not the request's timeout.
            throw ProviderError(kind: .timeout, message: "\(name) at \(scrub(Self.withoutQuery(url))) could not be connected to in time "
                                + "(at most \(HTTPClient.providerConnectTimeout.nanoseconds / 1_000_000_000) s to connect)")
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw ProviderError(kind: .timeout, message: "\(name) timed out after \(timeout.nanoseconds / 1_000_000) ms")
        } catch is NIOTooManyBytesError {
            throw ProviderError(kind: .responseTooLarge, message: "\(name) response is larger than \(maxResponseBytes) bytes")
        } catch is CancellationError {
            throw ProviderError(kind: .cancelled, message: "\(name) request cancelled")
        } catch {
            throw ProviderError(kind: .connection, message: "\(name) unreachable at \(scrub(Self.withoutQuery(url))): \(scrub(Self.connectionFailure(error)))")
        }
        let data = Data(buffer: bytes)
        guard (200..<300).contains(response.status.code) else {
            let redirect = (300..<400).contains(response.status.code)
                ? response.headers.first(name: "Location").map { "redirects are not followed (Location: \(Self.withoutQuery($0)))" } : nil
            let detail = redirect ?? errorMessage(data) ?? (data.isEmpty ? nil : Self.preview(data))
            throw ProviderError(kind: .http, message: "\(name) answered HTTP \(response.status.code)\(detail.map { ": \(scrub($0))" } ?? "")",
                                status: Int(response.status.code),
                                retryAfter: response.headers.first(name: "Retry-After").flatMap(Self.parseRetryAfter))
        }
        return data
    }

    /// Decodes a 2xx body, naming what was wrong when it is not the expected shape.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(ProviderError) -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw ProviderError(kind: .malformedResponse, message: "\(name) answer is not in the expected format: \(Self.describe(error)) (first bytes: \(scrub(Self.preview(data))))")
        }
    }

    /// `{"error": {"message": …}}` (Google, OpenAI, Gemini) or `{"error": "…"}` or Anthropic's `{"type": "error", "error": {…}}`.
    public static let genericErrorMessage: @Sendable (Data) -> String? = { data in
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
        if let error = object["error"] as? [String: Any], let message = error["message"] as? String { return String(message.prefix(300)) }
        if let message = object["error"] as? String { return String(message.prefix(300)) }
        if let message = object["message"] as? String { return String(message.prefix(300)) }
        return nil
    }

    public func scrub(_ text: String) -> String {
        var result = text
        for secret in secrets {
            result = result.replacingOccurrences(of: secret, with: "***")
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) {
                result = result.replacingOccurrences(of: encoded, with: "***")
            }
        }
        return result
    }

    /// Retry-After as delta-seconds or an HTTP date.
    static func parseRetryAfter(_ value: String) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed), seconds >= 0, seconds.isFinite { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSinceNow)
    }

    /// Whether anything answers HTTP at `url` (any status counts): nil when it does, otherwise why not.
    /// Start-up warnings and `/healthz` both ask this.
    public static func unreachable(_ url: String, timeout: TimeAmount, client: HTTPClient = .providers) async -> String? {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        do {
            // Any answer counts, as soon as its head arrives: the body is not waited for.
            try await client.exchange(request, timeout: timeout) { _ in }
            return nil
        } catch {
            return connectionFailure(error)
        }
    }

    /// Why a connection failed, as a person would say it: a socket error is its system message and number
    /// ("Connection refused (errno 111)"; NIO's own wording was "connection reset (error set): Connection refused)
    /// (errno: 111)"); anything else as it describes itself.
    static func connectionFailure(_ error: any Error) -> String {
        if let failure = error as? IOError { return "\(String(cString: strerror(failure.errnoCode))) (errno \(failure.errnoCode))" }
        return String(describing: error)
    }

    /// A provider's `probe()`: nil when anything answers HTTP at `url`, otherwise `{name} unreachable at {url}: why`,
    /// with keys scrubbed.
    public func probe(_ url: String, timeout: TimeAmount = .seconds(3)) async -> String? {
        guard let problem = await Self.unreachable(url, timeout: timeout, client: client) else { return nil }
        return "\(name) unreachable at \(scrub(Self.withoutQuery(url))): \(scrub(problem))"
    }

    static func preview(_ data: Data) -> String {
        let text = String(decoding: data.prefix(80), as: UTF8.self)
        return "\"" + String(text.unicodeScalars.map { $0.value < 0x20 ? " " : Character($0) }) + "\""
    }

    static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case let .typeMismatch(_, context)?, let .valueNotFound(_, context)?:
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "wrong type at \(path.isEmpty ? "top level" : path)"
        case let .dataCorrupted(context)?:
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not JSON" : "bad value at \(path)"
        case let .keyNotFound(key, context)?:
            let path = (context.codingPath + [key]).map(\.stringValue).joined(separator: ".")
            return "missing \(path)"
        default:
            return "unreadable"
        }
    }

    /// `base` (trailing slashes dropped) + `path`: how every adapter turns a configured base URL into its endpoint.
    static func join(_ base: String, _ path: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }

    static func withoutQuery(_ url: String) -> String {
        url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
    }

    public static func percentEncode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }
}
