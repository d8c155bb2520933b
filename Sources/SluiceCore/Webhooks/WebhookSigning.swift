import Crypto
import Foundation

/// How deliveries are signed: `X-Sluice-Signature: t={unix seconds},v1={hex HMAC-SHA256(secret, "{t}.{body}")}`.
/// A receiver recomputes the HMAC over the timestamp and the raw body, compares in constant time, and refuses
/// old timestamps (replays).
public enum WebhookSignature {
    public static let header = "X-Sluice-Signature"

    public static func value(secret: String, timestamp: Int, body: Data) -> String {
        "t=\(timestamp),v1=\(mac(secret: secret, timestamp: timestamp, body: body))"
    }

    static func mac(secret: String, timestamp: Int, body: Data) -> String {
        var signed = Data("\(timestamp).".utf8)
        signed.append(body)
        let code = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: Data(secret.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `header` is a valid signature of `body` made within `tolerance` seconds of `now`.
    public static func isValid(_ header: String, secret: String, body: Data, now: Date = Date(), tolerance: TimeInterval = 300) -> Bool {
        var timestamp: Int?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int(pair[1]) }
            if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let expected = Array(mac(secret: secret, timestamp: timestamp, body: body).utf8)
        return signatures.contains { candidate in
            let given = Array(candidate.utf8)
            guard given.count == expected.count else { return false }
            return zip(given, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }
}

/// When the next attempt of a failed delivery is due: 5 s doubling per attempt, at most an hour, ±20% jitter.
public enum WebhookBackoff {
    public static func delay(afterAttempt attempt: Int, unitRandom: Double) -> TimeInterval {
        let base = min(3600, 5 * pow(2, Double(max(0, attempt - 1))))
        return base * (0.8 + 0.4 * min(1, max(0, unitRandom)))
    }
}

/// Sends one webhook delivery; the adapter (AsyncHTTPClient) lives with the other outbound HTTP code.
public protocol WebhookTransport: Sendable {
    /// nil on a 2xx answer; otherwise what went wrong and whether another attempt may succeed.
    func post(_ url: String, headers: [(String, String)], body: Data, timeoutSeconds: Double) async -> WebhookTransportFailure?
}

public struct WebhookTransportFailure: Error, Sendable, Equatable {
    public var message: String
    /// Network errors, timeouts, 408, 429 and 5xx are worth retrying; other answers are not.
    public var retryable: Bool

    public init(message: String, retryable: Bool) {
        self.message = message
        self.retryable = retryable
    }
}
