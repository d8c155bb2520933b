import Foundation

/// What is left of an erased item: who erased it, when, and the hash of what it held (for audit).
public struct Tombstone: Sendable, Equatable, Codable {
    public var itemId: ItemID
    public var kind: ItemKind
    public var userId: String
    public var contentHash: String?
    public var erasedBy: String
    public var reason: String
    public var erasedAt: Date

    public init(itemId: ItemID, kind: ItemKind, userId: String, contentHash: String?, erasedBy: String, reason: String, erasedAt: Date) {
        self.itemId = itemId
        self.kind = kind
        self.userId = userId
        self.contentHash = contentHash
        self.erasedBy = erasedBy
        self.reason = reason
        self.erasedAt = erasedAt
    }
}

/// How far a webhook has read the store's history: the last status event and the last erasure turned into
/// deliveries.
public struct WebhookCursor: Sendable, Equatable {
    public var eventSeq: Int64
    public var erasureSeq: Int64

    public init(eventSeq: Int64 = 0, erasureSeq: Int64 = 0) {
        self.eventSeq = eventSeq
        self.erasureSeq = erasureSeq
    }
}

/// Something a webhook may be told about, read from the store's history.
public struct WebhookSource: Sendable, Equatable {
    public enum Change: Sendable, Equatable {
        /// An item reached `status` (from `previous`).
        case status(ItemStatus, previous: ItemStatus?)
        /// An item was erased.
        case erased(by: String)
    }

    public var change: Change
    public var itemId: ItemID
    public var kind: ItemKind
    public var userId: String
    public var reason: String?
    /// For a message blocked because its recipient blocked the sender: what the app shows the sender (seed 004's
    /// `autoReply`, `conversation.autoReply` in the config), as the item's JSON carries it.
    public var autoReply: String?
    public var at: Date

    public init(change: Change, itemId: ItemID, kind: ItemKind, userId: String, reason: String?, autoReply: String? = nil, at: Date) {
        self.change = change
        self.itemId = itemId
        self.kind = kind
        self.userId = userId
        self.reason = reason
        self.autoReply = autoReply
        self.at = at
    }

    public var event: WebhookEvent? {
        switch change {
        case let .status(status, _): WebhookEvent(status: status)
        case .erased: .deleted
        }
    }
}

public enum WebhookDeliveryState: String, Sendable, Codable, CaseIterable {
    case pending, delivered, failed
}

/// One signed POST to one webhook, kept in the store until it is delivered or gives up: at least once, with the
/// same `id` (the idempotency key) on every attempt.
public struct WebhookDelivery: Sendable, Equatable, Codable {
    public var id: String
    public var webhook: String
    public var event: WebhookEvent
    /// The JSON body, exactly as sent (and signed) on every attempt.
    public var payload: String
    public var state: WebhookDeliveryState
    public var attempts: Int
    public var nextAttemptAt: Date
    public var lastError: String?
    public var createdAt: Date
    public var deliveredAt: Date?

    public init(id: String, webhook: String, event: WebhookEvent, payload: String, state: WebhookDeliveryState = .pending, attempts: Int = 0,
                nextAttemptAt: Date, lastError: String? = nil, createdAt: Date, deliveredAt: Date? = nil) {
        self.id = id
        self.webhook = webhook
        self.event = event
        self.payload = payload
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
    }
}

/// How one attempt went.
public enum WebhookAttemptOutcome: Sendable, Equatable {
    case delivered
    case retry(at: Date, error: String)
    case failed(error: String)
    /// Not attempted (this dispatcher cannot send it: the webhook is not in its config): looked at again at `at`;
    /// `attempts` does not change, so waiting uses none of the webhook's `maxAttempts` or its backoff.
    case postponed(at: Date, note: String)
}
