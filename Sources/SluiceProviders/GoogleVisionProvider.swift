import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import SluiceCore

/// Google Cloud Vision `images:annotate` with SAFE_SEARCH_DETECTION. Any server speaking that wire format
/// (the emulator, Sluice's local provider) works by pointing `endpoint` at it.
public struct GoogleVisionProvider: VisionProvider {
    public let name = "google-vision"
    private let url: String
    private let apiKey: String?
    private let bearerToken: String?
    private let timeout: TimeAmount
    private let maxResponseBytes: Int
    private let retry: RetryState.Policy
    private let client: HTTPClient
    private let limiter: AsyncLimiter
    private let logger: Logger

    /// Reads the credentials from the environment variables the config names.
    public init(config: VisionConfig, environment: [String: String] = ProcessInfo.processInfo.environment,
                client: HTTPClient = .shared, logger: Logger = Logger(label: "sluice.vision")) {
        var base = config.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        url = base + "/images:annotate"
        apiKey = config.apiKeyEnv.flatMap { environment[$0] }.flatMap { $0.isEmpty ? nil : $0 }
        bearerToken = config.bearerTokenEnv.flatMap { environment[$0] }.flatMap { $0.isEmpty ? nil : $0 }
        timeout = .milliseconds(Int64(config.timeoutSeconds * 1000))
        maxResponseBytes = config.maxResponseBytes
        retry = RetryState.Policy(maxAttempts: config.maxAttempts, initialBackoff: config.initialBackoffSeconds,
                                  maxBackoff: config.maxBackoffSeconds)
        self.client = client
        limiter = AsyncLimiter(limit: config.maxInFlight)
        self.logger = logger
    }

    public var endpointDescription: String { url }

    public func classify(_ jpeg: Data) async throws(ProviderError) -> SafeSearch {
        let body = Self.requestBody(for: jpeg)
        var state = RetryState(policy: retry)
        while true {
            state.beginAttempt()
            let attempt = await limiter.run { () async -> Result<SafeSearch, ProviderError> in
                do throws(ProviderError) { return .success(try await send(body)) } catch { return .failure(error) }
            }
            switch attempt {
            case let .success(result):
                return result
            case var .failure(error):
                error.attempts = state.attempts
                if Task.isCancelled {
                    throw ProviderError(kind: .cancelled, message: "vision request cancelled: \(error.message)", attempts: state.attempts)
                }
                switch state.decide(after: error, unitRandom: Double.random(in: 0..<1)) {
                case let .giveUp(reason):
                    logger.warning("vision provider failed", metadata: ["error": "\(error.message)", "attempts": "\(state.attempts)", "why": "\(reason)"])
                    throw error
                case let .retry(delay):
                    logger.info("vision provider failed, retrying", metadata: ["error": "\(error.message)", "delaySeconds": "\(delay)"])
                    try? await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
                }
            }
        }
    }

    static func requestBody(for jpeg: Data) -> Data {
        // Built by hand only around the base64 payload, which would otherwise be escaped and copied twice.
        var body = Data(#"{"requests":[{"image":{"content":""#.utf8)
        body.append(jpeg.base64EncodedData())
        body.append(Data(#""},"features":[{"type":"SAFE_SEARCH_DETECTION"}]}]}"#.utf8))
        return body
    }

    private func send(_ body: Data) async throws(ProviderError) -> SafeSearch {
        var request = HTTPClientRequest(url: apiKey.map { "\(url)?key=\(Self.percentEncode($0))" } ?? url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        request.headers.add(name: "Accept", value: "application/json")
        if let bearerToken { request.headers.add(name: "Authorization", value: "Bearer \(bearerToken)") }
        request.body = .bytes(ByteBuffer(data: body))

        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await client.execute(request, timeout: timeout)
            bytes = try await response.body.collect(upTo: maxResponseBytes)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw ProviderError(kind: .timeout, message: "vision provider timed out after \(timeout.nanoseconds / 1_000_000) ms")
        } catch is NIOTooManyBytesError {
            throw ProviderError(kind: .responseTooLarge, message: "vision provider response is larger than \(maxResponseBytes) bytes")
        } catch is CancellationError {
            throw ProviderError(kind: .cancelled, message: "vision request cancelled")
        } catch {
            throw ProviderError(kind: .connection, message: "vision provider unreachable at \(url): \(scrub(String(describing: error)))")
        }
        let data = Data(buffer: bytes)
        guard (200..<300).contains(response.status.code) else {
            throw ProviderError(kind: .http, message: "vision provider answered HTTP \(response.status.code)\(Self.errorDetail(data).map { ": \(scrub($0))" } ?? "")",
                                status: Int(response.status.code),
                                retryAfter: response.headers.first(name: "Retry-After").flatMap(Self.parseRetryAfter))
        }
        do throws(ProviderError) {
            return try Self.parse(data)
        } catch {
            throw ProviderError(kind: error.kind, message: scrub(error.message))
        }
    }

    /// Parses an `images:annotate` answer for one image.
    static func parse(_ data: Data) throws(ProviderError) -> SafeSearch {
        let decoded: AnnotateResponse
        do {
            decoded = try JSONDecoder().decode(AnnotateResponse.self, from: data)
        } catch {
            throw ProviderError(kind: .malformedResponse, message: "vision provider answer is not the images:annotate format: \(Self.describe(error)) (first bytes: \(Self.preview(data)))")
        }
        if let error = decoded.error {
            throw ProviderError(kind: .http, message: "vision provider error \(error.code.map(String.init) ?? "?"): \(error.message ?? "no message")")
        }
        guard let responses = decoded.responses, responses.count == 1 else {
            throw ProviderError(kind: .malformedResponse, message: "vision provider answer has \(decoded.responses?.count ?? 0) responses for 1 image")
        }
        let entry = responses[0]
        if let error = entry.error {
            throw ProviderError(kind: .imageError, message: "vision provider could not classify the image (code \(error.code.map(String.init) ?? "?")): \(error.message ?? "no message")")
        }
        guard let annotation = entry.safeSearchAnnotation else {
            throw ProviderError(kind: .malformedResponse, message: "vision provider answer has no safeSearchAnnotation")
        }
        func likelihood(_ raw: String?, _ field: String) throws(ProviderError) -> Likelihood {
            guard let raw else { return .unknown }
            guard let value = Likelihood(rawValue: raw) else {
                throw ProviderError(kind: .malformedResponse, message: "vision provider gave \(field) = \"\(raw.prefix(40))\", not a likelihood")
            }
            return value
        }
        return SafeSearch(adult: try likelihood(annotation.adult, "adult"), spoof: try likelihood(annotation.spoof, "spoof"),
                          medical: try likelihood(annotation.medical, "medical"),
                          violence: try likelihood(annotation.violence, "violence"), racy: try likelihood(annotation.racy, "racy"))
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

    private static func errorDetail(_ data: Data) -> String? {
        if let decoded = try? JSONDecoder().decode(AnnotateResponse.self, from: data), let message = decoded.error?.message {
            return String(message.prefix(200))
        }
        return data.isEmpty ? nil : preview(data)
    }

    private static func preview(_ data: Data) -> String {
        let text = String(decoding: data.prefix(80), as: UTF8.self)
        return "\"" + String(text.unicodeScalars.map { $0.value < 0x20 ? " " : Character($0) }) + "\""
    }

    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case let .typeMismatch(_, context)?, let .valueNotFound(_, context)?, let .dataCorrupted(context)?:
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not JSON" : "wrong type at \(path)"
        case let .keyNotFound(key, _)?:
            return "missing \(key.stringValue)"
        default:
            return "unreadable"
        }
    }

    private static func percentEncode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }

    /// Keeps credentials out of every message.
    private func scrub(_ text: String) -> String {
        var result = text
        for secret in [apiKey, bearerToken].compactMap({ $0 }) where !secret.isEmpty {
            result = result.replacingOccurrences(of: secret, with: "***")
            result = result.replacingOccurrences(of: Self.percentEncode(secret), with: "***")
        }
        return result
    }
}

private struct AnnotateResponse: Decodable {
    var responses: [Entry]?
    var error: GoogleError?

    struct Entry: Decodable {
        var safeSearchAnnotation: Annotation?
        var error: GoogleError?
    }

    struct Annotation: Decodable {
        var adult: String?
        var spoof: String?
        var medical: String?
        var violence: String?
        var racy: String?
    }

    struct GoogleError: Decodable {
        var code: Int?
        var message: String?
    }
}

extension GoogleVisionProvider {
    /// Whether anything answers HTTP at the endpoint (any status counts); used to warn at start-up.
    public func probe(timeoutSeconds: Int64 = 3) async -> String? {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        do {
            let response = try await client.execute(request, timeout: .seconds(timeoutSeconds))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            return nil
        } catch {
            return "vision provider unreachable at \(url): \(scrub(String(describing: error)))"
        }
    }
}
