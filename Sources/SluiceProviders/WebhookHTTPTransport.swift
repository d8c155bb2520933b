import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import SluiceCore
import Synchronization

/// Webhook deliveries over AsyncHTTPClient: a POST with a JSON body, any 2xx is delivered; a redirect is not followed.
public struct WebhookHTTPTransport: WebhookTransport {
    let client: HTTPClient

    public init(client: HTTPClient = .providers) { self.client = client }

    public func post(_ url: String, headers: [(String, String)], body: Data, timeoutSeconds: Double) async -> WebhookTransportFailure? {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "sluice-webhooks")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(data: body))
        // The answer's status decides as soon as its head arrives; the body is drained (up to 64 KiB) only so that the
        // connection can be used again, and within the same timeout: a receiver that answers and then drips its body
        // does not hold a delivery slot past `timeoutSeconds`, and is judged by the status it sent.
        let head = AnswerHead()
        let code: Int
        let location: String?
        do {
            (code, location) = try await client.exchange(request, timeout: .milliseconds(Int64(timeoutSeconds * 1000))) { response in
                let status = head.keep(response)
                _ = try? await response.body.collect(upTo: 64 * 1024)
                return status
            }
        } catch {
            // Past the timeout with the head in, the status it sent decides.
            guard let status = head.status else {
                if let error = error as? HTTPClientError, error == .deadlineExceeded {
                    return WebhookTransportFailure(message: "no answer within \(String(format: "%g", timeoutSeconds)) s (timeoutSeconds)", retryable: true)
                }
                return WebhookTransportFailure(message: "unreachable: \(ProviderHTTP.connectionFailure(error))", retryable: true)
            }
            (code, location) = status
        }
        if (200..<300).contains(code) { return nil }
        if (300..<400).contains(code) {
            // Not followed (HTTPClient.providers): the signed body goes only to the configured URL.
            let location = location.map { ", Location: \(ProviderHTTP.withoutQuery($0))" } ?? ""
            return WebhookTransportFailure(message: "HTTP \(code) (redirects are not followed\(location))", retryable: false)
        }
        return WebhookTransportFailure(message: "HTTP \(code)", retryable: code == 408 || code == 429 || code >= 500)
    }
}

/// The status and `Location` of an answer, kept when its head arrives.
private final class AnswerHead: Sendable {
    private let state = Mutex<(code: Int, location: String?)?>(nil)

    var status: (code: Int, location: String?)? { state.withLock { $0 } }

    /// Keeps the status and `Location` of `response`, and returns them.
    func keep(_ response: HTTPClientResponse) -> (code: Int, location: String?) {
        let status = (code: Int(response.status.code), location: response.headers.first(name: "Location"))
        state.withLock { $0 = status }
        return status
    }
}
