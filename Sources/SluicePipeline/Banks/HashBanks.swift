import Foundation
import SluiceCore

/// A change to the hash banks that could not be made, with what was wrong.
public struct BankError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable { case invalid, notFound, conflict }
    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}

/// The operators' side of the hash banks (CLI and API): validated changes through the store, each followed by
/// the matcher re-reading the banks.
public struct HashBanks: Sendable {
    public let store: any StatusStore
    public let matcher: BankMatcher?

    public init(store: any StatusStore, matcher: BankMatcher?) {
        self.store = store
        self.matcher = matcher
    }

    public func create(_ name: String, action: BankAction, threshold: Int = HashBank.defaultThreshold) async throws -> HashBank {
        guard HashBank.isValidName(name) else { throw BankError(.invalid, "bank name \"\(name.prefix(80))\" must be \(HashBank.nameRule)") }
        guard (0...128).contains(threshold) else { throw BankError(.invalid, "threshold \(threshold) must be 0...128 bits of 256 (PDQ's authors use 31)") }
        let bank = HashBank(name: name, action: action, threshold: threshold)
        guard try await store.createBank(bank) else { throw BankError(.conflict, "bank \(name) exists") }
        await matcher?.invalidate()
        return bank
    }

    public func bank(_ name: String) async throws -> HashBank {
        guard let bank = try await store.banks().first(where: { $0.name == name }) else {
            throw BankError(.notFound, "no bank named \"\(name.prefix(80))\" (sluice banks list)")
        }
        return bank
    }

    /// Adds hashes to an existing bank; returns (added, already there).
    public func add(_ hashes: [PDQHash], to name: String, note: String? = nil) async throws -> (added: Int, existing: Int) {
        _ = try await bank(name)
        let now = Date()
        var added = 0
        for chunk in hashes.chunked(10_000) {
            added += try await store.addBankEntries(chunk.map { BankEntry(bank: name, hash: $0, note: note, addedAt: now) })
        }
        await matcher?.invalidate()
        return (added, hashes.count - added)
    }

    /// Parses a hash list (one hash a line, or HMA CSV) and adds it.
    public func importList(_ text: String, to name: String, note: String? = nil) async throws -> (added: Int, existing: Int) {
        let hashes: [PDQHash]
        do { hashes = try BankHashList.parse(text) } catch { throw BankError(.invalid, error.description) }
        return try await add(hashes, to: name, note: note)
    }

    public func setEnabled(_ name: String, _ enabled: Bool) async throws {
        guard try await store.updateBank(name, action: nil, threshold: nil, enabled: enabled) else { throw BankError(.notFound, "no bank named \"\(name)\"") }
        await matcher?.invalidate()
    }

    public func remove(_ name: String) async throws {
        guard try await store.removeBank(name) else { throw BankError(.notFound, "no bank named \"\(name)\"") }
        await matcher?.invalidate()
    }

    /// A person's word that a quarantined (or any) bank hash is right: it acts again and floods no longer stop it.
    public func confirm(_ hash: PDQHash, in name: String, by person: String) async throws {
        _ = try await bank(name)
        guard try await store.bankEntries(bank: name, after: 0, limit: Int.max).contains(where: { $0.hash == hash }) else {
            throw BankError(.notFound, "bank \(name) has no hash \(hash.hex)")
        }
        try await store.setBankHashStanding(BankHashStanding(bank: name, hash: hash, state: .confirmed, detail: "confirmed by \(person)"))
        await matcher?.invalidate()
    }

    /// Every hash of a bank, oldest first.
    public func entries(_ name: String) async throws -> [BankEntry] {
        _ = try await bank(name)
        var all: [BankEntry] = []
        var after: Int64 = 0
        while true {
            let page = try await store.bankEntries(bank: name, after: after, limit: 50_000)
            guard let last = page.last else { return all }
            all += page
            after = last.seq
        }
    }
}
