import Foundation

/// The status store: one row per item plus an append-only event history, reports, rate-limit windows,
/// reprocess runs and published metrics. Every method is async: implementations do their I/O off the
/// caller's cooperative threads (GRDB's queues for SQLite). `StoreContractTests` runs the same suite against
/// every implementation, so backends cannot drift.
public protocol StatusStore: Sendable {
    // MARK: Items and history

    func item(_ id: ItemID) async throws(StoreError) -> Item?
    /// The items that exist among `ids` (any order).
    func items(_ ids: [ItemID]) async throws(StoreError) -> [Item]
    /// Newest first (by `updatedAt`), optionally one status and kind, at most `limit`.
    func items(status: ItemStatus?, kind: ItemKind?, limit: Int?) async throws(StoreError) -> [Item]
    /// Items matching the filter (by `createdAt` for since/until), ordered by id.
    func items(matching filter: ItemFilter) async throws(StoreError) -> [Item]
    func itemIDs(matching filter: ItemFilter) async throws(StoreError) -> [ItemID]
    /// The item's events, oldest first.
    func events(of id: ItemID) async throws(StoreError) -> [ItemEvent]
    func countsByStatus() async throws(StoreError) -> [ItemStatus: Int]
    func countsByKindAndStatus() async throws(StoreError) -> [ItemCount]
    /// Content hash and status of each id that exists (idempotent ingest).
    func contentHashes(_ ids: [ItemID]) async throws(StoreError) -> [ItemID: StoredHash]

    // MARK: Verdicts

    /// Processing of an upload started: creates the item as `pending`, or bumps its attempts (and resets a final
    /// status to `pending` when the content changed or it was final); appends a `received` event.
    func markReceived(_ id: ItemID, kind: ItemKind, userId: String, contentHash: String?, sourceBytes: Int?,
                      at now: Date) async throws(StoreError) -> Item
    /// Stores an item's verdict (insert or replace, keeping `createdAt` and the larger attempt count) with a
    /// `verdict` event, in one transaction.
    func recordVerdict(_ item: Item, stage: String?, detail: String?) async throws(StoreError)
    /// `recordVerdict` for an upload the daemon judged, only while its item still exists (`markReceived` made it):
    /// false, and nothing written, when it was erased while it was being judged — an erased user's upload must not
    /// come back with its verdict.
    func recordUploadVerdict(_ item: Item, stage: String?, detail: String?) async throws(StoreError) -> Bool
    /// Many verdicts in one transaction (text queues): each insert or replace counts an attempt and appends a
    /// `verdict` event. Returns how many were written.
    @discardableResult
    func recordVerdicts(_ items: [Item], stage: String) async throws(StoreError) -> Int
    /// `recordVerdicts`, except that an item whose stored content hash equals its own is left as it is (a queue
    /// line replayed after a crash), and an item whose id is stored as another user's is recorded as rejected under
    /// its line's id (`lineIDs`, one per item: `file:line`) instead of taking that item over; decided in the same
    /// transaction as the writes. Returns how many were written.
    @discardableResult
    func recordChangedVerdicts(_ items: [Item], lineIDs: [ItemID], stage: String) async throws(StoreError) -> Int
    /// A batch for `recordChangedVerdicts(_:)` with the work that needs no database done (rows encoded), so a caller
    /// can make the next batch ready while the store writes this one. The default does nothing ahead.
    func prepareChangedVerdicts(_ items: [Item], lineIDs: [ItemID], stage: String) -> PreparedVerdicts
    /// `recordChangedVerdicts(_:lineIDs:stage:)` of a prepared batch; with the batch's `erasuresSeenUpTo`, the items
    /// of a user erased after that point are left out (decided in the same transaction as the writes).
    @discardableResult
    func recordChangedVerdicts(_ prepared: PreparedVerdicts) async throws(StoreError) -> RecordedVerdicts
    /// `recordChangedVerdicts(_:)` in the same transaction as `claim` (made as `claimWork` makes it): nil, with nothing
    /// written, when another owner holds the unit.
    func recordChangedVerdicts(_ prepared: PreparedVerdicts, claiming claim: WorkClaim) async throws(StoreError) -> RecordedVerdicts?
    /// An event without changing the item (e.g. a pending file finished after a restart).
    func appendEvent(_ event: ItemEvent) async throws(StoreError)
    /// A human decision: the item as decided plus a `review` event naming who, the note and the previous status.
    func recordDecision(_ item: Item, from previous: ItemStatus) async throws(StoreError)
    /// The item as changed plus one event of `type` with `detail` (undo, reports sending an item back to review).
    func recordStatusChange(_ item: Item, from previous: ItemStatus, type: String, detail: String) async throws(StoreError)

    // MARK: Reprocess runs

    /// Starts a run, or resumes the unfinished one with the same key: the item snapshot is taken once, so a
    /// resumed run processes exactly the items the first attempt did not finish.
    /// The snapshot is split into numbered batches of `batchSize` items (by id), the units several `sluice reprocess`
    /// processes on several hosts claim.
    func beginReprocess(runKey: String, arguments: String, filter: ItemFilter, batchSize: Int) async throws(StoreError) -> ReprocessRunState
    func pendingReprocessItems(runKey: String) async throws(StoreError) -> [ItemID]
    /// The batches that still have items not done, in order.
    func pendingReprocessBatches(runKey: String) async throws(StoreError) -> [Int]
    /// One batch's items not done yet, by id.
    func pendingReprocessItems(runKey: String, batch: Int) async throws(StoreError) -> [ItemID]
    func doneReprocessItems(runKey: String) async throws(StoreError) -> [ItemID]
    /// What text reprocessing needs without decoding whole rows.
    func textSnapshots(_ ids: [ItemID]) async throws(StoreError) -> [TextSnapshot]
    /// Changed items with a `reprocess` event each, and every id of `done` marked done, in one transaction.
    func commitReprocess(runKey: String, changes: [ReprocessChange], done: [ItemID]) async throws(StoreError)
    /// Text counterpart: only the verdict columns change.
    func commitTextReprocess(runKey: String, updates: [TextUpdate], done: [ItemID]) async throws(StoreError)
    func finishReprocess(runKey: String) async throws(StoreError)

    // MARK: Reports

    func recordReport(_ report: Report) async throws(StoreError)
    /// Newest first.
    func reports() async throws(StoreError) -> [Report]

    // MARK: Rate limits

    /// Counts one request against `key` in the current fixed window, atomically; over the limit it is not
    /// counted and `allowed` is false. Counters live in the store so several API processes agree.
    func consumeRateLimit(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState
    /// Adds requests counted elsewhere (an API process's memory) to their windows in one transaction, and returns
    /// each window's total after it (every process's counts); an amount of 0 only reads the total. Windows of
    /// those keys that ended are dropped.
    ///
    /// Given the relation feed's point the counts were made at (`erasuresSeenUpTo`), the windows of a user erased
    /// after it (`UserRateLimit` keys) are not written (their totals are 0), and those users are returned with the
    /// feed's newest point: an erasure either commits first and is read here, or comes after and deletes what this
    /// wrote. Given nil, nothing is left out (and only the point is read).
    func exchangeRateLimitCounts(_ amounts: [CounterSlot: Int], erasuresSeenUpTo: Int64?) async throws(StoreError) -> RateLimitExchange
    /// The totals of several rate-limit windows in one read (absent windows: 0).
    func rateLimitTotals(_ slots: [CounterSlot]) async throws(StoreError) -> [CounterSlot: Int]
    /// The current window of `key`, without counting.
    func rateLimit(key: String, limit: Int, windowSeconds: Int, now: Date) async throws(StoreError) -> RateLimitState

    // MARK: Metrics

    /// Replaces `source`'s snapshot (Prometheus text) so another process can serve it.
    func publishMetrics(source: String, body: String, at date: Date) async throws(StoreError)
    func metricsSnapshots() async throws(StoreError) -> [MetricsSnapshot]

    // MARK: Erasure

    /// Erases items (their files are the caller's, through `OutputLayout`): the rows and their history go, a
    /// tombstone each stays. Returns the items as they were; ids that do not exist are skipped.
    func eraseItems(_ ids: [ItemID], by: String, reason: String, at date: Date) async throws(StoreError) -> [Item]
    /// Reports filed by the user lose the user id and description (their targets' reports stay).
    func anonymizeReports(by userId: String) async throws(StoreError)
    /// Webhook deliveries about these (erased) items keep their event, ids and statuses but not their `reason`, which
    /// can quote the message ("Content contains prohibited terms: …"); `item.deleted` deliveries are left as they are.
    func redactWebhookReasons(of ids: [ItemID]) async throws(StoreError)
    func tombstones(userId: String?) async throws(StoreError) -> [Tombstone]

    // MARK: Webhook outbox

    func webhookCursor(_ webhook: String) async throws(StoreError) -> WebhookCursor
    /// Status changes and erasures after `cursor`, oldest first, at most `limit` of each.
    func webhookSources(after cursor: WebhookCursor, limit: Int) async throws(StoreError) -> (sources: [WebhookSource], cursor: WebhookCursor)
    /// New deliveries and the webhook's advanced cursor, in one transaction: nothing read is ever lost or queued twice.
    func enqueueWebhookDeliveries(_ deliveries: [WebhookDelivery], webhook: String, cursor: WebhookCursor) async throws(StoreError)
    /// Pending deliveries whose next attempt is due, oldest first; of one webhook, or of all when `webhook` is nil.
    func dueWebhookDeliveries(at date: Date, limit: Int, webhook: String?) async throws(StoreError) -> [WebhookDelivery]
    func recordWebhookAttempt(_ id: String, outcome: WebhookAttemptOutcome, at date: Date) async throws(StoreError)
    /// Newest first, optionally one state.
    func webhookDeliveries(state: WebhookDeliveryState?, limit: Int) async throws(StoreError) -> [WebhookDelivery]
    /// Makes failed deliveries (these ids, or all when nil) pending again, due now; returns the ids it made pending
    /// (an id that was unknown, pending or delivered is not among them).
    func retryWebhookDeliveries(ids: [String]?, at date: Date) async throws(StoreError) -> [String]

    // MARK: Review console

    /// Adds an account; false when the name is taken.
    func addReviewer(_ reviewer: Reviewer) async throws(StoreError) -> Bool
    func reviewer(named name: String) async throws(StoreError) -> Reviewer?
    func reviewers() async throws(StoreError) -> [Reviewer]
    /// Replaces an existing account's fields; false when there is none.
    func updateReviewer(_ reviewer: Reviewer) async throws(StoreError) -> Bool
    /// Console sessions and other short-lived values by key, with an optional expiry. With `onlyIfAbsent`, an
    /// existing unexpired key is left alone and false returned.
    func putValue(_ value: Data, key: String, expiresAt: Date?, onlyIfAbsent: Bool, now: Date) async throws(StoreError) -> Bool
    /// The value and its expiry, if present and not expired at `now`.
    func value(key: String, now: Date) async throws(StoreError) -> (value: Data, expiresAt: Date?)?
    func removeValue(key: String) async throws(StoreError)
    /// Claims an item for a reviewer until `until` (a short lease): granted when unclaimed, expired or already theirs.
    /// Returns who holds it afterwards and until when.
    func claimItem(_ id: ItemID, reviewer: String, until: Date, now: Date) async throws(StoreError) -> (holder: String, until: Date)
    /// Unexpired claims by item.
    func claims(now: Date) async throws(StoreError) -> [ItemID: String]
    /// Sends a review item up to admins (an `escalated` event too).
    func escalate(_ escalation: Escalation) async throws(StoreError)
    /// Escalations of items still in review.
    func escalations() async throws(StoreError) -> [ItemID: Escalation]
    /// Resolves or dismisses an open report; false when there is no open report with that id.
    func resolveReport(_ reportId: String, status: ReportStatus, by: String, note: String?, at date: Date) async throws(StoreError) -> Bool
    /// An automatically approved item picked for a person to check (`review.auditSampleRate`).
    func addAuditSample(_ id: ItemID, at date: Date) async throws(StoreError)
    /// Sampled items still approved and not yet checked, oldest first.
    func auditQueue(limit: Int) async throws(StoreError) -> [ItemID]
    /// A person's check of a sampled approval; false when the item is not an unchecked sample.
    func recordAudit(_ id: ItemID, by: String, agreed: Bool, at date: Date) async throws(StoreError) -> Bool
    /// Checked samples and how many of them the person agreed with (the classifier's measured precision).
    func auditStats() async throws(StoreError) -> (audited: Int, agreed: Int)
    /// The owner's appeal of a blocked item; false when the item was appealed before.
    func recordAppeal(_ appeal: Appeal) async throws(StoreError) -> Bool
    /// Appeals of items still in review.
    func openAppeals() async throws(StoreError) -> [ItemID: Appeal]
    // MARK: Relations (seed 003/004) and spam counters

    /// Applies one change (block/unblock, follow/unfollow, privacy, profile) and keeps it as history; false when it
    /// changed nothing (already blocked, not following…).
    func applyRelationChange(_ change: RelationChange, profile: RelationUser?) async throws(StoreError) -> Bool
    func relationUser(_ userId: String) async throws(StoreError) -> RelationUser?
    func isBlocked(blocker: String, blocked: String) async throws(StoreError) -> Bool
    /// What the rules need about a sender and a recipient, in one read.
    func relationFacts(sender: String, recipient: String) async throws(StoreError) -> RelationFacts
    /// Erasure: every relation, history row, message request, spam counter and rate-limit window of the user.
    func eraseRelations(of userId: String) async throws(StoreError)
    /// A user's relation history, oldest first.
    func relationHistory(_ userId: String) async throws(StoreError) -> [RelationChange]
    /// Users blocked by at least `count` others since `date`, with how many, most first.
    func usersBlocked(atLeast count: Int, since date: Date) async throws(StoreError) -> [(userId: String, blocks: Int)]
    /// Writes what the conversation rules counted (message requests, counter amounts, distinct members) in one
    /// transaction and returns each touched slot's total after it, as every writer sees it (several daemons agree).
    func recordMessageTally(_ tally: MessageTally, now: Date) async throws(StoreError) -> [CounterSlot: Int]
    /// In one read: the relations of a sender and a recipient (when `facts`), the totals of `counted` windows, the
    /// members of `distinct` windows, and the members of every distinct window of each of `families` (a slot whose
    /// key is a family: every key `{family}:…` in that window; `CounterIncrement.family`).
    func conversationState(sender: String, recipient: String, facts: Bool, counted: [CounterSlot],
                           distinct: [CounterSlot], families: [CounterSlot]) async throws(StoreError) -> ConversationState
    /// Users whose relations changed after `seq` (nil: none, only where the history stands now), so a reader that
    /// keeps relations in memory knows what to read again; more than `limit` changes make an incomplete feed.
    func relationChanges(after seq: Int64?, limit: Int) async throws(StoreError) -> RelationChangeFeed

    /// Every `review` event (people's decisions), newest first.
    func decisionEvents(limit: Int) async throws(StoreError) -> [ItemEvent]

    // MARK: PDQ hash banks

    /// Creates a bank; false when one of that name exists (nothing changes).
    func createBank(_ bank: HashBank) async throws(StoreError) -> Bool
    /// Every bank with its size, by name.
    func banks() async throws(StoreError) -> [HashBank]
    /// Changes a bank's action, threshold or enabled flag (nil: unchanged); false when there is no such bank.
    func updateBank(_ name: String, action: BankAction?, threshold: Int?, enabled: Bool?) async throws(StoreError) -> Bool
    /// Removes a bank with its hashes and standings; false when there is no such bank.
    func removeBank(_ name: String) async throws(StoreError) -> Bool
    /// Adds hashes to their banks in one transaction; a hash already in its bank is skipped. Returns how many were new.
    func addBankEntries(_ entries: [BankEntry]) async throws(StoreError) -> Int
    /// Hashes in `bank` (nil: every bank) added after `seq`, oldest first, at most `limit`.
    func bankEntries(bank: String?, after seq: Int64, limit: Int) async throws(StoreError) -> [BankEntry]
    /// The banks, flooded hashes' standings, the revision (changes on anything but appended hashes) and the newest hash.
    func bankState() async throws(StoreError) -> BankState
    /// Records that a bank hash is quarantined or confirmed (replacing an earlier standing).
    func setBankHashStanding(_ standing: BankHashStanding) async throws(StoreError)
    /// Approved images with a PDQ hash, changed at or after `since` (nil: all), oldest change first.
    func approvedFingerprints(since: Date?, limit: Int) async throws(StoreError) -> [ApprovedFingerprint]

    // MARK: Threads (approved messages with a conversation; kept by the store whatever changes an item)

    /// The last `limit` messages of a conversation, oldest first.
    func threadMessages(conversationId: String, limit: Int) async throws(StoreError) -> [ThreadMessage]
    /// Messages by number, in the order asked (numbers no longer in a thread are left out).
    func threadMessages(seqs: [Int64]) async throws(StoreError) -> [ThreadMessage]
    /// Whether the user is a member of the conversation (sender, recipient or listed in `members`).
    func isThreadMember(_ userId: String, conversationId: String) async throws(StoreError) -> Bool
    /// The conversation's members.
    func threadMembers(_ conversationId: String) async throws(StoreError) -> [String]
    /// Whether anybody is a member of the conversation (it exists).
    func threadExists(_ conversationId: String) async throws(StoreError) -> Bool
    /// The conversations a user belongs to.
    func conversations(of userId: String) async throws(StoreError) -> [String]
    /// The numbers of the last `perConversation` messages of each conversation: what a search looks at.
    func searchScope(conversations: [String], perConversation: Int) async throws(StoreError) -> [Int64]
    /// FTS5 `match` (an FTS5 query the caller built from the user's words) over the conversations, best first.
    func keywordSearch(_ match: String, conversations: [String], limit: Int) async throws(StoreError) -> [KeywordHit]
    /// Stored vectors of one model for these messages.
    func embeddings(seqs: [Int64], model: String) async throws(StoreError) -> [Int64: [Float]]
    /// Messages without a vector from `model`, oldest first.
    func messagesNeedingEmbedding(model: String, limit: Int) async throws(StoreError) -> [EmbeddingTodo]
    /// Stores vectors; a message that left its thread meanwhile gets none. Returns how many were stored.
    @discardableResult
    func storeEmbeddings(_ vectors: [Int64: [Float]], model: String, at date: Date) async throws(StoreError) -> Int
    /// A cached thread answer (summary, action items, decisions) by its key.
    func threadInsight(key: String) async throws(StoreError) -> String?
    /// Caches an answer made from the messages `seqs`, if they are all still in the thread (false otherwise); a change
    /// to the conversation's messages removes its answers.
    @discardableResult
    func storeThreadInsight(key: String, conversationId: String, seqs: [Int64], body: String, at date: Date) async throws(StoreError) -> Bool

    // MARK: Work leases (several daemons on one store)

    /// Claims a unit of work (`upload:{itemId}`, `text:{file}`) for `owner` until `until`: true when it was free,
    /// its lease had expired (its owner died), or `owner` already holds it. Atomic across processes and hosts.
    func claimWork(_ unit: String, owner: String, until: Date, now: Date) async throws(StoreError) -> Bool
    /// Extends the leases of `units` that `owner` still holds to `until` (the heartbeat); returns how many it holds.
    /// Only those: a lease whose release failed (the store was briefly unreachable) must expire, not be renewed for
    /// as long as the daemon lives.
    @discardableResult
    func renewWork(_ units: [String], owner: String, until: Date) async throws(StoreError) -> Int
    /// Gives a unit up (done, or left for someone else).
    func releaseWork(_ unit: String, owner: String) async throws(StoreError)
    /// Every lease not yet expired: unit → owner.
    func workLeases(now: Date) async throws(StoreError) -> [String: String]
}

extension StatusStore {
    public func prepareChangedVerdicts(_ items: [Item], lineIDs: [ItemID], stage: String) -> PreparedVerdicts {
        PreparedVerdicts(items: items, lineIDs: lineIDs, stage: stage, encoding: nil)
    }


    public func items(status: ItemStatus? = nil, kind: ItemKind? = nil) async throws(StoreError) -> [Item] {
        try await items(status: status, kind: kind, limit: nil)
    }

    @discardableResult
    public func markReceived(_ id: ItemID, kind: ItemKind, userId: String, contentHash: String?,
                             sourceBytes: Int?) async throws(StoreError) -> Item {
        try await markReceived(id, kind: kind, userId: userId, contentHash: contentHash, sourceBytes: sourceBytes, at: Date())
    }

    /// A run in batches of 1,000 items.
    public func beginReprocess(runKey: String, arguments: String, filter: ItemFilter) async throws(StoreError) -> ReprocessRunState {
        try await beginReprocess(runKey: runKey, arguments: arguments, filter: filter, batchSize: 1_000)
    }

    public func recordVerdict(_ item: Item, stage: String? = nil) async throws(StoreError) {
        try await recordVerdict(item, stage: stage, detail: nil)
    }

    public func publishMetrics(source: String, body: String) async throws(StoreError) {
        try await publishMetrics(source: source, body: body, at: Date())
    }
}

/// A batch of verdicts made ready by a store's `prepareChangedVerdicts` (the items as given, and the store's own
/// encoding of their rows, if it makes one).
public struct PreparedVerdicts: Sendable {
    public let items: [Item]
    public let lineIDs: [ItemID]
    public let stage: String
    /// The store's encoding of `items`; only the store that made it reads it.
    public let encoding: (any Sendable)?
    /// The point of the relation history (`RelationChangeFeed.last`) read before the lines were: the items of a user
    /// erased after it are left out, so a line read before an erasure and written after it does not bring the user's
    /// message back. Nil: no such check.
    public var erasuresSeenUpTo: Int64?

    public init(items: [Item], lineIDs: [ItemID], stage: String, encoding: (any Sendable)?, erasuresSeenUpTo: Int64? = nil) {
        self.items = items
        self.lineIDs = lineIDs
        self.stage = stage
        self.encoding = encoding
        self.erasuresSeenUpTo = erasuresSeenUpTo
    }

    /// The batch without the items of `users` (erased) and their line ids, and how many it left out. Its rows are
    /// encoded again by the store that writes it (an erasure during a batch is rare).
    public func without(users: Set<String>) -> (batch: PreparedVerdicts, left: Int) {
        guard !users.isEmpty else { return (self, 0) }
        let kept = items.indices.filter { !users.contains(items[$0].userId) }
        guard kept.count < items.count else { return (self, 0) }
        return (PreparedVerdicts(items: kept.map { items[$0] }, lineIDs: kept.map { lineIDs[$0] }, stage: stage, encoding: nil,
                                 erasuresSeenUpTo: erasuresSeenUpTo), items.count - kept.count)
    }
}

/// What writing a prepared batch did.
public struct RecordedVerdicts: Sendable, Equatable {
    /// Items written (new, or changed since they were stored).
    public var written: Int
    /// Items left out because their user was erased after the batch's `erasuresSeenUpTo`.
    public var erased: Int

    public init(written: Int, erased: Int = 0) {
        self.written = written
        self.erased = erased
    }
}

/// A store operation that failed, naming the operation.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var message: String

    public init(operation: String, underlying: any Error) {
        self.operation = operation
        message = String(describing: underlying)
    }

    public init(operation: String, message: String) {
        self.operation = operation
        self.message = message
    }

    public var description: String { "store: cannot \(operation): \(message)" }
}

/// Filters for selecting items (reprocess, list).
public struct ItemFilter: Sendable, Equatable {
    public var kind: ItemKind?
    public var statuses: [ItemStatus] = []
    public var userId: String?
    public var since: Date?
    public var until: Date?

    public init(kind: ItemKind? = nil, statuses: [ItemStatus] = [], userId: String? = nil, since: Date? = nil, until: Date? = nil) {
        self.kind = kind
        self.statuses = statuses
        self.userId = userId
        self.since = since
        self.until = until
    }
}

public struct ItemCount: Sendable, Equatable {
    public var kind: ItemKind
    public var status: ItemStatus
    public var count: Int

    public init(kind: ItemKind, status: ItemStatus, count: Int) {
        self.kind = kind
        self.status = status
        self.count = count
    }
}

public struct StoredHash: Sendable, Equatable {
    public var hash: String?
    public var status: ItemStatus

    public init(hash: String?, status: ItemStatus) {
        self.hash = hash
        self.status = status
    }
}

/// Progress of a resumable reprocess run.
public struct ReprocessRunState: Sendable, Equatable {
    public var runKey: String
    public var resumed: Bool
    public var total: Int
    public var done: Int

    public init(runKey: String, resumed: Bool, total: Int, done: Int) {
        self.runKey = runKey
        self.resumed = resumed
        self.total = total
        self.done = done
    }
}

/// A text item as reprocessing reads it: kind, status, the message, whether a person decided it, and the
/// stored verdicts as their canonical JSON text (compared against freshly encoded ones instead of decoding).
public struct TextSnapshot: Sendable {
    public var id: ItemID
    public var kind: ItemKind
    public var status: ItemStatus
    public var reason: String?
    public var text: String?
    public var context: String?
    /// When the app said the message was sent (its deadlines count from it, as on intake).
    public var sentAt: Date?
    public var verdictJSON: String?
    public var priorityJSON: String?
    public var humanDecided: Bool
    /// The rules stage's verdict when it blocked, held or marked the message (it stands through reprocessing).
    public var conversation: ConversationVerdict?

    public init(id: ItemID, kind: ItemKind, status: ItemStatus, reason: String?, text: String?, context: String?, sentAt: Date? = nil,
                verdictJSON: String?, priorityJSON: String?, humanDecided: Bool, conversation: ConversationVerdict? = nil) {
        self.conversation = conversation
        self.sentAt = sentAt
        self.id = id
        self.kind = kind
        self.status = status
        self.reason = reason
        self.text = text
        self.context = context
        self.verdictJSON = verdictJSON
        self.priorityJSON = priorityJSON
        self.humanDecided = humanDecided
    }
}

/// One reprocessed item whose verdict changed: the item as it now is, its previous status, the stages that
/// changed it and why (the `reprocess` event).
public struct ReprocessChange: Sendable {
    public var item: Item
    public var from: ItemStatus
    public var stage: String
    public var why: String

    public init(item: Item, from: ItemStatus, stage: String, why: String) {
        self.item = item
        self.from = from
        self.stage = stage
        self.why = why
    }
}

/// A text item's new verdict from reprocessing: only these columns change.
public struct TextUpdate: Sendable {
    public var id: ItemID
    public var from: ItemStatus
    public var status: ItemStatus
    public var reason: String?
    public var verdict: TextVerdict?
    public var priority: PriorityVerdict?
    public var stage: String
    public var why: String

    public init(id: ItemID, from: ItemStatus, status: ItemStatus, reason: String?, verdict: TextVerdict?, priority: PriorityVerdict?,
                stage: String, why: String) {
        self.id = id
        self.from = from
        self.status = status
        self.reason = reason
        self.verdict = verdict
        self.priority = priority
        self.stage = stage
        self.why = why
    }
}

/// A fixed-window counter as the API reports it.
public struct RateLimitState: Sendable, Equatable, Encodable {
    public var current: Int
    public var limit: Int
    public var remaining: Int
    public var resetAt: Date
    public var windowSeconds: Int
    /// False when this request went over the limit (and was not counted).
    public var allowed: Bool

    public init(current: Int, limit: Int, resetAt: Date, windowSeconds: Int, allowed: Bool) {
        self.current = current
        self.limit = limit
        remaining = max(0, limit - current)
        self.resetAt = resetAt
        self.windowSeconds = windowSeconds
        self.allowed = allowed
    }

    enum CodingKeys: String, CodingKey { case current, limit, remaining, resetAt, windowSeconds }
}

/// A process's metrics in Prometheus text format, as it last published them: the daemon and the API are
/// separate processes, and the API's `/metrics` serves both.
public struct MetricsSnapshot: Sendable, Equatable {
    /// `process` or `process@instance` (a daemon publishes as `daemon@host:pid`, so several never overwrite
    /// each other).
    public var source: String
    public var body: String
    public var updatedAt: Date

    public var process: String { String(source.prefix { $0 != "@" }) }
    public var instance: String? { source.firstIndex(of: "@").map { String(source[source.index(after: $0)...]) } }

    /// `process@host:pid` for this process (the host from `gethostname`, never a name lookup).
    public static func source(process: String) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count - 1) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown-host"
        return "\(process)@\(host):\(getpid())"
    }

    public init(source: String, body: String, updatedAt: Date) {
        self.source = source
        self.body = body
        self.updatedAt = updatedAt
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements: how stores bound the parameters of one statement.
    public func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

extension StatusStore {
    /// Adds counts of windows that name no user (`exchangeRateLimitCounts` leaving nothing out); each window's total.
    public func recordRateLimitCounts(_ amounts: [CounterSlot: Int]) async throws(StoreError) -> [CounterSlot: Int] {
        try await exchangeRateLimitCounts(amounts, erasuresSeenUpTo: nil).totals
    }

    /// `relationChanges` up to 5,000 changes.
    public func relationChanges(after seq: Int64?) async throws(StoreError) -> RelationChangeFeed {
        try await relationChanges(after: seq, limit: 5_000)
    }

    /// `conversationState` without families.
    public func conversationState(sender: String, recipient: String, facts: Bool, counted: [CounterSlot],
                                  distinct: [CounterSlot]) async throws(StoreError) -> ConversationState {
        try await conversationState(sender: sender, recipient: recipient, facts: facts, counted: counted, distinct: distinct, families: [])
    }
}
