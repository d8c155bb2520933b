import Foundation
import SluiceCore

/// The conversation rules' working memory in one daemon: relations between the pairs of users it has seen, and
/// the spam counters' windows, so that judging a message costs no store round trip. What it counts is written to
/// the store in batches: a write starts at least every `flushInterval` or `flushSize` messages without the judging
/// waiting for it (one at a time), and the text queue waits for every count (`flush`) before it records each verdict
/// batch. The totals the store returns — every daemon's counts — replace its own.
///
/// How far it can be behind the store, by design:
/// - A relation change (block, follow, privacy, profile) reaches it at the next message after `syncInterval`
///   (0.1 s): changes are read from the store's relation history, and only the pairs of the users named are read
///   again. Relations it holds are read again after `factsLifetime` (30 s) in any case.
/// - Erasing a user erases their history but leaves one row in it (`RelationChangeFeed.erasureKind`): at the next
///   sync the ledger forgets everything of theirs it holds, counts not written yet and held texts included, and every
///   write carries the oldest point of the history its counts were made at (a held member keeps its write's point; a
///   read that a sync overtook, its own), so the store leaves out users erased after it. Nothing the ledger counted
///   before it heard of an erasure is written back, however the erasure falls between its reads and writes.
/// - Counters: another daemon's messages in the same window are seen at this daemon's next flush, so a sender
///   spread over several daemons can go over a threshold by what the other daemons counted within one flush
///   interval (and the time their write takes) before a signal fires. A message request sent through another
///   daemon is seen when this daemon next reads that pair (a sender can get one request through per daemon, at
///   most, in that time).
/// - A text sent once (a distinct window of a family, such as `spam.duplicates`, whose one member is this daemon's)
///   is not written: the write only reads whether another daemon has members in that window (then it is written).
///   It is written once a second member is counted, when the daemon stops (`flush(final: true)`), or when more than
///   `maxHeld` are held. Until then other daemons do not see it: a text can reach one recipient more per other
///   daemon before the duplicates signal fires, and a daemon killed with `kill -9` loses the ones it held (a text
///   then counts one recipient less in that window). A held member is dropped a window's length after its window
///   ends (a line dated that far behind the newest one counted counts that text one recipient short); a text of a
///   window already that far behind is written, not held.
public actor ConversationLedger {
    public struct Timing: Sendable {
        public var syncInterval: Duration = .milliseconds(100)
        public var flushInterval: Duration = .milliseconds(250)
        /// A write is started after this many messages (if `flushInterval` has not passed first). A text queue also
        /// writes every count at each batch of 2,000 lines, so that is where it writes; a write every 512 messages
        /// cost ~10% of the time of lines with recipients in commits and counter pages written again.
        public var flushSize = 8_192
        public var factsLifetime: Duration = .seconds(30)
        public var maxPairs = 200_000
        public var maxSlots = 200_000
        /// At most this many windows read at once.
        public var maxPrefetch = 2_000
        /// Texts sent once whose one member is held unwritten (see above); past this many, all of them are written.
        public var maxHeld = 50_000

        public init() {}
    }

    struct Pair: Hashable {
        var sender: String
        var recipient: String
    }

    struct CachedFacts {
        var facts: RelationFacts
        var readAt: ContinuousClock.Instant
    }

    /// Counters of one kind share window boundaries.
    struct WindowKind: Hashable {
        var seconds: Int
        var distinct: Bool
    }

    struct RecentWindow {
        var kind: WindowKind
        var start: Int
        /// The slots counted in the window (each hashed once, when made).
        var keys: Set<CounterSlot> = []
        /// Counter families counted in the window (read along as families when the next window begins).
        var families: Set<CounterSlot> = []
    }

    struct HeldMember {
        var member: String
        /// When it is dropped, never written (seconds since 1970): a window's length after its window ends.
        var dropAt: Int
        /// The relation feed's point of the write that held it (`MessageTally.erasuresSeenUpTo`): the write it goes
        /// with leaves out users erased after that, whatever syncs came between.
        var erasuresSeenUpTo: Int64?

        init(member: String, slot: CounterSlot, end: Int, erasuresSeenUpTo: Int64?) {
            self.member = member
            dropAt = end + (end - slot.windowStart)
            self.erasuresSeenUpTo = erasuresSeenUpTo
        }
    }

    struct Slot {
        /// The total as last known: the store's after the last flush plus what this daemon added since.
        var total: Int
        /// For distinct counters: the members known in the window (the store's when first read, and those added here).
        var members: Set<String>?
        /// When the window ends (seconds since 1970), so ended windows can be forgotten.
        var end: Int
        /// In its kind's newest window's keys (`RecentWindow.keys`) already: listed once, not at every message.
        var listed = false
    }

    let store: any StatusStore
    let timing: Timing
    let clock = ContinuousClock()
    private var pairs: [Pair: CachedFacts] = [:]
    private var slots: [CounterSlot: Slot] = [:]
    /// The newest window of each kind and the keys counted in it, to read the next window of the busy ones at once.
    private var windows: [RecentWindow] = []
    /// Counter families whose window was read from the store (`CounterIncrement.family`), with the window's end: every
    /// key of theirs the store had then is in `slots`.
    private var loadedFamilies: [CounterSlot: Int] = [:]
    private var pending = MessageTally()
    /// Distinct windows of a family whose only member (this daemon's, in `slots` too) the store was asked about and
    /// does not have: written once another member is counted, at a final flush, or when there are too many.
    private var held: [CounterSlot: HeldMember] = [:]
    /// The soonest `dropAt` of the held members: they are looked through only once the newest window counted reaches
    /// it (looking through them whenever the newest window moved cost as much as the rest of the ledger).
    private var heldDropAt = Int.max
    /// How many windows were left when ended ones were last dropped.
    private var slotsAfterForgetting = 0
    private var pendingMessages = 0
    private var lastChange: Int64?
    private var lastSync: ContinuousClock.Instant?
    private var lastFlush: ContinuousClock.Instant
    /// The write under way, if one is (started by `countMessage` without waiting for it, or by `flush`).
    private var writing: Task<StoreError?, Never>?
    /// The last write failed.
    private var writeFailed = false
    private var latest = 0

    public init(store: any StatusStore, timing: Timing = Timing()) {
        self.store = store
        self.timing = timing
        lastFlush = clock.now
    }

    /// One message through the rules' memory: the relations (read from the store only when not held or changed),
    /// seed 003's permission, a message request when it is one, and — when it may be delivered — every counter it
    /// adds to, with their values after it (nil where a counter did not apply).
    /// `replayed`: the message is already recorded (read again after a crash): nothing is added.
    /// `readAt`: the relation history's point read before the message's queue file was; the write that takes its
    /// counts leaves out users erased after it (a sync since may have forgotten the sender, erased after the file was
    /// read, and this would count them again).
    public func countMessage(sender: String, recipient: String, itemId: ItemID, requestLimit: Int, counters: [CounterIncrement],
                             now: Date, replayed: Bool = false, readAt point: Int64? = nil) async throws(StoreError) -> MessageCounts {
        try await syncIfDue()
        let pair = Pair(sender: sender, recipient: recipient)
        let readAt = clock.now
        let cached = pairs[pair].flatMap { readAt - $0.readAt < timing.factsLifetime ? $0.facts : nil }
        // Windows this daemon has not counted in yet start from the store's totals, read with the relations. When a
        // new window begins, the same window of every counter of that kind that was counted in the window before is
        // read along (a new minute is read once for every busy sender, not once per sender).
        var counted: [CounterSlot] = []
        var distinct: [CounterSlot] = []
        // Families of keys (a sender's texts) read at once, with the end of their window; keys of theirs held for the read.
        var families: [CounterSlot: Int] = [:]
        var familyKeys: [CounterSlot] = []
        // Whether a counter applies to a sender created then: one of an account's first hours does not to an older
        // sender, or one of unknown age.
        func applies(_ counter: CounterIncrement, senderCreatedAt: Date?) -> Bool {
            guard let maxAge = counter.maxSenderAge else { return true }
            guard let senderCreatedAt else { return false }
            let age = now.timeIntervalSince(senderCreatedAt)
            return age >= 0 && age < maxAge
        }
        // Each counter's slot, made (and hashed) once for the message. A counter that does not apply to a sender whose
        // relations are held is neither read nor counted (it is not counted below in any case).
        var made = [CounterSlot?](repeating: nil, count: counters.count)
        for (index, counter) in counters.enumerated() where cached.map({ applies(counter, senderCreatedAt: $0.senderCreatedAt) }) ?? true {
            let slot = CounterSlot(counter, at: now)
            made[index] = slot
            let kind = WindowKind(seconds: counter.windowSeconds, distinct: counter.member != nil)
            let family = kind.distinct ? counter.family.map { CounterSlot(key: $0, windowStart: slot.windowStart) } : nil
            // Changed in place in its list (a handful of kinds), so its set of keys is not copied for every key added
            // (a copy per new key made a window of n distinct texts cost n² copies).
            let at: Int
            if let found = windows.firstIndex(where: { $0.kind == kind }) {
                at = found
            } else {
                at = windows.count
                windows.append(RecentWindow(kind: kind, start: slot.windowStart))
            }
            if slot.windowStart > windows[at].start {
                let recent = windows[at]
                // The first message of a new window: read the busy counters' new windows along with this one.
                for busy in recent.keys.prefix(timing.maxPrefetch) where busy.key != slot.key {
                    let sibling = CounterSlot(key: busy.key, windowStart: slot.windowStart)
                    guard slots[sibling] == nil else { continue }
                    if kind.distinct { distinct.append(sibling) } else { counted.append(sibling) }
                    slots[sibling] = Slot(total: 0, members: kind.distinct ? [] : nil, end: sibling.windowStart + kind.seconds)
                }
                for busy in recent.families.prefix(timing.maxPrefetch) {
                    let sibling = CounterSlot(key: busy.key, windowStart: slot.windowStart)
                    if loadedFamilies[sibling] == nil { families[sibling] = slot.windowStart + kind.seconds }
                }
                windows[at] = RecentWindow(kind: kind, start: slot.windowStart)
            }
            // A family's keys are read with their family, not one by one; other keys are listed once in their window.
            let newest = slot.windowStart == windows[at].start
            let listing = newest && family == nil
            if let family, newest { windows[at].families.insert(family) }
            if let known = slots[slot] {
                if listing, !known.listed {
                    windows[at].keys.insert(slot)
                    slots[slot]?.listed = true
                }
                continue
            }
            if listing { windows[at].keys.insert(slot) }
            slots[slot] = Slot(total: 0, members: kind.distinct ? [] : nil, end: slot.windowStart + kind.seconds, listed: listing)
            if let family {
                // Once its family is read, a key new here is new to the store as of that read: it starts from nothing
                // (what other daemons count in it after that comes back with this daemon's next write).
                familyKeys.append(slot)
                if loadedFamilies[family] == nil { families[family] = slot.windowStart + kind.seconds }
            } else if kind.distinct {
                distinct.append(slot)
            } else {
                counted.append(slot)
            }
        }
        var facts: RelationFacts
        if let cached, counted.isEmpty, distinct.isEmpty, families.isEmpty {
            facts = cached
        } else {
            let state: ConversationState
            let point = lastChange
            do {
                state = try await store.conversationState(sender: sender, recipient: recipient, facts: cached == nil, counted: counted,
                                                          distinct: distinct, families: Array(families.keys))
            } catch {
                for slot in counted + distinct + familyKeys where slots[slot]?.total == 0 && slots[slot]?.members?.isEmpty ?? true {
                    slots[slot] = nil
                }
                throw error
            }
            // Another message's sync during the read may have forgotten a user erased meanwhile whom this message
            // counts: the next write leaves out users erased after the point the read began at.
            let synced = lastChange != point
            if synced, let point { pending.erasuresSeenUpTo = min(pending.erasuresSeenUpTo ?? point, point) }
            // The windows read start from the store's count, under what was counted here while it was read.
            for slot in counted {
                slots[slot]?.total += state.totals[slot] ?? 0
            }
            for slot in distinct {
                absorb(state.members[slot] ?? [], into: slot)
            }
            for (family, end) in families {
                for (slot, members) in state.members where family.holds(slot) {
                    absorb(members, into: slot, endingAt: end)
                }
                loadedFamilies[family] = end
            }
            if let cached {
                facts = cached
            } else {
                facts = state.facts ?? RelationFacts()
                if pairs.count >= timing.maxPairs { pairs.removeAll(keepingCapacity: true) }
                pairs[pair] = CachedFacts(facts: facts, readAt: readAt)
            }
        }
        // A request already counted for this very message (read before a crash, or its id sent again) is not a second
        // request: the rules are decided without it (blocks and follows apply as for any message).
        let ownRequest = facts.requestItems.contains(itemId.rawValue)
        var deciding = facts
        deciding.requestItems.removeAll { $0 == itemId.rawValue }
        let permission = MessagingPermission.decide(deciding, requestLimit: requestLimit)
        guard permission.allowed else { return MessageCounts(facts: facts, permission: permission, counters: counters.map { _ in nil }) }
        // In the same turn as its counts go into `pending` (no wait between), so the write that takes them has the bound.
        if !replayed, let point { pending.erasuresSeenUpTo = min(pending.erasuresSeenUpTo ?? point, point) }
        if permission.kind == .request, !ownRequest, !replayed {
            facts.requestItems.append(itemId.rawValue)
            pairs[pair]?.facts = facts
            pending.requests.append(MessageTally.Request(sender: sender, recipient: recipient, itemId: itemId.rawValue))
        }
        var values: [Int?] = []
        values.reserveCapacity(counters.count)
        for (index, counter) in counters.enumerated() {
            guard applies(counter, senderCreatedAt: facts.senderCreatedAt) else { values.append(nil); continue }
            let slot = made[index] ?? CounterSlot(counter, at: now)
            // Recorded already with this text (a replay): its counters were written when it was first read, so they
            // are read, not added to again.
            values.append(replayed ? slots[slot]?.total : add(counter, in: slot))
        }
        if replayed { return MessageCounts(facts: facts, permission: permission, counters: values) }
        pendingMessages += 1
        if pendingMessages >= timing.flushSize || clock.now - lastFlush >= timing.flushInterval {
            // After a write that failed, the next is waited for, so its error reaches a message (held for review).
            if writeFailed { try await flush(now: now) } else { startWrite(now: now) }
        }
        return MessageCounts(facts: facts, permission: permission, counters: values)
    }

    /// Writes what was counted since the last write in one store transaction and takes the store's totals, after the
    /// write under way (if one is). On failure nothing is lost: the counts stay to be written with the next flush.
    /// `final` (the daemon stops): the texts sent once that are held unwritten are written too.
    public func flush(now: Date = Date(), final: Bool = false) async throws(StoreError) {
        while let writing { _ = await writing.value }
        if final {
            dropEndedHeld()
            releaseHeld()
        }
        lastFlush = clock.now
        pendingMessages = 0
        guard !pending.isEmpty else { return }
        let written = pending
        pending = MessageTally()
        if let error = await begin(written, now: now).value { throw error }
    }

    /// Starts writing what was counted without waiting for it: the judging goes on while the store's writer is busy
    /// (a text queue's writer commits the batch before meanwhile; waiting for it stalled the judging by ~28%). While a
    /// write is under way, the counts gather for the next.
    private func startWrite(now: Date) {
        guard writing == nil else { return }
        lastFlush = clock.now
        pendingMessages = 0
        guard !pending.isEmpty else { return }
        let written = pending
        pending = MessageTally()
        _ = begin(written, now: now)
    }

    /// The write of `written` as the one under way (there is never more than one, so the totals each brings back
    /// are over every count written before); its error, if it failed.
    private func begin(_ counted: MessageTally, now: Date) -> Task<StoreError?, Never> {
        // Users erased up to the last sync are out of these counts already, and the store leaves out those erased
        // after it (after an older point, for counts of a failed write merged back in, which no sync looked through).
        var written = counted
        if let lastChange { written.erasuresSeenUpTo = min(counted.erasuresSeenUpTo ?? lastChange, lastChange) }
        let task = Task { () -> StoreError? in
            defer { self.writing = nil }
            do throws(StoreError) {
                try await self.write(written, now: now)
                self.writeFailed = false
                return nil
            } catch {
                self.writeFailed = true
                return error
            }
        }
        writing = task
        return task
    }

    /// One write of `written`; the store's totals (every daemon's counts) replace this daemon's, under what was counted
    /// here since. On failure the counts go back to the pending ones.
    private func write(_ written: MessageTally, now: Date) async throws(StoreError) {
        let totals: [CounterSlot: Int]
        do {
            totals = try await store.recordMessageTally(written, now: now)
        } catch {
            var again = written
            again.merge(pending)
            pending = again
            throw error
        }
        for (slot, total) in totals {
            if let member = written.singletons[slot], total == 0 {
                // The store has no member in this window: it stays this daemon's alone, unless a second member was
                // counted while the write was under way (that one is pending; this one goes with it).
                // (A window no longer in memory, only when more than `maxSlots` were, has its member written, not lost;
                // so does one already due to be dropped, a line of a window far behind the newest: held, it would be
                // dropped at once, and each of its text's recipients after it would count from one again.)
                let kept = slots[slot].map { HeldMember(member: member, slot: slot, end: $0.end, erasuresSeenUpTo: written.erasuresSeenUpTo) }
                if pending.members[slot] == nil, let kept, kept.dropAt > latest {
                    held[slot] = kept
                    heldDropAt = min(heldDropAt, kept.dropAt)
                } else {
                    putBack(member, of: slot, seenUpTo: written.erasuresSeenUpTo)
                }
                continue
            }
            // What was added while the write was under way is on top of the store's total.
            let since = pending.amounts[slot] ?? pending.members[slot]?.count ?? (pending.singletons[slot] == nil ? 0 : 1)
            slots[slot]?.total = total + since
        }
        dropEndedHeld()
        if held.count > timing.maxHeld { releaseHeld() }
        forgetEndedWindows()
    }

    /// Held members of windows that ended a whole window's length before the newest window counted are dropped, not
    /// written, and their windows with them: a line dated that far behind the newest (`sentAt` is the app's word, and
    /// files are read one after another) starts that window again from the store, which never had the member, so the
    /// text counts one recipient short there, as after `kill -9`. Lines less out of order than that count in full.
    private func dropEndedHeld() {
        guard latest >= heldDropAt else { return }
        var dropped: [CounterSlot] = []
        var soonest = Int.max
        held = held.filter { slot, held in
            let kept = held.dropAt > latest
            if kept { soonest = min(soonest, held.dropAt) } else { dropped.append(slot) }
            return kept
        }
        heldDropAt = soonest
        for slot in dropped { slots[slot] = nil }
    }

    /// Every held member goes with the next write.
    private func releaseHeld() {
        for (slot, held) in held { putBack(held.member, of: slot, seenUpTo: held.erasuresSeenUpTo) }
        for (slot, member) in pending.singletons { pending.members[slot, default: []].insert(member) }
        held.removeAll()
        heldDropAt = .max
        pending.singletons.removeAll()
    }

    /// A member counted by an earlier write (held, or the store's answer came after newer counts) goes with the next
    /// write, which leaves out users erased after that earlier write's point: syncs since then did not see it.
    private func putBack(_ member: String, of slot: CounterSlot, seenUpTo point: Int64?) {
        pending.members[slot, default: []].insert(member)
        if let point { pending.erasuresSeenUpTo = min(pending.erasuresSeenUpTo ?? point, point) }
    }

    /// Members the store has in a distinct window, joined to what this daemon counted in it; a window not held is
    /// added (ending at `end`) when `end` is given, and left out otherwise.
    private func absorb(_ members: Set<String>, into slot: CounterSlot, endingAt end: Int? = nil) {
        guard var known = slots.removeValue(forKey: slot) ?? end.map({ Slot(total: 0, members: [], end: $0) }) else { return }
        known.members = (known.members ?? []).union(members)
        known.total = known.members?.count ?? 0
        slots[slot] = known
        // Another daemon has members there too: a member held here is no longer the window's only one.
        if !members.isEmpty, let single = held.removeValue(forKey: slot) { putBack(single.member, of: slot, seenUpTo: single.erasuresSeenUpTo) }
    }

    /// Adds one counter's part of a message to its window and returns the window's total.
    private func add(_ counter: CounterIncrement, in key: CounterSlot) -> Int {
        latest = max(latest, key.windowStart)
        // Changed in place in the table (one look-up, and its members are not copied for every member added).
        let (total, added) = Self.count(counter, in: &slots[key, default: Slot(total: 0, members: counter.member == nil ? nil : [],
                                                                             end: key.windowStart + counter.windowSeconds)])
        if let member = counter.member {
            if added {
                if counter.family != nil, total == 1 {
                    // The window's only member as far as this daemon knows: asked about, not written.
                    pending.singletons[key] = member
                } else {
                    // A member held (or still to be asked about) goes with the second one.
                    if let first = held.removeValue(forKey: key) {
                        putBack(first.member, of: key, seenUpTo: first.erasuresSeenUpTo)
                    } else if let first = pending.singletons.removeValue(forKey: key) {
                        pending.members[key, default: []].insert(first)
                    }
                    pending.members[key, default: []].insert(member)
                }
            }
        } else {
            pending.amounts[key, default: 0] += counter.amount
        }
        return total
    }

    /// One counter's part of a message added to its window: the window's total after it, and whether a distinct
    /// counter's member is new there.
    private static func count(_ counter: CounterIncrement, in slot: inout Slot) -> (total: Int, added: Bool) {
        guard let member = counter.member else {
            slot.total += counter.amount
            return (slot.total, false)
        }
        guard slot.members?.insert(member).inserted ?? false else { return (slot.total, false) }
        slot.total += 1
        return (slot.total, true)
    }

    /// Reads the users whose relations changed since the last look and forgets their pairs (all pairs when the
    /// history moved on by more than one read returns).
    private func syncIfDue() async throws(StoreError) {
        let now = clock.now
        if let lastSync, now - lastSync < timing.syncInterval { return }
        let feed = try await store.relationChanges(after: lastChange)
        lastSync = now
        if lastChange != nil {
            if !feed.complete {
                pairs.removeAll(keepingCapacity: true)
            } else if !feed.users.isEmpty {
                pairs = pairs.filter { !feed.users.contains($0.key.sender) && !feed.users.contains($0.key.recipient) }
            }
            forget(feed.erased)
        }
        lastChange = feed.last
    }

    /// Everything held of users erased meanwhile: what they counted or were counted in and is not written yet (the
    /// store erased what was), held texts, and their windows, counted from the store again if they send once more.
    /// (A write under way, or one whose counts were made before this, leaves them out in the store:
    /// `MessageTally.erasuresSeenUpTo`.)
    private func forget(_ users: Set<String>) {
        guard !users.isEmpty else { return }
        pending = pending.without(users: users)
        held = held.filter { !$0.key.names(any: users) && !users.contains($0.value.member) }
        loadedFamilies = loadedFamilies.filter { !$0.key.names(any: users) }
        for index in windows.indices {
            windows[index].keys = windows[index].keys.filter { !$0.names(any: users) }
            windows[index].families = windows[index].families.filter { !$0.names(any: users) }
        }
        slots = slots.filter { !$0.key.names(any: users) }.mapValues { slot in
            guard var members = slot.members, !members.isDisjoint(with: users) else { return slot }
            let removed = members.intersection(users).count
            members.subtract(users)
            // The total is the store's (other daemons' members too), less the members erased.
            return Slot(total: max(0, slot.total - removed), members: members, end: slot.end, listed: slot.listed)
        }
    }

    /// Windows that ended before the newest one counted (and have nothing left to write) are dropped whenever the
    /// table has doubled since this last ran (a text sent once is a window of its own: without this they piled up
    /// to `maxSlots`, and every look-up paid for the table's size); when there are still more than `maxSlots`,
    /// every written window goes and is counted from the store's totals again.
    private func forgetEndedWindows() {
        guard slots.count > min(timing.maxSlots, max(4_096, 2 * slotsAfterForgetting)) else { return }
        defer { slotsAfterForgetting = slots.count }
        // Held members are still this daemon's to write (those of windows long ended go first).
        dropEndedHeld()
        let waiting = pending.slots.union(held.keys)
        slots = slots.filter { $0.value.end > latest || waiting.contains($0.key) }
        loadedFamilies = loadedFamilies.filter { $0.value > latest }
        if slots.count > timing.maxSlots {
            slots = slots.filter { waiting.contains($0.key) }
            // Their keys are no longer all held: a family is read again.
            loadedFamilies.removeAll()
        }
    }
}
