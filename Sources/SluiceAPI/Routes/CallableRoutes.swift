import Foundation
import Hummingbird
import NIOCore
import SluiceCore

/// The Firebase callable protocol, as the seed apps call it: `POST /v1/functions/{name}` and
/// `POST /{projectId}/{region}/{name}`, request `{"data": {…}}`, response `{"result": {…}}`.
struct CallableRoutes {
    let services: APIServices
    let limits: RateLimits
    let health: HealthRoutes
    let now: @Sendable () -> Date

    typealias Function = @Sendable (CallableRoutes) -> @Sendable (ByteBuffer, APIContext) async throws -> Response

    /// Every function by name; each is one route under both URL shapes, so each has its own documented body.
    static let functions: [(name: String, function: Function)] = [
        ("validate_text", { $0.validateText }), ("detectPriority", { $0.detectPriority }), ("submit_report", { $0.submitReport }),
        ("get_rate_limits", { $0.getRateLimits }), ("healthCheck", { $0.healthCheck }),
        ("deleteProfilePicture", { $0.deleteProfilePicture }), ("reportUser", { $0.reportUser }),
        ("blockUser", { $0.relations.blockUser }), ("unblockUser", { $0.relations.unblockUser }), ("isBlocked", { $0.relations.isBlocked }),
        ("follow", { $0.relations.follow }), ("unfollow", { $0.relations.unfollow }),
        ("setMessagePrivacy", { $0.relations.setMessagePrivacy }), ("canMessage", { $0.relations.canMessage }),
        ("summarizeThread", { $0.threads.summarizeThread }), ("extractActionItems", { $0.threads.extractActionItems }),
        ("trackDecisions", { $0.threads.trackDecisions }), ("smartSearch", { $0.threads.smartSearch }),
    ]

    var relations: RelationRoutes { RelationRoutes(services: services, now: now) }
    var threads: ThreadRoutes { ThreadRoutes(services: services, limits: limits) }

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        for (name, function) in Self.functions {
            let handler = function(self)
            let call: @Sendable (Request, APIContext) async throws -> Response = { request, context in
                try Self.checkFirebasePath(context)
                return try await handler(try await request.body.collect(upTo: 1 << 20), context)
            }
            routes.post(RouterPath("/v1/functions/\(name)"), use: call)
            routes.post(RouterPath("/:projectId/:region/\(name)"), use: call)
        }
        return routes
    }

    /// `/{projectId}/{region}/{name}` as Firebase SDKs build it: a project id (6–30 lower-case letters, digits and
    /// hyphens) and a region such as `us-central1`.
    static func checkFirebasePath(_ context: APIContext) throws {
        guard let project = context.optionalPathParameter("projectId") else { return }
        let region = context.optionalPathParameter("region") ?? ""
        guard project.wholeMatch(of: /[a-z][a-z0-9-]{4,28}[a-z0-9]/) != nil, region.wholeMatch(of: /[a-z]+(-[a-z]+)+[0-9]+/) != nil else {
            throw APIError(.notFound, "no such endpoint: \(Identifiers.printable(project)) is not a Firebase project id or \(Identifiers.printable(region)) not a region")
        }
    }

    /// `{allowed, reason}` from the text pipeline's filter, the seed's `validate_text`.
    func validateText(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let arguments = try ValidateTextArguments.decode(body)
        // Refused input (empty, too long) is not a message: it uses none of the caller's quota; the quota is taken
        // before the judging, so a caller over the limit gets no judging done.
        do throws(TextInputError) {
            try services.texts.filter.preflight(arguments.text)
        } catch {
            throw APIError(.invalidArgument, error.message)
        }
        try await limits.consume(.textMessage, context: context)
        let verdict: TextVerdict
        do throws(TextInputError) {
            verdict = try services.texts.filter.check(arguments.text)
        } catch {
            throw APIError(.invalidArgument, error.message)
        }
        return try context.json(CallableResult(result: ValidateTextResult(allowed: verdict.allowed, reason: verdict.reason)))
    }

    /// The priority object, seed 004's `detectPriority`.
    func detectPriority(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let arguments = try DetectPriorityArguments.decode(body)
        guard !arguments.messageText.isEmpty else { throw APIError(.invalidArgument, DetectPriorityArguments.problem(with: "messageText")) }
        // The same bound as validate_text and the queues (text.maxLength), for the message and its context.
        let maxLength = services.config.text.maxLength
        for (field, value) in [("messageText", arguments.messageText), ("conversationContext", arguments.conversationContext ?? "")]
        where value.unicodeScalars.count > maxLength {
            throw APIError(.invalidArgument, "data.\(field) is \(value.unicodeScalars.count) characters long, over the \(maxLength) limit (text.maxLength)")
        }
        try await limits.consume(.detectPriority, context: context)
        // Sent now: "by 5pm" asked for at 16:50 (in priority.timeZone) is due in 10 minutes.
        var verdict = await services.texts.priority.score(arguments.messageText, context: arguments.conversationContext, sentAt: now())
        // The provider's own words (which can echo parts of keys or accounts) go to the log, not to the caller.
        if let reason = verdict.fallbackReason {
            context.logger.warning("priority LLM failed; the rules answered", metadata: ["error": "\(reason)"])
            verdict.fallbackReason = "the LLM engine failed, so the rules answered (details are in the server's log)"
        }
        return try context.json(CallableResult(result: verdict))
    }

    /// `{success, reportId}`, the seed's `submit_report`.
    func submitReport(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let arguments = try SubmitReportArguments.decode(body).validated()
        try await limits.consume(.report, context: context)
        let report = Report(reportId: "rpt_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""),
                            messageId: arguments.messageId, category: arguments.category, description: arguments.description,
                            reporterUserId: context.principal?.userId, createdAt: now())
        try await services.store.recordReport(report)
        try await Self.reviewIfReported(report.messageId, services: services, at: now())
        return try context.json(CallableResult(result: ReportResult(success: true, reportId: report.reportId)))
    }

    /// Whether `user` can have read `item`: a message sent to someone or in a conversation is read by its sender, its
    /// recipient and the conversation's members; anything else (an image, a post on a wall) by anyone. Reports from
    /// anyone are kept for moderators, but only these count towards `report.autoReviewAfter`: otherwise three accounts
    /// that guessed a private message's id could take it out of its thread.
    static func mayHaveSeen(_ item: Item, _ user: String, services: APIServices) async throws -> Bool {
        guard let content = item.content, content.recipientId != nil || content.conversationId != nil else { return true }
        if user == item.userId || user == content.recipientId { return true }
        guard let conversation = content.conversationId else { return false }
        return try await services.store.isThreadMember(user, conversationId: conversation)
    }

    /// Reports that act: once `report.autoReviewAfter` distinct users have open reports on an approved item, it goes
    /// back to review with its public outputs withdrawn until a person decides.
    static func reviewIfReported(_ messageId: String, services: APIServices, at date: Date) async throws {
        let threshold = services.config.report.autoReviewAfter
        guard threshold > 0, let item = try await services.store.item(ItemID(messageId)), item.status == .approved else { return }
        var reporters = Set<String>()
        for reporter in Set(try await services.store.reports()
            .filter { $0.target == "item" && $0.messageId == messageId && $0.status == .open }
            .compactMap(\.reporterUserId)) where try await mayHaveSeen(item, reporter, services: services) {
            reporters.insert(reporter)
        }
        // Trusted reporters (their profile says so) count more.
        var weight = 0
        for reporter in reporters {
            weight += try await services.store.relationUser(reporter)?.trusted == true ? services.config.report.trustedWeight : 1
        }
        guard weight >= threshold else { return }
        _ = try await services.decisions.withdraw(item.id, reason: "reported by \(reporters.count) user\(reporters.count == 1 ? "" : "s")", at: date)
    }

    /// Seed 004's `reportUser {reporterID, reportedID, reason}` → `{success, reportId}`: a report on a user, listed
    /// with the others for review. A user reports as themselves.
    func reportUser(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let arguments = try ReportUserArguments.decode(body).validated()
        if case let .user(id)? = context.principal, id != arguments.reporterID {
            throw APIError(.permissionDenied, "data.reporterID must be the signed-in user")
        }
        // A backend acting for one user may not report as another (and charge the first one's quota).
        if case let .app(actingFor?)? = context.principal, actingFor != arguments.reporterID {
            throw APIError(.permissionDenied, "X-User-Id (\(actingFor)) and data.reporterID (\(arguments.reporterID)) name different users; send one of them")
        }
        try await limits.consume(.report, context: context)
        let report = Report(reportId: "rpt_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""),
                            messageId: arguments.reportedID, category: "other", description: arguments.reason,
                            reporterUserId: arguments.reporterID, createdAt: now(), target: "user")
        try await services.store.recordReport(report)
        return try context.json(CallableResult(result: ReportResult(success: true, reportId: report.reportId)))
    }

    /// Every limit's window for the caller's user, the seed's `get_rate_limits` (called with `call(nil)`).
    func getRateLimits(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        _ = try NoArguments.decode(body)
        guard let user = context.principal?.userId else {
            throw APIError(.unauthenticated, "no user: send X-User-Id with the app token, or a user token")
        }
        return try context.json(CallableResult(result: try await limits.windows(for: user)))
    }

    /// Seed 004's `healthCheck`: `{status: healthy|unhealthy, message, timestamp}`. Healthy when the store is
    /// reachable and every configured provider answers.
    func healthCheck(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        _ = try NoArguments.decode(body)
        let report = await health.report()
        let unreachable = report.providers.filter { !$0.reachable }
        let healthy = report.store == "reachable" && unreachable.isEmpty
        var parts = ["store \(report.store)"]
        parts += report.providers.map { "\($0.role) provider \($0.name) \($0.reachable ? "reachable" : "unreachable")" }
        return try context.json(CallableResult(result: HealthCheckResult(status: healthy ? "healthy" : "unhealthy",
                                                                          message: parts.joined(separator: "; "),
                                                                          timestamp: CaptionRoutes.timestamp(now()))))
    }

    /// Seed 004's `deleteProfilePicture`: erases the user's profile picture, the image uploaded as
    /// `pending/{userId}/profile_{userId}` (the seed's `profile_{userId}.jpg`), with every file of it. Users delete
    /// their own; a backend names the user.
    func deleteProfilePicture(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let userId = try ProfilePictureArguments.decode(body).userId
        let by: String
        switch context.principal {
        case let .user(id)?:
            guard userId == id else { throw APIError(.permissionDenied, "users delete only their own profile picture") }
            by = id
        case let .app(actingFor)?:
            if let actingFor, actingFor != userId {
                throw APIError(.permissionDenied, "X-User-Id (\(actingFor)) and data.userId (\(Identifiers.printable(userId))) name different users; send one of them")
            }
            by = actingFor.map { "app for \($0)" } ?? "app"
        case nil:
            throw APIError(.unauthenticated, "missing credentials")
        }
        if let problem = Identifiers.problem(with: userId, role: "data.userId") { throw APIError(.invalidArgument, problem) }
        guard let image = ImageRef(userId: userId, imageId: "profile_\(userId)") else {
            throw APIError(.invalidArgument, "data.userId is too long for a profile picture id (profile_{userId} must be at most 128 characters)")
        }
        let summary = try await services.erasure.erase(image.itemID, by: by, reason: "deleteProfilePicture", at: now())
        return try context.json(CallableResult(result: DeletionResult(success: true, deleted: summary != nil)))
    }
}

struct DeletionResult: Encodable {
    var success: Bool
    var deleted: Bool
}

struct HealthCheckResult: Encodable {
    var status: String
    var message: String
    var timestamp: String
}

struct ReportResult: Encodable {
    var success: Bool
    var reportId: String
}

struct ValidateTextResult: Encodable {
    var allowed: Bool
    var reason: String?

    /// `reason` is written as null when there is none.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(allowed, forKey: .allowed)
        try c.encode(reason, forKey: .reason)
    }

    enum CodingKeys: String, CodingKey { case allowed, reason }
}
