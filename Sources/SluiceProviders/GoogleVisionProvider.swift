import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// Google Cloud Vision `images:annotate` with SAFE_SEARCH_DETECTION. Any server speaking that wire format
/// (the emulator, Sluice's local provider) works by pointing `endpoint` at it.
public struct GoogleVisionProvider: VisionProvider {
    public let name = "google-vision"
    private let url: String
    private let apiKey: String?
    private let bearerToken: String?
    private let http: ProviderHTTP
    public let caller: ResilientCaller

    /// Reads the credentials from the environment variables the config names.
    public init(config: VisionConfig, environment: [String: String] = ProcessInfo.processInfo.environment,
                client: HTTPClient = .providers, logger: Logger = Logger(label: "sluice.vision")) {
        url = ProviderHTTP.join(config.endpoint, "/images:annotate")
        apiKey = config.apiKeyEnv.flatMap { environment[$0] }.flatMap { $0.isEmpty ? nil : $0 }
        bearerToken = config.bearerTokenEnv.flatMap { environment[$0] }.flatMap { $0.isEmpty ? nil : $0 }
        http = ProviderHTTP(name: "vision provider", client: client, timeoutSeconds: config.timeoutSeconds,
                            maxResponseBytes: config.maxResponseBytes, secrets: [apiKey, bearerToken])
        caller = ResilientCaller(provider: name, retry: config.retryPolicy, breaker: config.breakerPolicy,
                                 maxInFlight: config.maxInFlight, logger: logger)
    }

    public var endpoint: String { url }

    public func classify(_ jpeg: Data) async throws(ProviderError) -> SafeSearch {
        let body = Self.requestBody(for: jpeg)
        let target = apiKey.map { "\(url)?key=\(ProviderHTTP.percentEncode($0))" } ?? url
        let headers = bearerToken.map { [("Authorization", "Bearer \($0)")] } ?? []
        let http = http
        return try await caller.call { () async throws(ProviderError) -> SafeSearch in
            let data = try await http.postJSON(target, headers: headers, body: body)
            do throws(ProviderError) {
                return try Self.parse(data)
            } catch {
                throw ProviderError(kind: error.kind, message: http.scrub(error.message))
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

    /// Parses an `images:annotate` answer for one image.
    static func parse(_ data: Data) throws(ProviderError) -> SafeSearch {
        let decoded: AnnotateResponse
        do {
            decoded = try JSONDecoder().decode(AnnotateResponse.self, from: data)
        } catch {
            throw ProviderError(kind: .malformedResponse, message: "vision provider answer is not the images:annotate format: \(ProviderHTTP.describe(error)) (first bytes: \(ProviderHTTP.preview(data)))")
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
}

extension GoogleVisionProvider {
    public func probe() async -> String? { await http.probe(url) }
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
