import Foundation
import SluiceCore

/// Who is calling: a trusted backend (app token, optionally acting for `X-User-Id`) or an end user (JWT).
public enum Principal: Sendable, Equatable {
    case app(actingFor: String?)
    case user(String)

    /// The user a request acts for, if any.
    public var userId: String? {
        switch self {
        case let .app(actingFor): actingFor
        case let .user(id): id
        }
    }

    /// Whether this caller may see an item of `owner`: apps see everything, users only their own. A backend acting for
    /// a user (`X-User-Id`) sees what that user sees: the header is how it asks on a user's behalf, and a request
    /// that needs more leaves it out.
    public func maySee(owner: String) -> Bool {
        switch self {
        case let .app(actingFor): actingFor.map { $0 == owner } ?? true
        case let .user(id): id == owner
        }
    }

    /// Whether this caller may see an approved image of `owner` (its status and its files): with `authenticated`
    /// visibility every signed-in user may (seed 000: all users can read approved images).
    public func maySeeApproved(owner: String, visibility: ImageVisibility) -> Bool {
        visibility == .authenticated || maySee(owner: owner)
    }
}
