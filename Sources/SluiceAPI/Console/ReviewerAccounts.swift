import Foundation
import HummingbirdBcrypt
import NIOPosix
import SluiceCore

/// Reviewer accounts for the console: bcrypt-hashed passwords (HummingbirdBcrypt), roles, disabling.
/// `sluice users …` and the console's sign-in both go through this type.
public struct ReviewerAccounts: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    let store: any StatusStore
    /// bcrypt cost; tests lower it to keep the suite fast.
    let cost: UInt8

    public init(store: any StatusStore, cost: UInt8 = 12) {
        self.store = store
        self.cost = cost
    }

    public static func passwordProblem(_ password: String) -> String? {
        let bytes = password.utf8.count
        if bytes < 10 { return "the password must be at least 10 characters" }
        // bcrypt reads at most 72 bytes; longer passwords would silently share a prefix.
        if bytes > 72 { return "the password must be at most 72 bytes (bcrypt's limit)" }
        return nil
    }

    public func add(_ name: String, role: Reviewer.Role, password: String, at date: Date = Date()) async throws -> Reviewer {
        if let problem = Reviewer.problem(with: name) { throw Failure(message: problem) }
        if let problem = Self.passwordProblem(password) { throw Failure(message: problem) }
        let reviewer = Reviewer(name: name, role: role, passwordHash: try await hash(password), createdAt: date)
        guard try await store.addReviewer(reviewer) else { throw Failure(message: "a reviewer named \(name) already exists") }
        return reviewer
    }

    public func resetPassword(_ name: String, to password: String) async throws {
        if let problem = Self.passwordProblem(password) { throw Failure(message: problem) }
        var reviewer = try await existing(name)
        reviewer.passwordHash = try await hash(password)
        // Sessions carry a fingerprint of the hash they were opened with, so this signs the reviewer out everywhere.
        _ = try await store.updateReviewer(reviewer)
    }

    public func setDisabled(_ name: String, _ disabled: Bool) async throws {
        var reviewer = try await existing(name)
        reviewer.disabled = disabled
        _ = try await store.updateReviewer(reviewer)
    }

    /// The reviewer when the name and password match an enabled account. The same work is done for unknown names,
    /// so timing does not tell which names exist.
    public func verify(_ name: String, password: String) async throws -> Reviewer? {
        guard Reviewer.problem(with: name) == nil, let reviewer = try await store.reviewer(named: name) else {
            _ = try await hash(password)
            return nil
        }
        let hash = reviewer.passwordHash
        guard try await Self.offloaded({ Bcrypt.verify(password, hash: hash) }), !reviewer.disabled else { return nil }
        return reviewer
    }

    private func hash(_ password: String) async throws -> String {
        let cost = cost
        return try await Self.offloaded { Bcrypt.hash(password, cost: cost) }
    }

    /// bcrypt is slow on purpose (a quarter of a second at cost 12): it runs on NIO's pool for blocking work, never
    /// on the threads that serve requests (under `sluice serve` those are the event loops).
    private static func offloaded<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }

    func existing(_ name: String) async throws -> Reviewer {
        guard let reviewer = try await store.reviewer(named: name) else { throw Failure(message: "no reviewer named \(Identifiers.printable(name))") }
        return reviewer
    }

    /// Ties a session to the password it was opened with.
    static func fingerprint(_ reviewer: Reviewer) -> String { String(reviewer.passwordHash.suffix(12)) }
}
