import Foundation
import Hummingbird
import NIOCore
import SluiceCore

/// The Firebase callable protocol, as the seed apps call it: `POST /v1/functions/{name}` and
/// `POST /{projectId}/{region}/{name}`, request `{"data": {…}}`, response `{"result": {…}}`.
struct CallableRoutes {
    let services: APIServices
    let limits: RateLimits
    let now: @Sendable () -> Date

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.post("/v1/functions/:name", use: call)
        routes.post("/:projectId/:region/:name", use: call)
        return routes
    }

    func call(_ request: Request, context: APIContext) async throws -> Response {
        let name = try context.parameters.require("name")
        let handler: (ByteBuffer, APIContext) async throws -> Response
        switch name {
        case "validate_text": handler = validateText
        case "detectPriority": handler = detectPriority
        case "submit_report": handler = submitReport
        case "get_rate_limits": handler = getRateLimits
        default: throw APIError(.notFound, "no callable function \(Identifiers.printable(name))")
        }
        return try await handler(try await request.body.collect(upTo: 1 << 20), context)
    }

    /// `{allowed, reason}` from the text pipeline's filter, the seed's `validate_text`.
    func validateText(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        let arguments = try ValidateTextArguments.decode(body)
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
        let verdict = await services.texts.priority.score(arguments.messageText, context: arguments.conversationContext)
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
        return try context.json(CallableResult(result: ReportResult(success: true, reportId: report.reportId)))
    }

    /// Every limit's window for the caller's user, the seed's `get_rate_limits`.
    func getRateLimits(_ body: ByteBuffer, context: APIContext) async throws -> Response {
        _ = try NoArguments.decode(body)
        guard let user = context.principal?.userId else {
            throw APIError(.invalidArgument, "no user: send X-User-Id with the app token, or a user token")
        }
        return try context.json(CallableResult(result: try await limits.windows(for: user)))
    }
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
