import Foundation
import Logging
import Metrics
import SluiceCore

/// Seed 004's thread callables over the store's threads (approved messages only, so blocked and held content never
/// reaches a provider): summaries, action items and decisions through the configured LLM, answers checked against
/// the thread and cached per thread state, provider and model; smart search offline (`ThreadSearch`).
public struct ThreadIntelligence: Sendable {
    /// Who asks: a user sees only conversations they belong to; a backend (no user) sees every conversation.
    public enum Reader: Sendable, Equatable {
        case user(String)
        case backend
    }

    let store: any StatusStore
    let llm: Result<any LanguageModelProvider, CaptionUnavailable>
    let maxTokens: Int
    let config: ThreadsConfig
    public let search: ThreadSearch
    let logger: Logger
    let now: @Sendable () -> Date

    public init(store: any StatusStore, llm: Result<any LanguageModelProvider, CaptionUnavailable>, maxTokens: Int,
                embedder: (any EmbeddingProvider)?, config: ThreadsConfig, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.llm = llm
        self.maxTokens = maxTokens
        self.config = config
        search = ThreadSearch(store: store, embedder: embedder, config: config, logger: logger, now: now)
        self.logger = logger
        self.now = now
    }

    /// The configured LLM (for health checks), if any.
    public var languageModel: (any LanguageModelProvider)? { try? llm.get() }

    // MARK: - The three LLM tasks

    public func summarize(conversationId: String, messageLimit: Int?, reader: Reader) async throws(ThreadError) -> ThreadSummary {
        let thread = try await thread(conversationId, messageLimit: messageLimit, defaultLimit: 100, reader: reader)
        guard !thread.isEmpty else {
            return ThreadSummary(summary: [], keyPoints: [], participants: [], messageCount: 0, timeSpan: nil, conversationId: conversationId,
                                 generatedAt: ThreadClock.iso(now()), provider: "none", model: "none", cached: false)
        }
        return try await cached("summary", conversationId, thread, ThreadSummary.self) { (provider, transcript) throws(ThreadError) in
            let answer = try await self.ask(provider, schemaName: "thread_summary", schema: ThreadPrompts.summarySchema,
                                            prompt: ThreadPrompts.summaryTask(transcript.text))
            let parsed = try ThreadPrompts.decode(ThreadPrompts.SummaryAnswer.self, answer, task: "summary")
            let points = parsed.summary.map { ThreadPrompts.clean($0) }.filter { !$0.isEmpty }
            let included = transcript.included
            let span = included.first.flatMap { first in
                included.last.map { ThreadSummary.TimeSpan(start: ThreadClock.iso(first.sentAt), end: ThreadClock.iso($0.sentAt)) }
            }
            guard !points.isEmpty else {
                throw .provider(ProviderError(kind: .malformedResponse, message: "\(answer.provider) summary has no points"))
            }
            return ThreadSummary(summary: Array(points.prefix(12)), keyPoints: Array(parsed.keyPoints.map { ThreadPrompts.clean($0) }.filter { !$0.isEmpty }.prefix(8)),
                                 participants: Self.participants(included), messageCount: included.count, timeSpan: span,
                                 conversationId: conversationId, generatedAt: ThreadClock.iso(self.now()), provider: answer.provider,
                                 model: answer.model, cached: false)
        }
    }

    public func actionItems(conversationId: String, messageLimit: Int?, reader: Reader) async throws(ThreadError) -> ActionItemsResult {
        let thread = try await thread(conversationId, messageLimit: messageLimit, defaultLimit: 100, reader: reader)
        guard !thread.isEmpty else {
            return ActionItemsResult(items: [], actionItems: [], totalCount: 0, conversationId: conversationId, messageCount: 0,
                                     generatedAt: ThreadClock.iso(now()), provider: "none", model: "none", cached: false)
        }
        return try await cached("actionItems", conversationId, thread, ActionItemsResult.self) { (provider, transcript) throws(ThreadError) in
            let answer = try await self.ask(provider, schemaName: "action_items", schema: ThreadPrompts.actionItemsSchema,
                                            prompt: ThreadPrompts.actionItemsTask(transcript.text))
            let parsed = try ThreadPrompts.decode(ThreadPrompts.ActionItemsAnswer.self, answer, task: "action items")
            let byNumber = Dictionary(transcript.included.map { ($0.seq, $0) }, uniquingKeysWith: { a, _ in a })
            let people = try await self.people(conversationId, transcript.included)
            var items: [ActionItem] = []
            var invented = 0
            for item in parsed.items {
                guard let source = byNumber[item.sourceMessageId] else {
                    invented += 1
                    continue
                }
                let task = ThreadPrompts.clean(item.task)
                guard !task.isEmpty, item.status != "done" else { continue }
                let priority = ["high", "medium", "low"].contains(item.priority) ? item.priority : "medium"
                var assignee = item.assignee.map { ThreadPrompts.clean($0, limit: 128) }.flatMap { $0.isEmpty ? nil : $0 }
                if let named = assignee, !people.contains(named) {
                    invented += 1
                    assignee = nil
                }
                items.append(ActionItem(id: "ai_\(source.seq)_\(items.count + 1)", task: task, assignee: assignee,
                                        deadline: ThreadPrompts.deadline(item.deadline), priority: priority,
                                        status: item.status == "in-progress" ? "in-progress" : "open",
                                        sourceMessageId: source.seq, sourceMessage: source.id.rawValue))
            }
            try self.countInvented(invented, task: "actionItems", provider: answer.provider, answered: parsed.items.count, kept: items.count)
            return ActionItemsResult(items: items, actionItems: items, totalCount: items.count, conversationId: conversationId,
                                     messageCount: transcript.included.count, generatedAt: ThreadClock.iso(self.now()),
                                     provider: answer.provider, model: answer.model, cached: false)
        }
    }

    public func decisions(conversationId: String, messageLimit: Int?, reader: Reader) async throws(ThreadError) -> DecisionsResult {
        let thread = try await thread(conversationId, messageLimit: messageLimit, defaultLimit: 100, reader: reader)
        guard !thread.isEmpty else {
            return DecisionsResult(decisions: [], totalCount: 0, conversationId: conversationId, messageCount: 0,
                                   generatedAt: ThreadClock.iso(now()), provider: "none", model: "none", cached: false)
        }
        return try await cached("decisions", conversationId, thread, DecisionsResult.self) { (provider, transcript) throws(ThreadError) in
            let answer = try await self.ask(provider, schemaName: "decisions", schema: ThreadPrompts.decisionsSchema,
                                            prompt: ThreadPrompts.decisionsTask(transcript.text))
            let parsed = try ThreadPrompts.decode(ThreadPrompts.DecisionsAnswer.self, answer, task: "decisions")
            let byNumber = Dictionary(transcript.included.map { ($0.seq, $0) }, uniquingKeysWith: { a, _ in a })
            let members = try await self.people(conversationId, transcript.included)
            var decisions: [TrackedDecision] = []
            var invented = 0
            for decision in parsed.decisions {
                var sources: [ThreadMessage] = []
                for number in decision.sourceMessageIds {
                    if let message = byNumber[number] { sources.append(message) } else { invented += 1 }
                }
                let text = ThreadPrompts.clean(decision.decision)
                guard !sources.isEmpty, !text.isEmpty else { continue }
                sources.sort { $0.sentAt < $1.sentAt }
                var seen = Set<String>()
                let people = decision.participantsInvolved.filter { members.contains($0) && seen.insert($0).inserted }
                invented += decision.participantsInvolved.count - people.count
                decisions.append(TrackedDecision(
                    id: "dec_\(sources[0].seq)_\(decisions.count + 1)", decision: text, topic: ThreadPrompts.clean(decision.topic, limit: 200),
                    participantsInvolved: people.isEmpty ? Array(Set(sources.map(\.senderId))).sorted() : people,
                    confidence: ["high", "medium", "low"].contains(decision.confidence) ? decision.confidence : "low",
                    timestamp: sources.last.map { ThreadClock.iso($0.sentAt) }, context: ThreadPrompts.clean(decision.context),
                    sourceMessageIds: sources.map(\.seq), sourceMessages: sources.map(\.id.rawValue)))
            }
            try self.countInvented(invented, task: "decisions", provider: answer.provider, answered: parsed.decisions.count, kept: decisions.count)
            return DecisionsResult(decisions: decisions, totalCount: decisions.count, conversationId: conversationId,
                                   messageCount: transcript.included.count, generatedAt: ThreadClock.iso(self.now()),
                                   provider: answer.provider, model: answer.model, cached: false)
        }
    }

    public func smartSearch(query: String, conversationId: String?, limit: Int?, messageLimit: Int?,
                            reader: Reader) async throws(ThreadError) -> SmartSearchResult {
        let trimmed = query.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .invalidArgument("data.query must not be empty") }
        guard query.unicodeScalars.count <= 500 else { throw .invalidArgument("data.query is \(query.unicodeScalars.count) characters; at most 500") }
        let limit = limit ?? 10
        guard (1...50).contains(limit) else { throw .invalidArgument("data.limit must be 1...50") }
        let perConversation = try checkedLimit(messageLimit, default: 200)
        let conversations: [String]
        if let conversationId {
            try await checkAccess(conversationId, reader: reader)
            conversations = [conversationId]
        } else {
            guard case let .user(user) = reader else {
                throw .noUser("no user to search the conversations of: send X-User-Id or a user token, or name data.conversationId")
            }
            conversations = try await storeCall { () async throws(StoreError) in try await store.conversations(of: user) }
        }
        do {
            return try await search.search(trimmed, conversations: conversations, perConversation: perConversation, limit: limit)
        } catch {
            throw .store(error.description)
        }
    }

    // MARK: - Plumbing

    func checkedLimit(_ value: Int?, default fallback: Int) throws(ThreadError) -> Int {
        let value = value ?? min(fallback, config.maxMessageLimit)
        guard (1...config.maxMessageLimit).contains(value) else {
            throw .invalidArgument("data.messageLimit must be 1...\(config.maxMessageLimit)")
        }
        return value
    }

    func checkAccess(_ conversationId: String, reader: Reader) async throws(ThreadError) {
        guard Identifiers.isValidSegment(conversationId) else {
            throw .invalidArgument("bad data.conversationId \(Identifiers.printable(conversationId)): must match [A-Za-z0-9_-]{1,128}")
        }
        let allowed = try await storeCall { () async throws(StoreError) -> Bool in
            switch reader {
            case let .user(user): try await store.isThreadMember(user, conversationId: conversationId)
            case .backend: try await store.threadExists(conversationId)
            }
        }
        guard allowed else { throw .notFound(conversationId: conversationId) }
    }

    func thread(_ conversationId: String, messageLimit: Int?, defaultLimit: Int, reader: Reader) async throws(ThreadError) -> [ThreadMessage] {
        let limit = try checkedLimit(messageLimit, default: defaultLimit)
        try await checkAccess(conversationId, reader: reader)
        return try await storeCall { () async throws(StoreError) in try await store.threadMessages(conversationId: conversationId, limit: limit) }
    }

    func storeCall<T: Sendable>(_ body: () async throws(StoreError) -> T) async throws(ThreadError) -> T {
        do { return try await body() } catch { throw .store(error.description) }
    }

    func ask(_ provider: any LanguageModelProvider, schemaName: String, schema: String, prompt: String) async throws(ThreadError) -> StructuredAnswer {
        do {
            return try await provider.answer(StructuredRequest(system: ThreadPrompts.system, prompt: prompt, schemaName: schemaName,
                                                               schema: schema, maxTokens: maxTokens))
        } catch {
            throw .provider(error)
        }
    }

    /// The cached answer for exactly these messages, provider and model, or a new one (cached when it is whole).
    func cached<T: CachedThreadAnswer>(_ task: String, _ conversationId: String, _ thread: [ThreadMessage], _ type: T.Type,
                                       make: (any LanguageModelProvider, (text: String, included: [ThreadMessage])) async throws(ThreadError) -> T)
        async throws(ThreadError) -> T {
        let provider: any LanguageModelProvider
        switch llm {
        case let .success(configured): provider = configured
        case let .failure(unavailable): throw .notConfigured(unavailable.reason)
        }
        let transcript = ThreadPrompts.transcript(thread, maxCharacters: config.maxPromptCharacters)
        let numbers = transcript.included.map { String($0.seq) }.joined(separator: ",")
        let last = transcript.included.last?.id.rawValue ?? ""
        let key = "\(task)|v\(ThreadPrompts.version)|\(conversationId)|\(last)|\(provider.name)|\(provider.endpoint)|\(provider.model)|\(ContentHash.sha256(Data(numbers.utf8)))"
        if let body = try? await store.threadInsight(key: key), var hit = try? JSONDecoder().decode(CachedAnswer<T>.self, from: Data(body.utf8)).value {
            hit.cached = true
            return hit
        }
        let value = try await make(provider, transcript)
        if let data = try? JSONEncoder().encode(CachedAnswer(value: value)) {
            do {
                try await store.storeThreadInsight(key: key, conversationId: conversationId, seqs: transcript.included.map(\.seq),
                                                   body: String(decoding: data, as: UTF8.self), at: now())
            } catch {
                logger.warning("could not cache the \(task) answer for \(conversationId): \(error)")
            }
        }
        return value
    }

    struct CachedAnswer<T: Codable>: Codable { var value: T }

    /// Counts what the model invented; an answer whose every entry was dropped for invented sources is a failure
    /// (not an empty list cached as if the thread had none).
    func countInvented(_ count: Int, task: String, provider: String, answered: Int, kept: Int) throws(ThreadError) {
        guard count > 0 else { return }
        logger.warning("\(provider) referred to \(count) message(s) or people not in the thread (\(task)); dropped")
        Counter(label: "sluice_thread_invented_references_total", dimensions: [("task", task), ("provider", provider)]).increment(by: count)
        if answered > 0, kept == 0, count >= answered {
            throw .provider(ProviderError(kind: .malformedResponse,
                                          message: "\(provider) \(task) answer refers only to messages or people not in the thread"))
        }
    }

    /// Who may be named in an answer: the conversation's members and the transcript's senders and recipients.
    func people(_ conversationId: String, _ messages: [ThreadMessage]) async throws(ThreadError) -> Set<String> {
        var people = Set(messages.flatMap { [$0.senderId] + ($0.recipientId.map { [$0] } ?? []) })
        let members = try await storeCall { () async throws(StoreError) in try await store.threadMembers(conversationId) }
        people.formUnion(members)
        return people
    }

    static func participants(_ thread: [ThreadMessage]) -> [String] {
        var seen = Set<String>()
        return thread.map(\.senderId).filter { seen.insert($0).inserted }
    }
}
