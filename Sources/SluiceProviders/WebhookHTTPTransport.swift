import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
import SluiceCore

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
        do {
            // The answer's body is drained (up to 64 KiB) within the same timeout: a receiver that sends its head and
            // then drips the body does not hold a delivery slot past `timeoutSeconds`.
            let response = try await client.exchange(request, timeout: .milliseconds(Int64(timeoutSeconds * 1000))) { response in
                _ = try? await response.body.collect(upTo: 64 * 1024)
                return response
            }
            let code = Int(response.status.code)
            if (200..<300).contains(code) { return nil }
            if (300..<400).contains(code) {
                // Not followed (HTTPClient.providers): the signed body goes only to the configured URL.
                let location = response.headers.first(name: "Location").map { ", Location: \(ProviderHTTP.withoutQuery($0))" } ?? ""
                return WebhookTransportFailure(message: "HTTP \(code) (redirects are not followed\(location))", retryable: false)
            }
            return WebhookTransportFailure(message: "HTTP \(code)", retryable: code == 408 || code == 429 || code >= 500)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return WebhookTransportFailure(message: "no complete answer within \(String(format: "%g", timeoutSeconds)) s (timeoutSeconds)", retryable: true)
        } catch {
            return WebhookTransportFailure(message: "unreachable: \(ProviderHTTP.connectionFailure(error))", retryable: true)
        }
    }
}
