import Foundation

/// What a bank does with an upload whose PDQ hash is within its threshold.
public enum BankAction: String, Sendable, Codable, CaseIterable {
    /// Block without asking the classifier (no provider call).
    case block
    /// Send to a person.
    case review
    /// A negative bank: a match here overrides every block and review match, and the image is classified as usual.
    case allow
}

/// A named list of PDQ hashes with the action a match takes.
public struct HashBank: Sendable, Codable, Equatable {
    /// PDQ's authors recommend 31 bits of 256 as the match threshold.
    public static let defaultThreshold = 31
    public static let nameRule = "1–64 characters of a–z, 0–9, '-' and '_'"

    public var name: String
    public var action: BankAction
    public var threshold: Int
    public var enabled: Bool
    public var createdAt: Date
    /// Hashes in the bank (filled by `banks()`).
    public var size: Int

    public init(name: String, action: BankAction, threshold: Int = HashBank.defaultThreshold, enabled: Bool = true,
                createdAt: Date = Date(), size: Int = 0) {
        self.name = name
        self.action = action
        self.threshold = threshold
        self.enabled = enabled
        self.createdAt = createdAt
        self.size = size
    }

    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
    }
}

/// One hash in a bank, as imported or added.
public struct BankEntry: Sendable, Codable, Equatable {
    /// Increasing per store: the order entries were added, so a matcher can load only what is new.
    public var seq: Int64
    public var bank: String
    public var hash: PDQHash
    /// The item whose image this hash came from (automatic additions), or nil (imports).
    public var itemId: String?
    public var note: String?
    public var addedAt: Date

    public init(seq: Int64 = 0, bank: String, hash: PDQHash, itemId: String? = nil, note: String? = nil, addedAt: Date = Date()) {
        self.seq = seq
        self.bank = bank
        self.hash = hash
        self.itemId = itemId
        self.note = note
        self.addedAt = addedAt
    }
}

/// A bank hash's standing after a flood: `quarantined` stops it acting until a person looks; `confirmed` is a
/// person's word that it is right (it acts, and floods no longer quarantine it).
public enum BankHashState: String, Sendable, Codable {
    case quarantined, confirmed
}

public struct BankHashStanding: Sendable, Codable, Equatable {
    public var bank: String
    public var hash: PDQHash
    public var state: BankHashState
    public var at: Date
    public var detail: String?

    public init(bank: String, hash: PDQHash, state: BankHashState, at: Date = Date(), detail: String? = nil) {
        self.bank = bank
        self.hash = hash
        self.state = state
        self.at = at
        self.detail = detail
    }
}

/// Everything a matcher needs besides the hashes: the banks and the standing of flooded hashes, and how far the
/// store has got (`revision` changes on anything but appended hashes; `lastSeq` is the newest hash).
public struct BankState: Sendable, Equatable {
    public var revision: Int64
    public var lastSeq: Int64
    public var banks: [HashBank]
    public var standings: [BankHashStanding]

    public init(revision: Int64 = 0, lastSeq: Int64 = 0, banks: [HashBank] = [], standings: [BankHashStanding] = []) {
        self.revision = revision
        self.lastSeq = lastSeq
        self.banks = banks
        self.standings = standings
    }
}

/// Why an upload matched a bank, as kept on the item (`match` in its JSON).
public struct BankMatch: Sendable, Codable, Equatable {
    public var bank: String
    public var distance: Int
    /// The bank's hash that matched.
    public var hash: PDQHash
    public var action: BankAction
    /// Whether the match decided the verdict; when not, `note` says why (an allow bank, a low-quality hash, a
    /// quarantined hash).
    public var acted: Bool
    public var note: String?

    public init(bank: String, distance: Int, hash: PDQHash, action: BankAction, acted: Bool, note: String? = nil) {
        self.bank = bank
        self.distance = distance
        self.hash = hash
        self.action = action
        self.acted = acted
        self.note = note
    }

    /// The reason a verdict decided by this match carries.
    public var reason: String { "matched bank \(bank) (distance \(distance))" }
}

/// A classification taken over from an approved item with a near-identical image (`vision.reuseWithinDistance`).
public struct ReusedClassification: Sendable, Codable, Equatable {
    public var item: String
    public var distance: Int

    public init(item: String, distance: Int) {
        self.item = item
        self.distance = distance
    }
}

/// An approved image's fingerprint, as the store lists them for reuse.
public struct ApprovedFingerprint: Sendable, Equatable {
    public var id: ItemID
    public var hash: PDQHash
    public var quality: Int
    public var updatedAt: Date

    public init(id: ItemID, hash: PDQHash, quality: Int, updatedAt: Date) {
        self.id = id
        self.hash = hash
        self.quality = quality
        self.updatedAt = updatedAt
    }
}
