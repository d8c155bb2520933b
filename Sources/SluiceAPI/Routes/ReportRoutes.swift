import Foundation
import Hummingbird
import SluiceCore

/// Reports for backends (app tokens): `GET /v1/reports?status=open|resolved|dismissed` and
/// `POST /v1/reports/{reportId}/resolve {status: resolved|dismissed, note?}`.
struct ReportRoutes {
    let services: APIServices
    let now: @Sendable () -> Date

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.get("/v1/reports", use: list)
        routes.post("/v1/reports/:reportId/resolve", use: resolve)
        return routes
    }

    struct ReportList: Encodable {
        var reports: [Report]
    }

    struct Resolution: Decodable {
        var status: String
        var note: String?
    }

    func list(_ request: Request, context: APIContext) async throws -> Response {
        _ = try ItemRoutes.backendItself(context, for: "list reports")
        let wanted: ReportStatus?
        if let raw = request.uri.queryParameters.get("status") {
            guard let status = ReportStatus(rawValue: raw) else {
                throw APIError(.invalidArgument, "status must be one of \(ReportStatus.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            wanted = status
        } else {
            wanted = nil
        }
        let reports = try await services.store.reports().filter { wanted == nil || $0.status == wanted }
        return try context.json(ReportList(reports: reports))
    }

    func resolve(_ request: Request, context: APIContext) async throws -> Response {
        let by = try ItemRoutes.backendItself(context, for: "resolve reports")
        let reportId = try context.pathParameter("reportId")
        guard (1...64).contains(reportId.count), reportId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw APIError(.invalidArgument, "reportId \"\(Identifiers.printable(reportId))\" is not a report id")
        }
        let body = try await request.body.collect(upTo: 64 * 1024)
        let resolution: Resolution
        do {
            resolution = try JSONDecoder().decode(Resolution.self, from: body)
        } catch {
            throw APIError(.invalidArgument, "body must be {\"status\": \"resolved\" | \"dismissed\", \"note\"?: string}")
        }
        guard let status = ReportStatus(rawValue: resolution.status), status != .open else {
            throw APIError(.invalidArgument, "status must be resolved or dismissed")
        }
        try APIValidation.refuseNUL(resolution.note, "note")
        if let note = resolution.note, note.unicodeScalars.count > 1000 {
            throw APIError(.invalidArgument, "note is \(note.unicodeScalars.count) characters, over 1000")
        }
        guard try await services.store.resolveReport(reportId, status: status, by: by, note: resolution.note, at: now()) else {
            throw APIError(.notFound, "no open report \(reportId)")
        }
        let report = try await services.store.reports().first { $0.reportId == reportId }
        return try context.json(report)
    }
}
