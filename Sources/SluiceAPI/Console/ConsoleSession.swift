import Foundation
import Hummingbird
import HummingbirdAuth
import SluiceCore

/// What a console session holds: who signed in and the token every form must carry (CSRF).
public struct ConsoleSession: Codable, Sendable, Equatable {
    public var reviewer: String
    public var csrf: String
    public var signedInAt: Date
    /// `ReviewerAccounts.fingerprint` at sign-in: a password reset ends the session.
    public var fingerprint: String

    static func randomToken() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}

/// Hummingbird's session storage on the status store (`keyValue` table), so sessions survive a restart of
/// `sluice serve` and are shared by several API processes; expired sessions are never read back.
struct StorePersistDriver: PersistDriver {
    let store: any StatusStore
    let now: @Sendable () -> Date

    func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        guard try await store.putValue(try JSONEncoder().encode(value), key: key, expiresAt: expiry(expires), onlyIfAbsent: true, now: now()) else {
            throw PersistError.duplicate
        }
    }

    func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        var expiresAt = expiry(expires)
        if expires == nil, let existing = try await store.value(key: key, now: now()) { expiresAt = existing.expiresAt }
        _ = try await store.putValue(try JSONEncoder().encode(value), key: key, expiresAt: expiresAt, onlyIfAbsent: false, now: now())
    }

    func get<Object: Codable & Sendable>(key: String, as: Object.Type) async throws -> Object? {
        try await getWithTTL(key: key, as: Object.self)?.object
    }

    func getWithTTL<Object: Codable & Sendable>(key: String, as: Object.Type) async throws -> (object: Object, ttl: Duration?)? {
        guard let stored = try await store.value(key: key, now: now()) else { return nil }
        guard let object = try? JSONDecoder().decode(Object.self, from: stored.value) else { return nil }
        let ttl = stored.expiresAt.map { Duration.seconds(max(0, $0.timeIntervalSince(now()))) }
        return (object, ttl)
    }

    func remove(key: String) async throws {
        try await store.removeValue(key: key)
    }

    private func expiry(_ expires: Duration?) -> Date? {
        expires.map { now().addingTimeInterval(Double($0.components.seconds)) }
    }
}
