import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth
import Mustache
import NIOCore
import SluiceCore
import SluicePipeline

/// The review console under `/console/`: server-rendered pages (swift-mustache), reviewer sessions stored in the
/// status store, a CSRF token on every form, decisions through the one pipeline's decision path.
struct ConsoleRoutes {
    let services: APIServices
    let pages: ConsolePages
    let accounts: ReviewerAccounts
    let now: @Sendable () -> Date

    func add(to router: Router<APIContext>) {
        let console = router.group("console")
            .add(middleware: ConsoleHeadersMiddleware())
            .add(middleware: SessionMiddleware(storage: StorePersistDriver(store: services.store, now: now), configuration: .init(
                sessionCookieParameters: .init(name: "sluice_console", path: "/console", secure: services.config.console.secureCookie,
                                               sameSite: .strict),
                defaultSessionExpiration: .seconds(Int64(services.config.console.sessionHours * 3600)))))
        console.get("", use: queue)
        console.get("login", use: loginPage)
        console.post("login", use: login)
        console.post("logout", use: logout)
        console.post("preferences", use: preferences)
        console.get("items/:id", use: itemPage)
        console.get("items/:id/:imageId", use: itemPage)
        console.post("decide/:id", use: decide)
        console.post("decide/:id/:imageId", use: decide)
        console.post("undo/:id", use: undo)
        console.post("undo/:id/:imageId", use: undo)
        console.post("bulk", use: bulk)
        console.get("media/:id/:imageId", use: media)
        console.get("reports", use: reportsPage)
        console.post("reports/:reportId/resolve", use: resolveReport)
        console.get("audit", use: auditPage)
        console.get("audit.csv", use: auditCSV)
        console.get("audit-queue", use: auditQueuePage)
        console.post("audit-check/:id/:imageId", use: auditCheck)
        console.get("static/:file", use: asset)
    }

    // MARK: Sign-in

    static let loginCSRFCookie = "sluice_login_csrf"

    func loginPage(_ request: Request, context: APIContext) async throws -> Response {
        if try await signedIn(context) != nil { return Self.redirect("/console/") }
        return loginForm(next: Self.safeNext(request.uri.queryParameters.get("next")), error: nil, status: .ok)
    }

    private func loginForm(next: String, error: String?, status: HTTPResponse.Status) -> Response {
        let token = ConsoleSession.randomToken()
        var response = pages.render("login", LoginPage(csrf: token, next: next, error: error), status: status)
        response.setCookie(Cookie(name: Self.loginCSRFCookie, value: token, path: "/console", secure: services.config.console.secureCookie,
                                  httpOnly: true, sameSite: .strict))
        return response
    }

    struct LoginForm: Decodable {
        var username: String?
        var password: String?
        var csrf: String?
        var next: String?
    }

    func login(_ request: Request, context: APIContext) async throws -> Response {
        let form: LoginForm = try await Self.form(request, context: context)
        let next = Self.safeNext(form.next)
        // Double-submit: the form's token must match the cookie set with the form (SameSite=Strict).
        guard let cookie = request.cookies[Self.loginCSRFCookie]?.value, let token = form.csrf, !token.isEmpty,
              Self.constantTimeEqual(cookie, token) else {
            return pages.error(.forbidden, "The sign-in form expired or did not come from this console. Reload the page and try again.")
        }
        let name = form.username ?? ""
        let address = context.clientAddress ?? "unknown"
        // Throttled per account and per address: 5 and 20 attempts per 15 minutes.
        for (key, limit) in [("console.login.user:\(name.prefix(64))", 5), ("console.login.addr:\(address)", 20)] {
            let state = try await services.store.consumeRateLimit(key: key, limit: limit, windowSeconds: 900, now: now())
            if !state.allowed {
                return loginForm(next: next, error: "Too many sign-in attempts. Try again after \(Self.clock(state.resetAt)).", status: .tooManyRequests)
            }
        }
        guard let reviewer = try await accounts.verify(name, password: form.password ?? "") else {
            return loginForm(next: next, error: "Wrong name or password, or the account is disabled.", status: .unauthorized)
        }
        context.sessions.createSession(ConsoleSession(reviewer: reviewer.name, csrf: ConsoleSession.randomToken(), signedInAt: now(),
                                                   fingerprint: ReviewerAccounts.fingerprint(reviewer)))
        var response = Self.redirect(next)
        response.setCookie(Cookie(name: Self.loginCSRFCookie, value: "", maxAge: 0, path: "/console", httpOnly: true, sameSite: .strict))
        return response
    }

    func logout(_ request: Request, context: APIContext) async throws -> Response {
        let (_, _, _) = try await requireForm(request, context: context) as (Reviewer, ConsoleSession, [String: String])
        context.sessions.clearSession()
        return Self.redirect("/console/login")
    }

    struct PreferencesForm: Decodable {
        var csrf: String?
        var unblurAll: String?
    }

    func preferences(_ request: Request, context: APIContext) async throws -> Response {
        let (reviewer, _, fields) = try await requireForm(request, context: context) as (Reviewer, ConsoleSession, [String: String])
        var updated = reviewer
        updated.unblurAll = fields["unblurAll"] == "1"
        _ = try await services.store.updateReviewer(updated)
        return Self.redirect("/console/")
    }

    // MARK: Queue

    func queue(_ request: Request, context: APIContext) async throws -> Response {
        guard let (reviewer, session) = try await signedIn(context) else { return Self.toLogin(request) }
        let query = request.uri.queryParameters
        let kind = query.get("kind").flatMap(ItemKind.init(rawValue:))
        let user = query.get("user").map { String($0.prefix(128)) }.flatMap { $0.isEmpty ? nil : $0 }
        let reason = query.get("reason").map { String($0.prefix(200)) }.flatMap { $0.isEmpty ? nil : $0 }
        let reportedOnly = query.get("reported") == "1"
        let escalatedOnly = query.get("escalated") == "1"
        var items = try await services.store.items(matching: ItemFilter(kind: kind, statuses: [.review], userId: user))
        items.sort { ($0.createdAt, $0.id.rawValue) < ($1.createdAt, $1.id.rawValue) }
        let reports = try await services.store.reports().filter { $0.status == .open }
        let reportedIDs = Set(reports.filter { $0.target == "item" }.map(\.messageId))
        let escalations = try await services.store.escalations()
        let claims = try await services.store.claims(now: now())
        let appeals = try await services.store.openAppeals()
        if let reason { items = items.filter { ($0.reason ?? "").localizedCaseInsensitiveContains(reason) } }
        if reportedOnly { items = items.filter { reportedIDs.contains($0.id.rawValue) } }
        if escalatedOnly { items = items.filter { escalations[$0.id] != nil } }
        let total = items.count
        items = Array(items.prefix(100))
        let back = Self.queryString(request)
        var cards: [CardView] = []
        for (offset, item) in items.enumerated() {
            let next = offset + 1 < items.count ? items[offset + 1].id.rawValue : ""
            let history = try await userHistory(item)
            cards.append(CardView(item, reviewer: reviewer, escalation: escalations[item.id], claimedBy: claims[item.id].flatMap { $0 == reviewer.name ? nil : $0 },
                                  reportCount: reports.filter { $0.messageId == item.id.rawValue }.count, history: history, next: next, back: back,
                                  appeal: appeals[item.id]))
        }
        let page = QueuePage(nav: try await nav(reviewer, session), flash: query.get("flash").map { String($0.prefix(200)) },
                             heading: escalatedOnly ? "Escalated" : "Review queue", total: total, cards: cards,
                             kinds: ItemKind.allCases.map { Choice(value: $0.rawValue, selected: $0 == kind) },
                             user: user ?? "", reason: reason ?? "", reported: reportedOnly, escalated: escalatedOnly, back: back, csrf: session.csrf)
        return pages.render("queue", page)
    }

    private func userHistory(_ item: Item) async throws -> String {
        let others = try await services.store.items(matching: ItemFilter(userId: item.userId)).filter { $0.id != item.id }
        guard !others.isEmpty else { return "first item of this user" }
        var counts: [ItemStatus: Int] = [:]
        for other in others { counts[other.status, default: 0] += 1 }
        return "user's other items: " + ItemStatus.allCases.compactMap { status in counts[status].map { "\($0) \(status.rawValue)" } }.joined(separator: ", ")
    }

    // MARK: Item page

    func itemPage(_ request: Request, context: APIContext) async throws -> Response {
        guard let (reviewer, session) = try await signedIn(context) else { return Self.toLogin(request) }
        let id = try Self.itemID(context)
        guard let item = try await services.store.item(id) else { return pages.error(.notFound, "No item \(id.rawValue).") }
        var claimedBy: String?
        if item.status == .review {
            let claim = try await services.store.claimItem(id, reviewer: reviewer.name, until: now().addingTimeInterval(services.config.console.claimSeconds),
                                                           now: now())
            if claim.holder != reviewer.name { claimedBy = claim.holder }
        }
        let reports = try await services.store.reports().filter { $0.messageId == id.rawValue }
        let escalation = try await services.store.escalations()[id]
        let appeal = try await services.store.openAppeals()[id]
        let events = try await services.store.events(of: id)
        let others = try await services.store.items(matching: ItemFilter(userId: item.userId)).filter { $0.id != id }
            .sorted { $0.createdAt > $1.createdAt }.prefix(20)
        let card = item.status == .review
            ? CardView(item, reviewer: reviewer, escalation: escalation, claimedBy: claimedBy, reportCount: reports.count,
                       history: try await userHistory(item), next: "", back: "", appeal: appeal)
            : nil
        let page = ItemPage(nav: try await nav(reviewer, session), flash: request.uri.queryParameters.get("flash").map { String($0.prefix(200)) },
                            item: item, card: card, reviewer: reviewer, events: events, reports: reports, others: Array(others))
        return pages.render("item", page)
    }

    func media(_ request: Request, context: APIContext) async throws -> Response {
        guard try await signedIn(context) != nil else { return pages.error(.unauthorized, "Sign in to see images.") }
        let id = try Self.itemID(context)
        guard let item = try await services.store.item(id), item.kind == .image else { return pages.error(.notFound, "No image \(id.rawValue).") }
        let layout = services.layout
        guard let file = item.original.map(layout.absolute) ?? item.outputs.approved.map(layout.absolute) else {
            return pages.error(.notFound, "\(id.rawValue) has no stored image.")
        }
        let bytes: Data
        do { bytes = try FileOps.readRegularFile(file, limit: services.config.limits.maxBytes) } catch {
            return pages.error(.notFound, "The image of \(id.rawValue) cannot be read: \(error)")
        }
        // The same sniff, limits and decode as intake: a downscaled, metadata-free JPEG, never the original bytes.
        let run = await services.images.previewing.run(ImageUpload(image: nil, bytes: bytes), context: .intake)
        guard case let .completed(decoded) = run.end else {
            return pages.error(.unprocessableContent, "The image of \(id.rawValue) cannot be shown: \(run.keptBecause ?? "it did not decode")")
        }
        return Response(status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: decoded.image.classifyJPEG)))
    }

    // MARK: Decisions

    func decide(_ request: Request, context: APIContext) async throws -> Response {
        let (reviewer, _, fields) = try await requireForm(request, context: context) as (Reviewer, ConsoleSession, [String: String])
        let id = try Self.itemID(context)
        if let problem = Self.noteProblem(fields["note"]) { return pages.error(.badRequest, problem) }
        let note = Self.note(fields["note"])
        let back = Self.safeQuery(fields["back"])
        let outcome = try await decideOne(id, action: fields["action"] ?? "", note: note, reviewer: reviewer)
        if let failure = outcome.failure { return pages.error(failure.status, failure.message) }
        var query = back.isEmpty ? [] : [back]
        if let next = fields["next"], !next.isEmpty { query.append("focus=" + Self.percent(next)) }
        query.append("flash=" + Self.percent(outcome.message))
        return Self.redirect("/console/?" + query.joined(separator: "&"))
    }

    struct Outcome {
        var message: String
        var failure: (status: HTTPResponse.Status, message: String)?
    }

    private func decideOne(_ id: ItemID, action: String, note: String?, reviewer: Reviewer) async throws -> Outcome {
        guard let item = try await services.store.item(id) else { return Outcome(message: "", failure: (.notFound, "No item \(id.rawValue).")) }
        guard item.status == .review else {
            return Outcome(message: "", failure: (.conflict, "\(id.rawValue) is \(item.status.rawValue) now, not in review; someone decided it first."))
        }
        let escalation = try await services.store.escalations()[id]
        if escalation != nil, reviewer.role != .admin, action == "approve" || action == "block" {
            return Outcome(message: "", failure: (.forbidden, "\(id.rawValue) was escalated to an admin."))
        }
        let claim = try await services.store.claimItem(id, reviewer: reviewer.name, until: now().addingTimeInterval(services.config.console.claimSeconds),
                                                       now: now())
        guard claim.holder == reviewer.name else {
            return Outcome(message: "", failure: (.conflict, "\(id.rawValue) is open with \(claim.holder) until \(Self.clock(claim.until))."))
        }
        switch action {
        case "approve", "block":
            let choice: HumanDecisions.Choice = action == "approve" ? .approve : .block
            do {
                let decided = try await services.decisions.decide(id, choice, by: reviewer.name, note: note, at: now())
                return Outcome(message: "\(id.rawValue) \(decided.status.rawValue)")
            } catch let error as DecisionError {
                return Outcome(message: "", failure: (.conflict, error.message))
            }
        case "escalate":
            try await services.store.escalate(Escalation(itemId: id, by: reviewer.name, note: note, at: now()))
            // Handed up: the reviewer's claim ends so an admin can take it at once.
            _ = try await services.store.claimItem(id, reviewer: reviewer.name, until: now(), now: now())
            return Outcome(message: "\(id.rawValue) escalated")
        default:
            return Outcome(message: "", failure: (.badRequest, "Unknown action \"\(Identifiers.printable(action))\": approve, block or escalate."))
        }
    }

    func undo(_ request: Request, context: APIContext) async throws -> Response {
        let (reviewer, _, _) = try await requireForm(request, context: context) as (Reviewer, ConsoleSession, [String: String])
        let id = try Self.itemID(context)
        do {
            let item = try await services.decisions.undo(id, by: reviewer.name, isAdmin: reviewer.role == .admin, at: now())
            return Self.redirect(Self.itemHref(item.id) + "?flash=" + Self.percent("decision undone: back in review"))
        } catch let error as DecisionError {
            return pages.error(.forbidden, error.message)
        }
    }

    func bulk(_ request: Request, context: APIContext) async throws -> Response {
        let (reviewer, _, fields, ids) = try await requireBulkForm(request, context: context)
        guard let action = fields["action"], action == "approve" || action == "block" else {
            return pages.error(.badRequest, "Bulk actions are approve and block.")
        }
        if let problem = Self.noteProblem(fields["note"]) { return pages.error(.badRequest, problem) }
        let back = Self.safeQuery(fields["back"])
        let prefix = "/console/?" + (back.isEmpty ? "" : back + "&")
        guard !ids.isEmpty else { return Self.redirect(prefix + "flash=" + Self.percent("nothing selected")) }
        guard ids.count <= 100 else { return pages.error(.badRequest, "At most 100 items at once.") }
        var done = 0
        var problems: [String] = []
        for raw in ids {
            guard Self.isValidItemID(raw) else { problems.append("\(Identifiers.printable(raw)): not an item id"); continue }
            let outcome = try await decideOne(ItemID(raw), action: action, note: Self.note(fields["note"]), reviewer: reviewer)
            if let failure = outcome.failure { problems.append(failure.message) } else { done += 1 }
        }
        let message = "\(action == "approve" ? "approved" : "blocked") \(done)" + (problems.isEmpty ? "" : "; not done: " + problems.joined(separator: "; "))
        return Self.redirect(prefix + "flash=" + Self.percent(String(message.prefix(200))))
    }

    // MARK: Reports and audit

    func reportsPage(_ request: Request, context: APIContext) async throws -> Response {
        guard let (reviewer, session) = try await signedIn(context) else { return Self.toLogin(request) }
        let open = try await services.store.reports().filter { $0.status == .open }
        var groups: [ReportGroupView] = []
        for (key, reports) in Dictionary(grouping: open, by: { "\($0.target)\u{0}\($0.messageId)" }).sorted(by: { $0.value.count > $1.value.count }) {
            let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
            let target = parts.first ?? "item"
            let subject = parts.count > 1 ? parts[1] : ""
            let item = target == "item" ? try await services.store.item(ItemID(subject)) : nil
            groups.append(ReportGroupView(target: target == "user" ? "user" : "item", subject: subject, item: item, reports: reports))
        }
        // Users to look at: many open reports on them or their items, or blocked by many people lately.
        var reportsByUser: [String: Int] = [:]
        for group in groups {
            let owner = group.target == "user" ? group.subject : (try await services.store.item(ItemID(group.subject)))?.userId
            if let owner { reportsByUser[owner, default: 0] += group.count }
        }
        let settings = services.config.report
        var flagged: [FlaggedUserView] = []
        if settings.flagUserAfter > 0 {
            for (user, count) in reportsByUser where count >= settings.flagUserAfter {
                flagged.append(FlaggedUserView(userId: user, why: "\(count) open reports"))
            }
        }
        if settings.flagBlocksAfter > 0 {
            let since = now().addingTimeInterval(-settings.flagWindowHours * 3600)
            for (user, blocks) in try await services.store.usersBlocked(atLeast: settings.flagBlocksAfter, since: since) {
                flagged.append(FlaggedUserView(userId: user, why: "blocked by \(blocks) users in \(Int(settings.flagWindowHours)) h"))
            }
        }
        flagged.sort { ($0.userId, $0.why) < ($1.userId, $1.why) }
        return pages.render("reports", ReportsPage(nav: try await nav(reviewer, session), flash: request.uri.queryParameters.get("flash").map { String($0.prefix(200)) },
                                                   total: open.count, groups: groups, flagged: flagged, hasFlagged: !flagged.isEmpty, csrf: session.csrf))
    }

    func resolveReport(_ request: Request, context: APIContext) async throws -> Response {
        let (reviewer, _, fields) = try await requireForm(request, context: context) as (Reviewer, ConsoleSession, [String: String])
        let reportId = try context.pathParameter("reportId")
        guard let status = fields["status"].flatMap(ReportStatus.init(rawValue:)), status != .open else {
            return pages.error(.badRequest, "Resolve or dismiss.")
        }
        if let problem = Self.noteProblem(fields["note"]) { return pages.error(.badRequest, problem) }
        guard try await services.store.resolveReport(reportId, status: status, by: reviewer.name, note: Self.note(fields["note"]), at: now()) else {
            return pages.error(.notFound, "No open report \(Identifiers.printable(reportId)).")
        }
        return Self.redirect("/console/reports?flash=" + Self.percent("report \(status.rawValue)"))
    }

    func auditPage(_ request: Request, context: APIContext) async throws -> Response {
        guard let (reviewer, session) = try await signedIn(context) else { return Self.toLogin(request) }
        guard reviewer.role == .admin else { return pages.error(.forbidden, "The audit page is for admins.") }
        let (by, decision, rows) = try await auditRows(request)
        let choices = [ItemStatus.approved, .blocked, .review].map { Choice(value: $0.rawValue, selected: $0.rawValue == decision) }
        return pages.render("audit", AuditPage(nav: try await nav(reviewer, session), flash: nil, by: by, decision: decision, rows: rows,
                                               decisions: choices, csrf: session.csrf))
    }

    func auditCSV(_ request: Request, context: APIContext) async throws -> Response {
        guard let (reviewer, _) = try await signedIn(context) else { return Self.toLogin(request) }
        guard reviewer.role == .admin else { return pages.error(.forbidden, "The audit export is for admins.") }
        let (_, _, rows) = try await auditRows(request)
        var csv = "at,itemId,fromStatus,toStatus,detail\r\n"
        for row in rows { csv += [row.at, row.itemId, row.from, row.to, row.detail].map(Self.csvField).joined(separator: ",") + "\r\n" }
        return Response(status: .ok, headers: [.contentType: "text/csv; charset=utf-8", .contentDisposition: "attachment; filename=\"sluice-decisions.csv\"",
                                               .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(string: csv)))
    }

    private func auditRows(_ request: Request) async throws -> (String, String, [AuditRow]) {
        let by = String((request.uri.queryParameters.get("by") ?? "").prefix(64))
        let decision = request.uri.queryParameters.get("decision").flatMap(ItemStatus.init(rawValue:))?.rawValue ?? ""
        let rows = try await services.store.decisionEvents(limit: 10_000)
            .filter { by.isEmpty || ($0.detail ?? "").hasPrefix("by \(by)") }
            .filter { decision.isEmpty || $0.toStatus?.rawValue == decision }
            .map(AuditRow.init)
        return (by, decision, rows)
    }

    /// Neutralises spreadsheet formulas and quotes as RFC 4180 does.
    static func csvField(_ value: String) -> String {
        var text = value
        if let first = text.first, "=+-@\t\r".contains(first) { text = "'" + text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: Audit sampling

    func auditQueuePage(_ request: Request, context: APIContext) async throws -> Response {
        guard let (reviewer, session) = try await signedIn(context) else { return Self.toLogin(request) }
        let ids = try await services.store.auditQueue(limit: 50)
        let items = try await services.store.items(ids)
        let stats = try await services.store.auditStats()
        let precision = stats.audited == 0 ? "not measured yet" : String(format: "%.1f%%", 100 * Double(stats.agreed) / Double(stats.audited))
        let page = AuditQueuePage(nav: try await nav(reviewer, session), flash: request.uri.queryParameters.get("flash").map { String($0.prefix(200)) },
                                  waiting: items.count, precision: precision, agreed: stats.agreed, audited: stats.audited,
                                  rate: String(services.config.review.auditSampleRate), cards: items.map(AuditCardView.init), csrf: session.csrf)
        return pages.render("audit-queue", page)
    }

    /// A person's check of a sampled approval: agreeing records it; disagreeing also sends the item back to review
    /// (its outputs withdrawn) for a decision.
    func auditCheck(_ request: Request, context: APIContext) async throws -> Response {
        let (reviewer, _, fields) = try await requireForm(request, context: context) as (Reviewer, ConsoleSession, [String: String])
        let id = try Self.itemID(context)
        guard let verdict = fields["verdict"], verdict == "agree" || verdict == "disagree" else {
            return pages.error(.badRequest, "Agree or disagree.")
        }
        guard try await services.store.recordAudit(id, by: reviewer.name, agreed: verdict == "agree", at: now()) else {
            return pages.error(.conflict, "\(id.rawValue) is not an unchecked sample (someone checked it first).")
        }
        if verdict == "disagree" {
            _ = try await services.decisions.withdraw(id, reason: "audit: approval disputed by \(reviewer.name)", at: now())
        }
        return Self.redirect("/console/audit-queue?flash=" + Self.percent("\(id.rawValue): \(verdict == "agree" ? "approval confirmed" : "sent to review")"))
    }

    // MARK: Static files

    func asset(_ request: Request, context: APIContext) async throws -> Response {
        let name = try context.pathParameter("file")
        guard let asset = pages.assets[name] else { return pages.error(.notFound, "No such file.") }
        return Response(status: .ok, headers: [.contentType: asset.contentType, .cacheControl: "no-cache"],
                        body: .init(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }

    // MARK: Plumbing

    /// The signed-in reviewer, when the session is valid, the account enabled and its password unchanged.
    func signedIn(_ context: APIContext) async throws -> (Reviewer, ConsoleSession)? {
        guard let session = context.sessions.session else { return nil }
        guard let reviewer = try await services.store.reviewer(named: session.reviewer), !reviewer.disabled,
              ReviewerAccounts.fingerprint(reviewer) == session.fingerprint else {
            context.sessions.clearSession()
            return nil
        }
        return (reviewer, session)
    }

    /// A form POST from a signed-in reviewer carrying the session's CSRF token; the fields by name.
    func requireForm(_ request: Request, context: APIContext) async throws -> (Reviewer, ConsoleSession, [String: String]) {
        let (reviewer, session, fields, _) = try await requireBulkForm(request, context: context)
        return (reviewer, session, fields)
    }

    func requireBulkForm(_ request: Request, context: APIContext) async throws -> (Reviewer, ConsoleSession, [String: String], [String]) {
        var request = request
        let body = try await request.collectBody(upTo: 256 * 1024)
        let (fields, ids) = Self.parseForm(String(buffer: body))
        guard let (reviewer, session) = try await signedIn(context) else {
            throw ConsolePageError(status: .unauthorized, message: "Your session ended. Sign in again.", location: "/console/login")
        }
        guard let token = fields["csrf"], Self.constantTimeEqual(token, session.csrf) else {
            throw ConsolePageError(status: .forbidden, message: "This form is missing its security token or it expired. Reload the page and try again.")
        }
        return (reviewer, session, fields, ids)
    }

    static func form<T: Decodable>(_ request: Request, context: APIContext) async throws -> T {
        var request = request
        let body = try await request.collectBody(upTo: 64 * 1024)
        do {
            return try URLEncodedFormDecoder().decode(T.self, from: String(buffer: body))
        } catch {
            throw ConsolePageError(status: .badRequest, message: "The form could not be read.")
        }
    }

    /// `application/x-www-form-urlencoded`: single fields by name (first wins), and every `ids[]` value.
    static func parseForm(_ body: String) -> ([String: String], [String]) {
        var fields: [String: String] = [:]
        var ids: [String] = []
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ") }
            guard let rawName = parts.first, let name = rawName.removingPercentEncoding else { continue }
            let value = parts.count > 1 ? (parts[1].removingPercentEncoding ?? "") : ""
            if name == "ids[]" { ids.append(value) } else if fields[name] == nil { fields[name] = value }
        }
        return (fields, ids)
    }

    func nav(_ reviewer: Reviewer, _ session: ConsoleSession) async throws -> NavView {
        let counts = try await services.store.countsByStatus()
        return NavView(reviewer: reviewer.name, role: reviewer.role.rawValue, isAdmin: reviewer.role == .admin, csrf: session.csrf,
                       unblurAll: reviewer.unblurAll,
                       counts: ItemStatus.allCases.map { CountView(status: $0.rawValue, count: counts[$0] ?? 0) })
    }

    static func itemID(_ context: APIContext) throws -> ItemID {
        let first = try context.pathParameter("id")
        let raw = context.optionalPathParameter("imageId").map { "\(first)/\($0)" } ?? first
        guard isValidItemID(raw) else { throw ConsolePageError(status: .badRequest, message: "\(Identifiers.printable(raw)) is not an item id.") }
        return ItemID(raw)
    }

    static func isValidItemID(_ raw: String) -> Bool {
        let parts = raw.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 2 { return Identifiers.isValidSegment(parts[0]) && Identifiers.isValidSegment(parts[1]) }
        return parts.count == 1 && Identifiers.isValidTextID(raw)
    }

    static func itemHref(_ id: ItemID) -> String {
        "/console/items/" + id.rawValue.split(separator: "/").map { percent(String($0)) }.joined(separator: "/")
    }

    /// A note is stored with the decision or report: like the API's stored texts it may not hold a NUL, which a
    /// store would keep cut short or refuse.
    static func noteProblem(_ raw: String?) -> String? {
        guard let raw, raw.utf8.contains(0) else { return nil }
        return "The note may not contain a NUL character (\\u0000)."
    }

    static func note(_ raw: String?) -> String? {
        guard let raw else { return nil }
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : String(trimmed.unicodeScalars.prefix(1000).map(Character.init))
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    static func toLogin(_ request: Request) -> Response {
        redirect("/console/login?next=" + percent(request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")))
    }

    /// Only console paths; anything else (another host, `//evil`) becomes the queue.
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/console/"), !next.hasPrefix("//"), !next.contains("\\"), next.count < 1000 else { return "/console/" }
        return next
    }

    /// The queue's filters as a query string, re-encoded from known keys only.
    static func safeQuery(_ raw: String?) -> String {
        guard let raw else { return "" }
        var parts: [String] = []
        for pair in raw.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard let key = kv.first, ["kind", "user", "reason", "reported", "escalated"].contains(key) else { continue }
            let value = kv.count > 1 ? (kv[1].removingPercentEncoding ?? "") : ""
            parts.append(key + "=" + percent(String(value.prefix(200))))
        }
        return parts.joined(separator: "&")
    }

    static func queryString(_ request: Request) -> String { safeQuery(request.uri.query) }

    static func percent(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    static func clock(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle().time(includingFractionalSeconds: false)) + " UTC"
    }
}

/// A console failure shown as a page (not the API's JSON envelope).
struct ConsolePageError: Error {
    var status: HTTPResponse.Status
    var message: String
    var location: String?
}

/// Headers on every console answer: no caching, no framing, no referrer, a strict CSP (no inline script).
struct ConsoleHeadersMiddleware: RouterMiddleware {
    typealias Context = APIContext

    func handle(_ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as ConsolePageError {
            if let location = error.location, request.method == .post {
                response = ConsoleRoutes.redirect(location)
            } else {
                response = ConsolePages.plainError(error.status, error.message)
            }
        }
        response.headers.set("Content-Security-Policy", to: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        response.headers.set("X-Frame-Options", to: "DENY")
        response.headers.set("Referrer-Policy", to: "no-referrer")
        response.headers.set("X-Content-Type-Options", to: "nosniff")
        if response.headers[.cacheControl] == nil || response.headers[.contentType]?.hasPrefix("text/html") == true {
            response.headers[.cacheControl] = "no-store"
        }
        return response
    }
}

