import Foundation
import Hummingbird
import NIOCore
import SluiceCore
import SluicePipeline

/// Relations for messaging rules (seed 003/004), as callables for apps and REST for backends:
/// blockUser / unblockUser / isBlocked, follow / unfollow, setMessagePrivacy, canMessage.
struct RelationRoutes {
    let services: APIServices
    let now: @Sendable () -> Date

    var relations: Relations { services.relations }

    // MARK: Callables (registered by CallableRoutes)

    /// `{userId}` (the other user; the caller acts) or seed 004's `{blockerID, blockedID, conversationID?}`.
    struct PairArguments: CallableArguments {
        var userId: String?
        var blockerID: String?
        var blockedID: String?
        var conversationID: String?

        static func problem(with field: String) -> String { "data.\(field) must be a user id (1-128 letters, digits, '_' or '-')" }

        /// Who acts on whom: the caller (a user, or the user a backend acts for) unless a backend names the actor.
        func pair(_ context: APIContext) throws -> (actor: String, other: String) {
            let other = blockedID ?? userId
            guard let other else { throw APIError(.invalidArgument, "data.userId (or data.blockedID) is required") }
            for (field, value) in [("userId", userId), ("blockerID", blockerID), ("blockedID", blockedID), ("conversationID", conversationID)] {
                if let value, !Identifiers.isValidSegment(value) { throw APIError(.invalidArgument, Self.problem(with: field)) }
            }
            let caller = context.principal?.userId
            if let blockerID {
                if case .user? = context.principal, blockerID != caller {
                    throw APIError(.permissionDenied, "data.blockerID must be the signed-in user")
                }
                if let caller, blockerID != caller {
                    throw APIError(.permissionDenied, "X-User-Id (\(caller)) and data.blockerID (\(blockerID)) name different users; send one of them")
                }
                return (blockerID, other)
            }
            guard let caller else { throw APIError(.unauthenticated, "no user: send X-User-Id with the app token, or a user token") }
            return (caller, other)
        }
    }

    struct PrivacyArguments: CallableArguments {
        var messagePrivacy: String
        static func problem(with field: String) -> String { "data.messagePrivacy must be anyone or followers" }
    }

    struct CanMessageArguments: CallableArguments {
        var recipientId: String
        static func problem(with field: String) -> String { "data.recipientId must be a user id" }
    }

    struct Done: Encodable {
        var success = true
        var changed: Bool
    }

    func blockUser(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let (actor, other) = try PairArguments.decode(body).pair(context)
        let changed = try await run { try await relations.block(actor, other, on: true, at: now()) }
        return try context.json(CallableResult(result: Done(changed: changed)))
    }

    func unblockUser(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let (actor, other) = try PairArguments.decode(body).pair(context)
        let changed = try await run { try await relations.block(actor, other, on: false, at: now()) }
        return try context.json(CallableResult(result: Done(changed: changed)))
    }

    /// Seed 004: returns a Bool.
    func isBlocked(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let (actor, other) = try PairArguments.decode(body).pair(context)
        let blocked = try await run { try await relations.isBlocked(actor, other) }
        return try context.json(CallableResult(result: blocked))
    }

    func follow(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let (actor, other) = try PairArguments.decode(body).pair(context)
        let changed = try await run { try await relations.follow(actor, other, on: true, at: now()) }
        return try context.json(CallableResult(result: Done(changed: changed)))
    }

    func unfollow(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let (actor, other) = try PairArguments.decode(body).pair(context)
        let changed = try await run { try await relations.follow(actor, other, on: false, at: now()) }
        return try context.json(CallableResult(result: Done(changed: changed)))
    }

    func setMessagePrivacy(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let arguments = try PrivacyArguments.decode(body)
        guard let privacy = MessagePrivacy(rawValue: arguments.messagePrivacy) else {
            throw APIError(.invalidArgument, PrivacyArguments.problem(with: "messagePrivacy"))
        }
        guard let user = context.principal?.userId else { throw APIError(.unauthenticated, "no user: send X-User-Id with the app token, or a user token") }
        let changed = try await run { try await relations.setPrivacy(user, privacy, at: now()) }
        return try context.json(CallableResult(result: Done(changed: changed)))
    }

    func canMessage(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let arguments = try CanMessageArguments.decode(body)
        guard let user = context.principal?.userId else { throw APIError(.unauthenticated, "no user: send X-User-Id with the app token, or a user token") }
        let permission = try await run { try await relations.canMessage(user, arguments.recipientId) }
        return try context.json(CallableResult(result: permission))
    }

    private func run<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let failure as Relations.Failure {
            throw APIError(failure.isSelf ? .failedPrecondition : .invalidArgument, failure.message)
        }
    }

    // MARK: REST for backends (app tokens)

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.get("/v1/users/:userId/blocks/:otherId", use: { request, context in try await self.pairState(request, context, kind: .block) })
        routes.put("/v1/users/:userId/blocks/:otherId", use: { request, context in try await self.pairChange(request, context, kind: .block, on: true) })
        routes.delete("/v1/users/:userId/blocks/:otherId", use: { request, context in try await self.pairChange(request, context, kind: .block, on: false) })
        routes.put("/v1/users/:userId/follows/:otherId", use: { request, context in try await self.pairChange(request, context, kind: .follow, on: true) })
        routes.delete("/v1/users/:userId/follows/:otherId", use: { request, context in try await self.pairChange(request, context, kind: .follow, on: false) })
        routes.put("/v1/users/:userId/profile", use: profile)
        routes.get("/v1/users/:userId/can-message/:otherId", use: canMessageREST)
        return routes
    }

    struct PairState: Encodable {
        var userId: String
        var otherId: String
        var blocked: Bool?
        var following: Bool?
        var changed: Bool?
    }

    private func ids(_ context: APIContext) throws -> (String, String) {
        _ = try ItemRoutes.backend(context, for: "read or change another user's blocks and follows")
        let user = try context.pathParameter("userId")
        let other = try context.pathParameter("otherId")
        try APIValidation.segment(user, "userId")
        try APIValidation.segment(other, "otherId")
        _ = try ItemRoutes.backend(context, for: "read or change the blocks and follows", owner: user)
        return (user, other)
    }

    func pairState(_ request: Request, _ context: APIContext, kind: RelationChange.Kind) async throws -> Response {
        let (user, other) = try ids(context)
        let blocked = try await run { try await relations.isBlocked(user, other) }
        return try context.json(PairState(userId: user, otherId: other, blocked: blocked))
    }

    func pairChange(_ request: Request, _ context: APIContext, kind: RelationChange.Kind, on: Bool) async throws -> Response {
        let (user, other) = try ids(context)
        let changed = try await run {
            kind == .block ? try await relations.block(user, other, on: on, at: now()) : try await relations.follow(user, other, on: on, at: now())
        }
        return try context.json(kind == .block ? PairState(userId: user, otherId: other, blocked: on, changed: changed)
                                              : PairState(userId: user, otherId: other, following: on, changed: changed))
    }

    /// `createdAt` in Unix seconds (what an app's user record usually keeps); absent or null fields stay.
    struct ProfileBody: Decodable {
        var messagePrivacy: String?
        var createdAt: Double?
        var trusted: Bool?
    }

    func profile(_ request: Request, context: APIContext) async throws -> Response {
        _ = try ItemRoutes.backend(context, for: "set a user's profile")
        let user = try context.pathParameter("userId")
        try APIValidation.segment(user, "userId")
        _ = try ItemRoutes.backend(context, for: "set the profile", owner: user)
        let body = try await request.body.collect(upTo: 64 * 1024)
        let shape = "body must be {\"messagePrivacy\"?: \"anyone\" | \"followers\", \"createdAt\"?: Unix seconds, \"trusted\"?: boolean}"
        guard let fields = try? JSONDecoder().decode(ProfileBody.self, from: body) else { throw APIError(.invalidArgument, shape) }
        // A key it does not know (a typo such as "trustd") is refused, not ignored with a 200.
        let keys = ((try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any])?.keys.sorted() ?? []
        if let unknown = keys.first(where: { !["messagePrivacy", "createdAt", "trusted"].contains($0) }) {
            throw APIError(.invalidArgument, "unknown field \(Identifiers.printable(unknown)): \(shape)")
        }
        // A user's own privacy may be set on their behalf; whether they are a trusted reporter and how old their
        // account is are the backend's facts about them (a user made trusted counts twice towards auto-review).
        if fields.trusted != nil || fields.createdAt != nil {
            _ = try ItemRoutes.backendItself(context, for: "set trusted or createdAt")
        }
        var profile = try await services.store.relationUser(user) ?? RelationUser(userId: user)
        if let raw = fields.messagePrivacy {
            guard let privacy = MessagePrivacy(rawValue: raw) else { throw APIError(.invalidArgument, "messagePrivacy must be anyone or followers") }
            profile.messagePrivacy = privacy
        }
        if let seconds = fields.createdAt {
            guard seconds.isFinite, RelationUser.createdAtSeconds.contains(seconds) else { throw APIError(.invalidArgument, "createdAt must be Unix seconds (0...4102444800)") }
            profile.createdAt = Date(timeIntervalSince1970: seconds)
        }
        if let trusted = fields.trusted { profile.trusted = trusted }
        _ = try await run { try await relations.setProfile(profile, at: now()) }
        return try context.json(profile)
    }

    func canMessageREST(_ request: Request, context: APIContext) async throws -> Response {
        let (user, other) = try ids(context)
        return try context.json(try await run { try await relations.canMessage(user, other) })
    }
}
