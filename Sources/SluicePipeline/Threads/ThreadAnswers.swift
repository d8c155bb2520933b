import Foundation
import SluiceCore

/// An LLM answer about a thread, cached in the store; `cached` says whether this one came from there.
public protocol CachedThreadAnswer: Codable, Sendable {
    var cached: Bool { get set }
}

/// Seed 004's `summarizeThread` answer: `summary` (bullet points), `messageCount`, `generatedAt`; Sluice adds the
/// key points, the participants and the time span (computed from the messages, never from the model).
public struct ThreadSummary: CachedThreadAnswer, Equatable {
    public struct TimeSpan: Sendable, Codable, Equatable {
        public var start: String
        public var end: String
    }

    public var summary: [String]
    public var keyPoints: [String]
    public var participants: [String]
    public var messageCount: Int
    public var timeSpan: TimeSpan?
    public var conversationId: String
    public var generatedAt: String
    public var provider: String
    public var model: String
    public var cached: Bool
}

/// One of seed 004's action items, with Sluice's `id`, `status` and the message it came from.
public struct ActionItem: Sendable, Codable, Equatable {
    public var id: String
    public var task: String
    public var assignee: String?
    /// An ISO date (`2026-11-27`), an ISO date-time, or `ASAP`.
    public var deadline: String?
    public var priority: String
    public var status: String
    /// The source message's number (as `smartSearch`'s `messageId`) and its id.
    public var sourceMessageId: Int64
    public var sourceMessage: String

    /// `assignee` and `deadline` are written as null when absent (the seed's `string | null`).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(task, forKey: .task)
        try c.encode(assignee, forKey: .assignee)
        try c.encode(deadline, forKey: .deadline)
        try c.encode(priority, forKey: .priority)
        try c.encode(status, forKey: .status)
        try c.encode(sourceMessageId, forKey: .sourceMessageId)
        try c.encode(sourceMessage, forKey: .sourceMessage)
    }
}

/// Seed 004's `extractActionItems` answer (`actionItems` repeats `items`, "for compatibility").
public struct ActionItemsResult: CachedThreadAnswer, Equatable {
    public var items: [ActionItem]
    public var actionItems: [ActionItem]
    public var totalCount: Int
    public var conversationId: String
    public var messageCount: Int
    public var generatedAt: String
    public var provider: String
    public var model: String
    public var cached: Bool
}

/// One of seed 004's decisions, with Sluice's `id`, `context` and source messages; `timestamp` is the latest
/// source message's time.
public struct TrackedDecision: Sendable, Codable, Equatable {
    public var id: String
    public var decision: String
    public var topic: String
    public var participantsInvolved: [String]
    public var confidence: String
    public var timestamp: String?
    public var context: String
    public var sourceMessageIds: [Int64]
    public var sourceMessages: [String]
}

public struct DecisionsResult: CachedThreadAnswer, Equatable {
    public var decisions: [TrackedDecision]
    public var totalCount: Int
    public var conversationId: String
    public var messageCount: Int
    public var generatedAt: String
    public var provider: String
    public var model: String
    public var cached: Bool
}

/// One of seed 004's `smartSearch` results: `snippet`, `messageId` (the message's number), `relevanceScore`
/// (0–1), `context`, `sender`; Sluice adds the message's own `id`, its conversation and time, and what found it.
public struct SearchResult: Sendable, Codable, Equatable {
    public var snippet: String
    public var messageId: Int64
    public var id: String
    public var conversationId: String
    public var relevanceScore: Double
    public var context: String?
    public var sender: String
    public var sentAt: String
    /// `keyword`, `semantic` or both.
    public var matchedBy: [String]
}

public struct SmartSearchResult: Sendable, Codable, Equatable {
    public var results: [SearchResult]
    public var totalResults: Int
    /// `hybrid` (keyword and vectors), or `keyword` when no embedding provider is configured or it failed.
    public var mode: String
    /// Why the search was keyword-only, when it was.
    public var note: String?
    public var generatedAt: String
}
