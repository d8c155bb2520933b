import Foundation

/// An approved message of a conversation: what a thread is made of. `seq` is its number in the store (seed 004's
/// `messageId: number`); `id` the app's own message id.
public struct ThreadMessage: Sendable, Equatable {
    public var seq: Int64
    public var id: ItemID
    public var conversationId: String
    public var senderId: String
    public var recipientId: String?
    public var text: String
    public var sentAt: Date

    public init(seq: Int64, id: ItemID, conversationId: String, senderId: String, recipientId: String?, text: String, sentAt: Date) {
        self.seq = seq
        self.id = id
        self.conversationId = conversationId
        self.senderId = senderId
        self.recipientId = recipientId
        self.text = text
        self.sentAt = sentAt
    }
}

/// A message the keyword index found, with FTS5's bm25 rank (lower is better).
public struct KeywordHit: Sendable, Equatable {
    public var seq: Int64
    public var rank: Double

    public init(seq: Int64, rank: Double) {
        self.seq = seq
        self.rank = rank
    }
}

/// A message still without a vector from the given embedding model.
public struct EmbeddingTodo: Sendable, Equatable {
    public var seq: Int64
    public var text: String

    public init(seq: Int64, text: String) {
        self.seq = seq
        self.text = text
    }
}
