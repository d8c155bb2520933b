import Foundation

/// End users' tokens (`api.auth`): HS256 with the secret from `api.jwtSecretEnv`, and RS256/ES256 with keys from a
/// JWKS file or URL; `firebaseProjectId` sets issuer, audience and Google's JWKS URL for Firebase ID tokens.
public struct AuthConfig: Sendable, Equatable {
    /// A JWKS document on disk (air-gapped setups); relative to the config file.
    public var jwksFile: URL?
    /// A JWKS URL, fetched on first use, cached, refreshed every `jwksRefreshSeconds` and when a token names a key
    /// the cache does not have.
    public var jwksURL: String?
    public var jwksRefreshSeconds: Double = 3600
    /// How long one fetch of `jwksURL` may take, from connecting to the last byte of its body (at most 1 MiB), before
    /// it counts as failed.
    public var jwksTimeoutSeconds: Double = 10
    /// Required `iss` and `aud` when set.
    public var issuer: String?
    public var audience: String?
    public var firebaseProjectId: String?
    /// Accept the Firebase Auth emulator's unsigned tokens (`alg: none`). Never in production.
    public var allowEmulatorTokens: Bool = false
    /// The top-level string claim that holds the user id (`sub` unless set; e.g. a custom claim for issuers whose
    /// subjects cannot be user ids, such as Auth0's `auth0|…`).
    public var userIdClaim: String = "sub"

    public init() {}

    public static let googleSecureTokenJWKS = "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com"

    /// `issuer`, or Firebase's when only the project is set.
    public var effectiveIssuer: String? { issuer ?? firebaseProjectId.map { "https://securetoken.google.com/\($0)" } }
    public var effectiveAudience: String? { audience ?? firebaseProjectId }
    public var effectiveJWKSURL: String? { jwksURL ?? (firebaseProjectId == nil || jwksFile != nil ? nil : Self.googleSecureTokenJWKS) }
}

/// Who may read approved images (`api.images.visibility`): every signed-in user (the seed: approved images are
/// readable by all users), or only their owner.
public enum ImageVisibility: String, ConfigChoice, Codable {
    case authenticated, owner
    public static let role = "an image visibility"
}

/// Live status over Server-Sent Events (`api.events`).
public struct EventsConfig: Sendable, Equatable {
    /// The stream closes after this long without a final status.
    public var timeoutSeconds: Double = 300
    /// How often the store is looked at for a change (the daemon may be another process).
    public var pollMilliseconds: Int = 250
    public init() {}
}

/// One fixed-window limit: `limit` requests per `windowSeconds`.
public struct RateLimitRule: Sendable, Equatable, Decodable {
    public var limit: Int
    public var windowSeconds: Int

    public init(limit: Int, windowSeconds: Int) {
        self.limit = limit
        self.windowSeconds = windowSeconds
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(["limit", "windowSeconds"])
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        limit = try c.required(Int.self, forKey: AnyCodingKey(stringValue: "limit"))
        windowSeconds = try c.required(Int.self, forKey: AnyCodingKey(stringValue: "windowSeconds"))
    }
}

/// `limits.rate`: per user (uploads, text messages, reports, priority checks) and per client address (captions).
/// Defaults are the seed's.
public struct RateLimitsConfig: Sendable, Equatable {
    public var imageUpload = RateLimitRule(limit: 20, windowSeconds: 3600)
    public var textMessage = RateLimitRule(limit: 60, windowSeconds: 60)
    public var report = RateLimitRule(limit: 10, windowSeconds: 3600)
    public var detectPriority = RateLimitRule(limit: 60, windowSeconds: 60)
    public var caption = RateLimitRule(limit: 60, windowSeconds: 60)
    /// summarizeThread, extractActionItems, trackDecisions and smartSearch together.
    public var threads = RateLimitRule(limit: 30, windowSeconds: 60)
    /// How often an API process adds what it counted to the store and takes every process's totals back (0: on
    /// every request). With several processes a user can get over a limit by what the others admitted in this time.
    public var exchangeMilliseconds = 100
    /// How much of a window's limit (in percent, rounded down to whole requests) an API process may count without
    /// exchanging it: a window whose unsent count is at most that, and whose total is not that close to its limit, waits
    /// for more requests instead of being written at the next exchange. With several processes a user can get over a
    /// limit by that many requests (plus one) per other process on top of one exchange interval's; 0 writes every
    /// count at the next exchange (and `exchangeMilliseconds: 0` applies no hold-back).
    public var holdBackPercent = 5
    public init() {}
}

/// What a webhook is told about (`webhooks[].events`).
public enum WebhookEvent: String, ConfigChoice, Codable, CaseIterable {
    /// An item reached `approved`, `blocked`, `review` or `rejected`.
    case approved = "item.approved"
    case blocked = "item.blocked"
    case review = "item.review"
    case rejected = "item.rejected"
    /// An item or a user's items were erased.
    case deleted = "item.deleted"
    public static let role = "a webhook event"

    public init?(status: ItemStatus) {
        switch status {
        case .approved: self = .approved
        case .blocked: self = .blocked
        case .review: self = .review
        case .rejected: self = .rejected
        case .pending: return nil
        }
    }
}

/// One outbound webhook: deliveries are signed (HMAC-SHA256 over the timestamp and body), retried with backoff
/// from a durable outbox in the store, at least once, with an idempotency id.
public struct WebhookConfig: Sendable, Equatable {
    /// How `sluice webhooks` names it; defaults to the URL's host.
    public var name: String
    public var url: String
    public var events: [WebhookEvent] = WebhookEvent.allCases
    /// The signing secret, or the env var holding it (preferred: keeps it out of the file).
    public var secret: String?
    public var secretEnv: String?
    public var maxAttempts: Int = 12
    public var timeoutSeconds: Double = 10

    public init(name: String, url: String) {
        self.name = name
        self.url = url
    }

    /// A signing secret shorter than this is refused (in the file by the config check, from the environment when
    /// the daemon starts).
    public static let minimumSecretBytes = 16

    /// The secret from the environment or the file; nil when neither is set.
    public func signingSecret(environment: [String: String]) -> String? {
        if let secretEnv, let value = environment[secretEnv], !value.isEmpty { return value }
        return secret
    }

    /// Why this webhook cannot sign deliveries with what the environment holds, if it cannot: its `secretEnv` unset
    /// with no `secret` to fall back on, or a secret too short to keep deliveries from being forged.
    public func signingProblem(environment: [String: String]) -> String? {
        guard let secret = signingSecret(environment: environment) else {
            return "webhook \(name): the environment variable \(secretEnv ?? "") named by secretEnv is not set (or empty) and no secret is given, so its deliveries could not be signed"
        }
        guard secret.utf8.count >= Self.minimumSecretBytes else {
            return "webhook \(name): its signing secret\(secretEnv.map { " (from \($0))" } ?? "") is \(secret.utf8.count) bytes; at least \(Self.minimumSecretBytes) are needed"
        }
        return nil
    }
}
