import Foundation
import Logging
import Metrics
import SluiceCore

/// What the match stage learned about one image.
public enum BankVerdict: Sendable, Equatable {
    /// No bank acts: classify as usual. `match` is an informational match that did not act (an allow bank's
    /// override, a low-quality hash, a quarantined bank hash), if any.
    case classify(match: BankMatch?)
    /// A block or review bank matched: its action decides, with no provider call.
    case act(BankMatch)
    /// No bank acts, and an approved image within `vision.reuseWithinDistance` lends its classification.
    case reuse(SafeSearch, provider: String?, ReusedClassification)
}

/// Matches images against every enabled bank, from an in-memory index of the store's banks (one per process,
/// shared by every pipeline run): re-read when the store's bank revision changes and topped up with hashes
/// added since, at most every `banks.refreshMilliseconds` (and at once after this process added one). Also
/// the approved images' hashes when `vision.reuseWithinDistance` is set, and the flood counters.
public actor BankMatcher {
    private let store: any StatusStore
    private let config: BanksConfig
    private let reuseWithin: Int?
    private let logger: Logger
    private let quarantines: Counter

    private var index = PDQIndex()
    /// Per index entry: the position of its bank in `banks` (entries of disabled banks are not loaded).
    private var entryBank: [Int16] = []
    private var banks: [HashBank] = []
    private var standings: [BankKey: BankHashState] = [:]
    private var revision: Int64 = -1
    private var lastSeq: Int64 = 0
    private var checkedAt: ContinuousClock.Instant?
    private var stale = true
    private var refreshing: Task<Void, Never>?

    private var approved = PDQIndex()
    private var approvedIDs: [ItemID] = []
    private var approvedSince: Date?
    private var approvedKnown: Set<ApprovedKey> = []

    struct BankKey: Hashable {
        var bank: String
        var hash: PDQHash
    }

    struct ApprovedKey: Hashable {
        var id: ItemID
        var hash: PDQHash
    }

    public init(store: any StatusStore, config: BanksConfig, reuseWithinDistance: Int?, logger: Logger = Logger(label: "sluice.banks")) {
        self.store = store
        self.config = config
        self.reuseWithin = reuseWithinDistance
        self.logger = logger
        quarantines = Counter(label: "sluice_bank_flood_quarantines_total")
    }

    /// Decides for one image. `mayReuse`: whether a stored classification may stand in for a provider call
    /// (new uploads only).
    public func verdict(for fingerprint: PDQFingerprint, mayReuse: Bool, now: Date = Date()) async -> BankVerdict {
        await refreshIfDue()
        let (acting, informational) = bankMatch(fingerprint)
        if var match = acting {
            if let note = await floodNote(for: match, now: now) {
                match.acted = false
                match.note = note
                return .classify(match: match)
            }
            return .act(match)
        }
        if mayReuse, let reuse = await reusable(fingerprint) { return reuse }
        return .classify(match: informational)
    }

    /// The bank matches of a fingerprint as things stand, without counting anything (`sluice banks explain`).
    public func explain(_ fingerprint: PDQFingerprint) async -> [BankMatch] {
        await refreshIfDue()
        var best: [String: BankMatch] = [:]
        forEachMatch(of: fingerprint) { bank, entry, distance in
            guard best[bank.name].map({ distance < $0.distance }) ?? true else { return }
            best[bank.name] = BankMatch(bank: bank.name, distance: distance, hash: index.hashes[entry], action: bank.action, acted: false)
        }
        return best.values.sorted { ($0.distance, $0.bank) < ($1.distance, $1.bank) }
    }

    /// An image was blocked (by the machine or a person): with `banks.autoAddBlocked`, its hash joins the
    /// `banks.autoAddBank` bank (a block bank, created when missing). Hashes under `banks.minQuality` are left out.
    public func imageBlocked(_ item: Item) async {
        guard config.autoAddBlocked, item.kind == .image, item.status == .blocked, let pdq = item.pdq, pdq.quality >= config.minQuality
        else { return }
        if let match = item.match, match.bank == config.autoAddBank, match.distance == 0 { return }
        do {
            _ = try await store.createBank(HashBank(name: config.autoAddBank, action: .block))
            let added = try await store.addBankEntries([BankEntry(bank: config.autoAddBank, hash: pdq.hash, itemId: item.id.rawValue,
                                                                  note: "blocked: \(item.reason ?? "blocked")")])
            if added > 0 { stale = true }
        } catch {
            logger.error("blocked image's hash not added to its bank", metadata: ["item": "\(item.id)", "bank": "\(config.autoAddBank)", "error": "\(error)"])
        }
    }

    /// Forces the next match to re-read the store (after a change made through this process).
    public func invalidate() { stale = true }

    // MARK: - Matching

    /// The deciding match (allow overrides; then block before review, nearest first), and an informational one.
    private func bankMatch(_ fingerprint: PDQFingerprint) -> (acting: BankMatch?, informational: BankMatch?) {
        guard !banks.isEmpty else { return (nil, nil) }
        var nearest: [BankAction: (entry: Int, distance: Int)] = [:]
        forEachMatch(of: fingerprint) { bank, entry, distance in
            if let current = nearest[bank.action], current.distance <= distance { return }
            nearest[bank.action] = (entry, distance)
        }
        func match(_ action: BankAction, acted: Bool, note: String? = nil) -> BankMatch? {
            guard let found = nearest[action] else { return nil }
            let bank = banks[Int(entryBank[found.entry])]
            return BankMatch(bank: bank.name, distance: found.distance, hash: index.hashes[found.entry], action: action, acted: acted, note: note)
        }
        let deciding = match(.block, acted: true) ?? match(.review, acted: true)
        if nearest[.allow] != nil {
            guard let deciding else { return (nil, match(.allow, acted: false, note: "allow bank: no block or review bank matched")) }
            return (nil, match(.allow, acted: true, note: "overrides bank \(deciding.bank) (distance \(deciding.distance))"))
        }
        guard var deciding else { return (nil, nil) }
        if fingerprint.quality < config.minQuality {
            deciding.acted = false
            deciding.note = "hash quality \(fingerprint.quality) is under \(config.minQuality) (banks.minQuality): matches never act"
            return (nil, deciding)
        }
        if standings[BankKey(bank: deciding.bank, hash: deciding.hash)] == .quarantined {
            deciding.acted = false
            deciding.note = "bank hash quarantined after a flood of matches; `\(Self.confirmCommand(deciding))` lets it act again"
            return (nil, deciding)
        }
        return (deciding, nil)
    }

    /// Calls `body(bank, entry, distance)` for every index entry within its bank's threshold of any of the
    /// fingerprint's dihedral hashes (an entry may come more than once).
    private func forEachMatch(of fingerprint: PDQFingerprint, _ body: (HashBank, Int, Int) -> Void) {
        let widest = banks.map(\.threshold).max() ?? -1
        for query in fingerprint.dihedral {
            index.search(query, within: widest) { entry, distance in
                let bank = banks[Int(entryBank[entry])]
                if distance <= bank.threshold { body(bank, entry, distance) }
            }
        }
    }

    /// How a person lets a quarantined bank hash act again.
    private static func confirmCommand(_ match: BankMatch) -> String { "sluice banks confirm \(match.bank) \(match.hash.hex)" }

    /// Counts an acting match; when its bank hash now matches more than `banks.flood.maxMatches` uploads within
    /// the window (and no person confirmed it), quarantines it, alerts, and says why it did not act.
    private func floodNote(for match: BankMatch, now: Date) async -> String? {
        let key = BankKey(bank: match.bank, hash: match.hash)
        if standings[key] == .confirmed { return nil }
        let slot = CounterSlot(key: "bank-match:\(match.bank):\(match.hash.hex)", windowSeconds: config.flood.windowSeconds, at: now)
        let total: Int
        do {
            total = try await store.recordRateLimitCounts([slot: 1])[slot] ?? 1
        } catch {
            logger.error("bank match not counted", metadata: ["bank": "\(match.bank)", "error": "\(error)"])
            return nil
        }
        guard total > config.flood.maxMatches else { return nil }
        let detail = "matched \(total) uploads within \(config.flood.windowSeconds) s (banks.flood.maxMatches \(config.flood.maxMatches))"
        if standings[key] != .quarantined {
            standings[key] = .quarantined
            quarantines.increment()
            logger.critical("bank hash quarantined: it stops acting until a person confirms it",
                            metadata: ["bank": "\(match.bank)", "hash": "\(match.hash.hex)", "detail": "\(detail)",
                                       "confirm": "\(Self.confirmCommand(match))"])
            do {
                try await store.setBankHashStanding(BankHashStanding(bank: match.bank, hash: match.hash, state: .quarantined, at: now, detail: detail))
            } catch {
                logger.error("quarantine not recorded", metadata: ["bank": "\(match.bank)", "error": "\(error)"])
            }
        }
        return "bank hash quarantined: \(detail); `\(Self.confirmCommand(match))` lets it act again"
    }

    /// The nearest approved image within `vision.reuseWithinDistance`, checked against the store (still approved,
    /// still classified).
    private func reusable(_ fingerprint: PDQFingerprint) async -> BankVerdict? {
        guard let within = reuseWithin, fingerprint.quality >= config.minQuality, approved.count > 0 else { return nil }
        guard let found = approved.nearest([fingerprint.hash], within: within) else { return nil }
        let id = approvedIDs[found.entry]
        guard let item = try? await store.item(id), item.status == .approved, let safeSearch = item.safeSearch,
              let pdq = item.pdq, pdq.quality >= config.minQuality, pdq.hash.distance(to: fingerprint.hash) <= within
        else { return nil }
        return .reuse(safeSearch, provider: item.provider, ReusedClassification(item: id.rawValue, distance: found.distance))
    }

    // MARK: - Refresh

    /// Re-reads the banks when due. Matches wait for a refresh in flight (the first one above all: nothing is
    /// matched against banks not yet loaded).
    private func refreshIfDue() async {
        if let refreshing {
            await refreshing.value
            return
        }
        if !stale, let checkedAt, ContinuousClock.now - checkedAt < .milliseconds(config.refreshMilliseconds) { return }
        let task = Task { await self.refresh() }
        refreshing = task
        await task.value
        refreshing = nil
    }

    private func refresh() async {
        checkedAt = ContinuousClock.now
        stale = false
        do {
            let state = try await store.bankState()
            if state.revision != revision {
                try await reload(state)
            } else if state.lastSeq > lastSeq {
                try await append(after: lastSeq)
            }
            if reuseWithin != nil { try await topUpApproved() }
        } catch {
            logger.error("banks not re-read; matching with what was loaded", metadata: ["error": "\(error)"])
        }
    }

    private func reload(_ state: BankState) async throws(StoreError) {
        banks = state.banks.filter(\.enabled)
        standings = Dictionary(state.standings.map { (BankKey(bank: $0.bank, hash: $0.hash), $0.state) }, uniquingKeysWith: { $1 })
        let loaded = try await entries(after: 0)
        index = PDQIndex(loaded.hashes)
        entryBank = loaded.owners
        revision = state.revision
        lastSeq = max(loaded.last, state.lastSeq)
        logger.debug("banks loaded", metadata: ["banks": "\(banks.count)", "hashes": "\(loaded.hashes.count)"])
    }

    private func append(after seq: Int64) async throws(StoreError) {
        let loaded = try await entries(after: seq)
        for hash in loaded.hashes { index.append(hash) }
        entryBank += loaded.owners
        lastSeq = loaded.last
    }

    /// The hashes of enabled banks added after `seq`, read a page at a time, with their bank's position in
    /// `banks`; and the newest seq read (`seq` when there is none).
    private func entries(after seq: Int64) async throws(StoreError) -> (hashes: [PDQHash], owners: [Int16], last: Int64) {
        let position = Dictionary(uniqueKeysWithValues: banks.enumerated().map { ($1.name, Int16($0)) })
        var hashes: [PDQHash] = []
        var owners: [Int16] = []
        var after = seq
        while true {
            let page = try await store.bankEntries(bank: nil, after: after, limit: 50_000)
            for entry in page {
                guard let owner = position[entry.bank] else { continue }
                hashes.append(entry.hash)
                owners.append(owner)
            }
            guard let last = page.last else { return (hashes, owners, after) }
            after = last.seq
        }
    }

    private func topUpApproved() async throws(StoreError) {
        while true {
            let page = try await store.approvedFingerprints(since: approvedSince, limit: 50_000)
            for fingerprint in page where fingerprint.quality >= config.minQuality
                && approvedKnown.insert(ApprovedKey(id: fingerprint.id, hash: fingerprint.hash)).inserted {
                approved.append(fingerprint.hash)
                approvedIDs.append(fingerprint.id)
            }
            // `since` is inclusive: an item changed in the same instant as the last one read is read again next time.
            let previous = approvedSince
            approvedSince = page.last?.updatedAt ?? approvedSince
            guard page.count == 50_000, approvedSince != previous else { return }
        }
    }
}
