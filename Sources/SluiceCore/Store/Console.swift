import Foundation

/// A person who may sign in to the review console.
public struct Reviewer: Sendable, Equatable, Codable {
    public enum Role: String, Sendable, Codable, CaseIterable {
        case reviewer, admin
    }

    public var name: String
    public var role: Role
    /// bcrypt.
    public var passwordHash: String
    public var disabled: Bool
    /// Show images unblurred by default.
    public var unblurAll: Bool
    public var createdAt: Date

    public init(name: String, role: Role, passwordHash: String, disabled: Bool = false, unblurAll: Bool = false, createdAt: Date = Date()) {
        self.name = name
        self.role = role
        self.passwordHash = passwordHash
        self.disabled = disabled
        self.unblurAll = unblurAll
        self.createdAt = createdAt
    }

    /// Reviewer names: 1–64 of letters, digits, `.`, `_`, `-`, `@`.
    public static func problem(with name: String) -> String? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@")
        guard (1...64).contains(name.count), name.allSatisfy(allowed.contains) else {
            return "reviewer name \"\(Identifiers.printable(name))\" must be 1-64 letters, digits, '.', '_', '-' or '@'"
        }
        return nil
    }
}

/// An item sent up to an admin by a reviewer.
public struct Escalation: Sendable, Equatable, Codable {
    public var itemId: ItemID
    public var by: String
    public var note: String?
    public var at: Date

    public init(itemId: ItemID, by: String, note: String?, at: Date) {
        self.itemId = itemId
        self.by = by
        self.note = note
        self.at = at
    }
}

/// What happened to a report.
public enum ReportStatus: String, Sendable, Codable, CaseIterable {
    case open, resolved, dismissed
}

/// An owner's request to look again at a blocked item.
public struct Appeal: Sendable, Equatable, Codable {
    public var itemId: ItemID
    public var userId: String
    public var message: String
    public var at: Date

    public init(itemId: ItemID, userId: String, message: String, at: Date) {
        self.itemId = itemId
        self.userId = userId
        self.message = message
        self.at = at
    }
}

/// Which automatic approvals a person checks (`review.auditSampleRate`): a deterministic share by item id and
/// content, so the same upload is always in or out of the sample and the rate holds over any large set.
public struct AuditSampler: Sendable {
    public let rate: Double

    public init(rate: Double) { self.rate = rate }

    public func picks(_ id: ItemID, contentHash: String?) -> Bool {
        guard rate > 0 else { return false }
        guard rate < 1 else { return true }
        var hasher = FNV1a()
        hasher.add(id.rawValue)
        hasher.add(contentHash ?? "")
        return Double(hasher.value % 1_000_000) / 1_000_000 < rate
    }

    /// FNV-1a 64: stable across runs and platforms (Swift's Hasher is seeded per process).
    struct FNV1a {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        mutating func add(_ text: String) {
            for byte in text.utf8 {
                value ^= UInt64(byte)
                value = value &* 0x0000_0100_0000_01b3
            }
            value ^= 0xff
        }
    }
}
