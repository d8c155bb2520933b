import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore
import SluiceCore

/// The console's templates and static files (committed under `Console/Resources`, shipped as the target's
/// resources) and the rendering of pages. Mustache escapes every `{{value}}`, so user content is always text.
struct ConsolePages: Sendable {
    struct Asset: Sendable {
        var contentType: String
        var bytes: [UInt8]
    }

    let library: MustacheLibrary
    let assets: [String: Asset]

    /// Loads the templates and static files; a missing or broken template is an error naming it.
    static func load() throws -> ConsolePages {
        guard let resources = Bundle.module.url(forResource: "Resources", withExtension: nil) else {
            throw ConsolePagesError(message: "the console's resources are missing from the build")
        }
        var library = MustacheLibrary()
        let templates = resources.appendingPathComponent("templates")
        let names = try FileManager.default.contentsOfDirectory(atPath: templates.path).filter { $0.hasSuffix(".mustache") }
        for name in names {
            let text = try String(contentsOf: templates.appendingPathComponent(name), encoding: .utf8)
            do {
                try library.register(text, named: String(name.dropLast(".mustache".count)))
            } catch {
                throw ConsolePagesError(message: "console template \(name) does not parse: \(error)")
            }
        }
        var assets: [String: Asset] = [:]
        let statics = resources.appendingPathComponent("static")
        for name in try FileManager.default.contentsOfDirectory(atPath: statics.path) {
            let type = name.hasSuffix(".css") ? "text/css; charset=utf-8" : name.hasSuffix(".js") ? "text/javascript; charset=utf-8" : "application/octet-stream"
            assets[name] = Asset(contentType: type, bytes: Array(try Data(contentsOf: statics.appendingPathComponent(name))))
        }
        return ConsolePages(library: library, assets: assets)
    }

    func render(_ template: String, _ page: Any, status: HTTPResponse.Status = .ok) -> Response {
        guard let html = library.render(page, withTemplate: template) else {
            return Self.plainError(.internalServerError, "The page \(template) cannot be shown.")
        }
        return Response(status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        render("error", ErrorPage(heading: "\(status.code) \(status.reasonPhrase)", message: message), status: status)
    }

    /// For failures before a template can be used.
    static func plainError(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let escaped = message.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        let html = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>\(status.code)</title></head><body><h1>\(status.code) \(status.reasonPhrase)</h1><p>\(escaped)</p><p><a href=\"/console/\">Back to the queue</a></p></body></html>"
        return Response(status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}

struct ConsolePagesError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

// MARK: View models (what the templates read)

struct NavView {
    var reviewer: String
    var role: String
    var isAdmin: Bool
    var csrf: String
    var unblurAll: Bool
    var counts: [CountView]
}

struct CountView {
    var status: String
    var count: Int
}

struct Choice {
    var value: String
    var selected: Bool
}

struct LoginPage {
    var title = "Sign in"
    var csrf: String
    var next: String
    var error: String?
}

struct ErrorPage {
    var title = "Error"
    var heading: String
    var message: String
}

struct QueuePage {
    var title = "Queue"
    var nav: NavView
    var flash: String?
    var heading: String
    var total: Int
    var cards: [CardView]
    var kinds: [Choice]
    var user: String
    var reason: String
    var reported: Bool
    var escalated: Bool
    var back: String
    var csrf: String = ""
}

struct CardView {
    struct Bar {
        var name: String
        var level: Int
        var value: String
    }

    struct ImageView {
        var src: String
        var bars: [Bar]
        var exif: String?
    }

    struct Segment {
        var part: String
        var hit: Bool
        var title: String
    }

    struct TextView {
        var segments: [Segment]
        var priority: String?
    }

    struct EscalationView {
        var by: String
        var note: String?
    }

    var id: String
    var href: String
    var kind: String
    var userId: String
    var created: String
    var reason: String
    var image: ImageView?
    var text: TextView?
    var history: String?
    var escalation: EscalationView?
    var claimedBy: String?
    var appealOrReport: String?
    var decideAction: String
    var next: String
    var back: String

    init(_ item: Item, reviewer: Reviewer, escalation: Escalation?, claimedBy: String?, reportCount: Int, history: String?, next: String, back: String,
         appeal: Appeal? = nil) {
        id = item.id.rawValue
        href = ConsoleRoutes.itemHref(item.id)
        kind = item.kind.rawValue
        userId = item.userId
        created = item.createdAt.formatted(.iso8601)
        reason = item.reason ?? ""
        decideAction = ConsoleRoutes.itemHref(item.id).replacingOccurrences(of: "/console/items/", with: "/console/decide/")
        self.history = history
        self.claimedBy = claimedBy
        self.escalation = escalation.map { EscalationView(by: $0.by, note: $0.note) }
        appealOrReport = appeal.map { "appeal: \($0.message)" } ?? (reportCount > 0 ? "reported \(reportCount)×" : nil)
        self.next = next
        self.back = back
        if item.kind == .image {
            let bars = Self.bars(item.safeSearch)
            var exif: [String] = []
            if let found = item.exif {
                if found.hadGPS { exif.append("had GPS (removed)") }
                if let make = found.make {
                    // Many cameras repeat the make in the model ("Canon" + "Canon EOS 5D").
                    let model = found.model.map { $0.hasPrefix(make) ? $0 : "\(make) \($0)" } ?? make
                    exif.append("camera \(model)")
                }
                if let orientation = found.orientation, orientation != 1 { exif.append("orientation \(orientation)") }
            }
            image = ImageView(src: ConsoleRoutes.itemHref(item.id).replacingOccurrences(of: "/console/items/", with: "/console/media/"),
                              bars: bars, exif: exif.isEmpty ? "no EXIF findings" : exif.joined(separator: ", "))
        } else {
            text = TextView(segments: Self.segments(item.content?.text ?? "", matches: item.textVerdict?.matches ?? []),
                            priority: item.priority.map { "\($0.priority) (\($0.urgencyScore))" })
        }
    }

    /// The five SafeSearch likelihoods as bars (`l0` unknown … `l5` very likely).
    static func bars(_ search: SafeSearch?) -> [Bar] {
        [("adult", search?.adult), ("racy", search?.racy), ("violence", search?.violence), ("medical", search?.medical), ("spoof", search?.spoof)]
            .map { Bar(name: $0.0, level: level($0.1), value: $0.1?.rawValue ?? "none") }
    }

    static func level(_ value: Likelihood?) -> Int {
        switch value {
        case .veryUnlikely?: 1
        case .unlikely?: 2
        case .possible?: 3
        case .likely?: 4
        case .veryLikely?: 5
        default: 0
        }
    }

    /// The text cut at the filter's matches (UTF-16 offsets), so matches can be highlighted and everything stays escaped.
    static func segments(_ text: String, matches: [TextMatch]) -> [Segment] {
        let utf16 = Array(text.utf16)
        var segments: [Segment] = []
        var position = 0
        for match in matches.sorted(by: { $0.start < $1.start }) where match.start >= position && match.end <= utf16.count && match.start < match.end {
            if match.start > position {
                segments.append(Segment(part: String(decoding: utf16[position..<match.start], as: UTF16.self), hit: false, title: ""))
            }
            segments.append(Segment(part: String(decoding: utf16[match.start..<match.end], as: UTF16.self), hit: true,
                                    title: "\(match.term) · \(match.category) · \(match.severity.rawValue)"))
            position = match.end
        }
        if position < utf16.count {
            segments.append(Segment(part: String(decoding: utf16[position...], as: UTF16.self), hit: false, title: ""))
        }
        return segments
    }
}

struct AuditCardView {
    var id: String
    var href: String
    var userId: String
    var created: String
    var src: String
    var bars: [CardView.Bar]
    var auditAction: String

    init(_ item: Item) {
        id = item.id.rawValue
        href = ConsoleRoutes.itemHref(item.id)
        userId = item.userId
        created = item.createdAt.formatted(.iso8601)
        src = href.replacingOccurrences(of: "/console/items/", with: "/console/media/")
        auditAction = href.replacingOccurrences(of: "/console/items/", with: "/console/audit-check/")
        bars = CardView.bars(item.safeSearch)
    }
}

struct AuditQueuePage {
    var title = "Audit queue"
    var nav: NavView
    var flash: String?
    var waiting: Int
    var precision: String
    var agreed: Int
    var audited: Int
    var rate: String
    var cards: [AuditCardView]
    var csrf: String
}

struct ItemPage {
    struct Field {
        var name: String
        var value: String
    }

    struct EventView {
        var at: String
        var type: String
        var from: String
        var to: String
        var stage: String
        var detail: String
    }

    struct ReportView {
        var category: String
        var reporter: String
        var status: String
        var description: String?
    }

    struct Decided {
        var by: String
        var at: String
        var note: String?
        var mayUndo: Bool
        var undoAction: String
    }

    struct Other {
        var id: String
        var href: String
        var status: String
        var reason: String
    }

    var title: String
    var nav: NavView
    var flash: String?
    var id: String
    var status: String
    var userId: String
    var card: CardView?
    var decided: Decided?
    var fields: [Field]
    var events: [EventView]
    var reports: [ReportView]
    var others: [Other]
    var csrf: String = ""

    init(nav: NavView, flash: String?, item: Item, card: CardView?, reviewer: Reviewer, events: [ItemEvent], reports: [Report], others: [Item]) {
        title = item.id.rawValue
        self.nav = nav
        csrf = nav.csrf
        self.flash = flash
        id = item.id.rawValue
        status = item.status.rawValue
        userId = item.userId
        self.card = card
        decided = item.decision.map { decision in
            Decided(by: decision.by, at: decision.at.formatted(.iso8601), note: decision.note,
                    mayUndo: reviewer.role == .admin || decision.by == reviewer.name,
                    undoAction: ConsoleRoutes.itemHref(item.id).replacingOccurrences(of: "/console/items/", with: "/console/undo/"))
        }
        var fields: [Field] = [Field(name: "kind", value: item.kind.rawValue), Field(name: "user", value: item.userId),
                               Field(name: "status", value: item.status.rawValue), Field(name: "reason", value: item.reason ?? "—"),
                               Field(name: "created", value: item.createdAt.formatted(.iso8601)),
                               Field(name: "updated", value: item.updatedAt.formatted(.iso8601))]
        if let provider = item.provider { fields.append(Field(name: "provider", value: provider)) }
        if let search = item.safeSearch {
            fields.append(Field(name: "safeSearch", value: "adult \(search.adult.rawValue), racy \(search.racy.rawValue), violence \(search.violence.rawValue), medical \(search.medical.rawValue), spoof \(search.spoof.rawValue)"))
        }
        if let format = item.format { fields.append(Field(name: "format", value: format)) }
        if let width = item.width, let height = item.height { fields.append(Field(name: "size", value: "\(width) × \(height)")) }
        if let original = item.original { fields.append(Field(name: "original", value: original)) }
        if let approved = item.outputs.approved { fields.append(Field(name: "approved output", value: approved)) }
        if let text = item.content?.text { fields.append(Field(name: "text", value: text)) }
        if let verdict = item.textVerdict { fields.append(Field(name: "filter", value: verdict.reason ?? (verdict.allowed ? "allowed" : "not allowed"))) }
        if let priority = item.priority { fields.append(Field(name: "priority", value: "\(priority.priority) (\(priority.urgencyScore)): \(priority.reason)")) }
        if let caption = item.caption?.caption?.caption { fields.append(Field(name: "caption", value: caption)) }
        if let hash = item.contentHash { fields.append(Field(name: "content hash", value: hash)) }
        if let pdq = item.pdq { fields.append(Field(name: "PDQ hash", value: "\(pdq.hash.hex) (quality \(pdq.quality))")) }
        if let match = item.match {
            fields.append(Field(name: "bank match", value: "\(match.bank) (\(match.action.rawValue)), distance \(match.distance), bank hash \(match.hash.hex)"
                                + (match.acted ? "" : ", did not act") + (match.note.map { ": \($0)" } ?? "")))
        }
        if let reused = item.reused { fields.append(Field(name: "classification", value: "reused from \(reused.item) (distance \(reused.distance))")) }
        self.fields = fields
        self.events = events.map { event in
            EventView(at: event.at.formatted(.iso8601), type: event.type, from: event.fromStatus?.rawValue ?? "", to: event.toStatus?.rawValue ?? "",
                      stage: event.stage ?? "", detail: event.detail ?? "")
        }
        self.reports = reports.map { ReportView(category: $0.category, reporter: $0.reporterUserId ?? "(erased)", status: $0.status.rawValue, description: $0.description) }
        self.others = others.map { Other(id: $0.id.rawValue, href: ConsoleRoutes.itemHref($0.id), status: $0.status.rawValue, reason: $0.reason ?? "") }
    }
}

struct ReportGroupView {
    struct ReportView {
        var reportId: String
        var category: String
        var reporter: String
        var at: String
        var description: String?
    }

    var target: String
    var subject: String
    var href: String?
    var itemId: String?
    var status: String?
    var count: Int
    var reporters: Int
    var reports: [ReportView]

    init(target: String, subject: String, item: Item?, reports: [Report]) {
        self.target = target
        self.subject = subject
        href = item.map { ConsoleRoutes.itemHref($0.id) } ?? (target == "user" && Identifiers.isValidSegment(subject) ? "/console/?user=\(subject)" : nil)
        itemId = item?.id.rawValue
        status = item?.status.rawValue
        count = reports.count
        reporters = Set(reports.compactMap(\.reporterUserId)).count
        self.reports = reports.map {
            ReportView(reportId: $0.reportId, category: $0.category, reporter: $0.reporterUserId ?? "(erased)", at: $0.createdAt.formatted(.iso8601),
                       description: $0.description)
        }
    }
}

struct FlaggedUserView {
    var userId: String
    var why: String
}

struct ReportsPage {
    var title = "Reports"
    var nav: NavView
    var flash: String?
    var total: Int
    var groups: [ReportGroupView]
    var flagged: [FlaggedUserView]
    var hasFlagged = false
    var csrf: String = ""
}

struct AuditRow {
    var at: String
    var itemId: String
    var href: String
    var from: String
    var to: String
    var detail: String

    init(_ event: ItemEvent) {
        at = event.at.formatted(.iso8601)
        itemId = event.itemId.rawValue
        href = ConsoleRoutes.itemHref(event.itemId)
        from = event.fromStatus?.rawValue ?? ""
        to = event.toStatus?.rawValue ?? ""
        detail = event.detail ?? ""
    }
}

struct AuditPage {
    var title = "Audit"
    var nav: NavView
    var flash: String?
    var by: String
    var decision: String
    var rows: [AuditRow]
    var decisions: [Choice] = []
    var csrf: String = ""
}
