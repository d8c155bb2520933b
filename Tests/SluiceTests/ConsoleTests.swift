import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SluiceAPI
import SluiceCore
import SluiceServices
import SluiceTesting
import Testing

/// The review console as a reviewer's browser sees it: redirects, cookies, CSRF, pages, decisions that change
/// files and rows, roles; and reports that act.
@Suite(.serialized) struct ConsoleTests {
    static let password = "correct horse battery"
    static let review = SafeSearch(adult: .possible, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .unlikely)
    static let blocking = SafeSearch(adult: .veryLikely, spoof: .unlikely, medical: .unlikely, violence: .unlikely, racy: .veryLikely)

    /// Three uploads held for review (u1/a, u1/b, u2/c), accounts `rita` (reviewer) and `adam` (admin).
    static func seed(_ root: TemporaryDataRoot) async throws -> any StatusStore {
        let possible = try await FakeVisionServer.always(review)
        defer { possible.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u1", name: "a.jpg")
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "u1", name: "b.png")
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "u2", name: "c.jpg")
        let store = try await runOnce(root, server: possible)
        let accounts = ReviewerAccounts(store: store, cost: 4)
        _ = try await accounts.add("rita", role: .reviewer, password: password)
        _ = try await accounts.add("adam", role: .admin, password: password)
        return store
    }

    static func application(_ root: TemporaryDataRoot, edit: (inout PipelineConfig) -> Void = { _ in },
                            now: @escaping @Sendable () -> Date = Date.init) async throws -> some ApplicationProtocol {
        let config = root.config(endpoint: "http://127.0.0.1:9/v1", edit: edit)
        return buildApplication(services: try await Services.live(config: config, environment: [:], logger: quietLogger).api(),
                                environment: SeedClientTests.environment, now: now, logger: quietLogger)
    }

    /// A browser's cookie jar, just enough for these tests.
    final class Browser: @unchecked Sendable {
        var cookies: [String: String] = [:]

        func headers(_ extra: HTTPFields = [:]) -> HTTPFields {
            var headers = extra
            if !cookies.isEmpty { headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ") }
            return headers
        }

        func take(_ response: TestResponse) {
            for value in response.headers[values: .setCookie] {
                let pair = value.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { continue }
                if value.contains("Max-Age=0") || pair[1].isEmpty { cookies[pair[0]] = nil } else { cookies[pair[0]] = pair[1] }
            }
        }
    }

    static func field(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }

    static func form(_ fields: [(String, String)]) -> ByteBuffer {
        ByteBuffer(string: fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&"))
    }

    static let formType: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    /// Signs in and returns the session's CSRF token (read from the queue page).
    static func signIn(_ client: some TestClientProtocol, _ browser: Browser, as name: String, password: String = password) async throws -> String {
        let token = try await client.execute(uri: "/console/login", method: .get, headers: browser.headers()) { response in
            browser.take(response)
            return try #require(field("csrf", in: String(buffer: response.body)))
        }
        try await client.execute(uri: "/console/login", method: .post, headers: browser.headers(formType),
                                 body: form([("csrf", token), ("username", name), ("password", password), ("next", "/console/")])) { response in
            #expect(response.status == .seeOther, "\(String(buffer: response.body))")
            browser.take(response)
        }
        return try await client.execute(uri: "/console/", method: .get, headers: browser.headers()) { response in
            #expect(response.status == .ok)
            return try #require(field("csrf", in: String(buffer: response.body)))
        }
    }

    @Test func signInSessionsAndSecurityHeaders() async throws {
        let root = try TemporaryDataRoot()
        _ = try await Self.seed(root)
        let browser = Browser()
        try await Self.application(root).test(.router) { client in
            // Signed out: every page sends you to sign in; app tokens and user JWTs do not open the console.
            for headers in [HTTPFields(), SeedClientTests.app, SeedClientTests.user("u1")] {
                try await client.execute(uri: "/console/", method: .get, headers: headers) { response in
                    #expect(response.status == .seeOther)
                    #expect(response.headers[.location] == "/console/login?next=%2Fconsole%2F")
                }
            }
            try await client.execute(uri: "/console/items/u1/a", method: .get) { response in
                #expect(response.status == .seeOther && response.headers[.location]?.hasPrefix("/console/login?next=") == true)
            }
            // The sign-in form's CSRF: without the cookie's token, refused.
            try await client.execute(uri: "/console/login", method: .post, headers: Self.formType,
                                     body: Self.form([("username", "rita"), ("password", Self.password)])) { response in
                #expect(response.status == .forbidden)
            }
            // Wrong password.
            let token = try await client.execute(uri: "/console/login", method: .get) { response in
                browser.take(response)
                let cookie = response.headers[values: .setCookie].first { $0.hasPrefix("sluice_login_csrf=") } ?? ""
                #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "\(cookie)")
                #expect(response.headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true)
                return try #require(Self.field("csrf", in: String(buffer: response.body)))
            }
            try await client.execute(uri: "/console/login", method: .post, headers: browser.headers(Self.formType),
                                     body: Self.form([("csrf", token), ("username", "rita"), ("password", "wrong password!")])) { response in
                #expect(response.status == .unauthorized)
                #expect(String(buffer: response.body).contains("Wrong name or password"))
                #expect(response.headers[values: .setCookie].allSatisfy { !$0.hasPrefix("sluice_console=") })
            }
            // Right password: a session cookie HttpOnly, SameSite=Strict, scoped to /console.
            try await client.execute(uri: "/console/login", method: .post, headers: browser.headers(Self.formType),
                                     body: Self.form([("csrf", token), ("username", "rita"), ("password", Self.password),
                                                      ("next", "https://evil.example/")])) { response in
                #expect(response.status == .seeOther && response.headers[.location] == "/console/", "open redirects are refused")
                let cookie = response.headers[values: .setCookie].first { $0.hasPrefix("sluice_console=") } ?? ""
                #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/console"), "\(cookie)")
                #expect(!cookie.contains("Secure"))
                browser.take(response)
            }
            try await client.execute(uri: "/console/", method: .get, headers: browser.headers()) { response in
                #expect(response.status == .ok)
                let html = String(buffer: response.body)
                for id in ["u1/a", "u1/b", "u2/c"] { #expect(html.contains("data-item-id=\"\(id)\""), "\(id)") }
                #expect(html.contains("data-action=\"approve\"") && html.contains("data-action=\"block\"") && html.contains("data-action=\"escalate\""))
                #expect(response.headers[.xFrameOptionsTest] == "DENY" && response.headers[.referrerPolicyTest] == "no-referrer")
                #expect(response.headers[.cacheControl] == "no-store")
                #expect(!html.contains("<script>"), "no inline script")
            }
            // Reviewers do not reach admin pages.
            try await client.execute(uri: "/console/audit", method: .get, headers: browser.headers()) { response in
                #expect(response.status == .forbidden)
            }
            try await client.execute(uri: "/console/audit.csv", method: .get, headers: browser.headers()) { response in
                #expect(response.status == .forbidden)
            }
        }
        // The session survives a restart of the server (it lives in the store).
        try await Self.application(root).test(.router) { client in
            try await client.execute(uri: "/console/", method: .get, headers: browser.headers()) { response in
                #expect(response.status == .ok)
            }
        }
        // Disabling the account ends its sessions.
        let store = try await Services.store(config: root.config(endpoint: "http://127.0.0.1:9/v1"))
        try await ReviewerAccounts(store: store, cost: 4).setDisabled("rita", true)
        try await Self.application(root).test(.router) { client in
            try await client.execute(uri: "/console/", method: .get, headers: browser.headers()) { response in
                #expect(response.status == .seeOther)
            }
        }
    }

    @Test func signInIsThrottledPerAccount() async throws {
        let root = try TemporaryDataRoot()
        _ = try await Self.seed(root)
        // The throttle counts in fixed 15-minute windows: the clock starts one second into a window, so a slow run
        // cannot cross into the next one between the attempts.
        let shift = 900 - Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 900) + 1
        try await Self.application(root, now: { Date().addingTimeInterval(shift) }).test(.router) { client in
            let browser = Browser()
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<6 {
                let token = try await client.execute(uri: "/console/login", method: .get, headers: browser.headers()) { response in
                    browser.take(response)
                    return Self.field("csrf", in: String(buffer: response.body)) ?? ""
                }
                try await client.execute(uri: "/console/login", method: .post, headers: browser.headers(Self.formType),
                                         body: Self.form([("csrf", token), ("username", "adam"), ("password", "guess guess guess")])) { response in
                    statuses.append(response.status)
                }
            }
            #expect(statuses == Array(repeating: .unauthorized, count: 5) + [.tooManyRequests], "\(statuses)")
            // Even the right password waits out the window.
            let token = try await client.execute(uri: "/console/login", method: .get, headers: browser.headers()) { response in
                browser.take(response)
                return Self.field("csrf", in: String(buffer: response.body)) ?? ""
            }
            try await client.execute(uri: "/console/login", method: .post, headers: browser.headers(Self.formType),
                                     body: Self.form([("csrf", token), ("username", "adam"), ("password", Self.password)])) { response in
                #expect(response.status == .tooManyRequests)
                #expect(String(buffer: response.body).contains("Too many sign-in attempts"))
            }
            try await client.execute(uri: "/console/", method: .get, headers: browser.headers()) { response in
                #expect(response.status == .seeOther)
            }
        }
    }

    @Test func decisionsChangeFilesAndRowsAndNeedTheToken() async throws {
        let root = try TemporaryDataRoot()
        let store = try await Self.seed(root)
        try await Self.application(root).test(.router) { client in
            let rita = Browser()
            let csrf = try await Self.signIn(client, rita, as: "rita")
            // Without the CSRF token: 403, nothing changes.
            try await client.execute(uri: "/console/decide/u1/a", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("action", "approve")])) { response in
                #expect(response.status == .forbidden)
            }
            #expect(try await store.item("u1/a")?.status == .review)
            // A note with a NUL is refused with a page naming it; nothing is decided.
            try await client.execute(uri: "/console/decide/u1/a", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("action", "approve"), ("note", "ok\u{0}hidden")])) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains("NUL"))
            }
            #expect(try await store.item("u1/a")?.status == .review)
            // Approve: outputs written exactly as the CLI path; the next item is focused.
            try await client.execute(uri: "/console/decide/u1/a", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("action", "approve"), ("note", "fine <b>"), ("next", "u1/b")])) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location]?.contains("focus=u1%2Fb") == true, "\(response.headers[.location] ?? "")")
            }
            let approved = try #require(try await store.item("u1/a"))
            #expect(approved.status == .approved && approved.decision?.by == "rita" && approved.decision?.note == "fine <b>")
            #expect(root.allFiles().contains("approved/u1/a.jpg") && root.allFiles().contains("thumbnails/u1/a.jpg"))
            #expect(!root.allFiles().contains { $0.hasPrefix("review/u1/a") })
            // Block: the original goes to quarantine.
            try await client.execute(uri: "/console/decide/u1/b", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("action", "block")])) { response in
                #expect(response.status == .seeOther)
            }
            #expect(try await store.item("u1/b")?.status == .blocked)
            #expect(root.allFiles().contains("quarantine/u1/b.png"))
            // Escalate, then only an admin decides it.
            try await client.execute(uri: "/console/decide/u2/c", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("action", "escalate"), ("note", "not sure")])) { response in
                #expect(response.status == .seeOther)
            }
            try await client.execute(uri: "/console/?escalated=1", method: .get, headers: rita.headers()) { response in
                let html = String(buffer: response.body)
                #expect(html.contains("data-item-id=\"u2/c\"") && html.contains("escalated by rita: not sure"))
            }
            try await client.execute(uri: "/console/decide/u2/c", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("action", "block")])) { response in
                #expect(response.status == .forbidden)
            }
            // An item opened by one reviewer is claimed: another cannot decide it meanwhile.
            let adam = Browser()
            let adminCSRF = try await Self.signIn(client, adam, as: "adam")
            try await client.execute(uri: "/console/items/u2/c", method: .get, headers: adam.headers()) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.cacheControl] == "no-store")
                #expect(String(buffer: response.body).contains("<th>PDQ hash</th>"), "the item page shows the image's PDQ hash")
            }
            // Undo: a reviewer reverses their own decision (the approved item goes back to review, outputs withdrawn).
            try await client.execute(uri: "/console/undo/u1/a", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf)])) { response in
                #expect(response.status == .seeOther)
            }
            #expect(try await store.item("u1/a")?.status == .review)
            #expect(!root.allFiles().contains("approved/u1/a.jpg"))
            // Bulk: the admin approves both (u1/a is unclaimed again only for rita; adam takes what is free).
            try await client.execute(uri: "/console/bulk", method: .post, headers: adam.headers(Self.formType),
                                     body: Self.form([("csrf", adminCSRF), ("action", "approve"), ("ids[]", "u2/c"), ("ids[]", "u1/a")])) { response in
                #expect(response.status == .seeOther)
                let location = response.headers[.location]?.removingPercentEncoding ?? ""
                #expect(location.contains("approved 1") && location.contains("u1/a is open with rita"), "\(location) \(String(buffer: response.body))")
            }
            #expect(try await store.item("u2/c")?.status == .approved)
            // Admin pages: the audit lists every human decision, exportable as CSV.
            try await client.execute(uri: "/console/audit", method: .get, headers: adam.headers()) { response in
                #expect(response.status == .ok)
                let html = String(buffer: response.body)
                #expect(html.contains("data-item-id=\"u1/b\"") && html.contains("by rita"))
            }
            try await client.execute(uri: "/console/audit.csv?by=rita", method: .get, headers: adam.headers()) { response in
                #expect(response.headers[.contentType] == "text/csv; charset=utf-8")
                let csv = String(buffer: response.body)
                #expect(csv.hasPrefix("at,itemId,fromStatus,toStatus,detail\r\n") && csv.contains("\"u1/b\",\"review\",\"blocked\""), "\(csv)")
            }
            // The media route serves a re-encoded preview only to signed-in reviewers.
            try await client.execute(uri: "/console/media/u1/a", method: .get, headers: rita.headers()) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "image/jpeg" && response.headers[.cacheControl] == "no-store")
                #expect(Array(response.body.readableBytesView.prefix(2)) == [0xFF, 0xD8])
            }
            try await client.execute(uri: "/console/media/u1/a", method: .get) { response in
                #expect(response.status == .unauthorized)
            }
        }
    }

    @Test func naughtyStringsAreRenderedAsText() async throws {
        let root = try TemporaryDataRoot()
        let store = try await Self.seed(root)
        let strings = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: TestEnvironment.fixture("text/blns.json"))) as? [String])
            .filter { $0.contains("<") || $0.contains("&") || $0.contains("\"") }
        try #require(strings.count > 20)
        let queue = root.url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        var lines = ""
        for (index, string) in strings.enumerated() {
            let line = try JSONSerialization.data(withJSONObject: ["id": "n\(index)", "userId": "u9", "text": string])
            lines += String(decoding: line, as: UTF8.self) + "\n"
        }
        try Data(lines.utf8).writeClosingOnExec(to: queue.appendingPathComponent("blns.jsonl"))
        let vision = try await FakeVisionServer.always(Self.review)
        defer { vision.stop() }
        _ = try await runOnce(root, server: vision)
        try await Self.application(root).test(.router) { client in
            let browser = Browser()
            _ = try await Self.signIn(client, browser, as: "rita")
            for index in strings.indices {
                guard try await store.item(ItemID("n\(index)")) != nil else { continue }
                try await client.execute(uri: "/console/items/n\(index)", method: .get, headers: browser.headers()) { response in
                    #expect(response.status == .ok)
                    let html = String(buffer: response.body)
                    #expect(!html.contains(strings[index]) || !strings[index].contains("<"), "n\(index) rendered raw")
                    if strings[index].contains("<") { #expect(html.contains("&lt;"), "n\(index) escaped") }
                }
            }
            for raw in ["..%2F..%2Fetc", "a%00b", "%3Cscript%3E"] {
                try await client.execute(uri: "/console/items/\(raw)", method: .get, headers: browser.headers()) { response in
                    #expect(response.status == .badRequest || response.status == .notFound, "\(raw): \(response.status)")
                }
            }
        }
    }

    /// A message in a conversation is taken back to review only by reports from people who can read it (its sender,
    /// recipient and members); anyone else's reports are kept for moderators but do not count.
    @Test func reportsOnAConversationsMessageCountOnlyFromItsReaders() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let store = try await runOnce(root, server: clean)
        try await store.recordVerdict(Item(id: "dm-1", kind: .text, userId: "bob", status: .approved,
                                           content: TextContent(text: "see you at 8", recipientId: "carol", conversationId: "c1",
                                                                members: ["bob", "carol", "dan", "eve"])))
        try await Self.application(root) { $0.report.autoReviewAfter = 3 }.test(.router) { client in
            for reporter in ["x1", "x2", "x3", "carol", "dan"] {
                try await client.execute(uri: "/v1/functions/submit_report", method: .post, headers: SeedClientTests.user(reporter),
                                         body: ByteBuffer(string: #"{"data": {"messageId": "dm-1", "category": "harassment"}}"#)) { response in
                    #expect(response.status == .ok)
                }
            }
            #expect(try await store.item("dm-1")?.status == .approved, "three outsiders and two readers are not three readers")
            #expect(try await store.reports().count == 5, "every report is kept")
            try await client.execute(uri: "/v1/functions/submit_report", method: .post, headers: SeedClientTests.user("eve"),
                                     body: ByteBuffer(string: #"{"data": {"messageId": "dm-1", "category": "harassment"}}"#)) { response in
                #expect(response.status == .ok)
            }
            let item = try #require(try await store.item("dm-1"))
            #expect(item.status == .review && item.reason == "reported by 3 users")
        }
    }

    @Test func reportsActAndBackendsResolveThem() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "owner", name: "pic.jpg")
        let store = try await runOnce(root, server: clean)
        #expect(try await store.item("owner/pic")?.status == .approved)
        try await Self.application(root) { $0.report.autoReviewAfter = 3 }.test(.router) { client in
            // Two reports from one user and one from another: two distinct reporters, nothing happens yet.
            for reporter in ["r1", "r1", "r2"] {
                try await client.execute(uri: "/v1/functions/submit_report", method: .post, headers: SeedClientTests.user(reporter),
                                         body: ByteBuffer(string: #"{"data": {"messageId": "owner/pic", "category": "inappropriate"}}"#)) { response in
                    #expect(response.status == .ok)
                }
            }
            #expect(try await store.item("owner/pic")?.status == .approved)
            try await client.execute(uri: "/v1/functions/submit_report", method: .post, headers: SeedClientTests.user("r3"),
                                     body: ByteBuffer(string: #"{"data": {"messageId": "owner/pic", "category": "spam"}}"#)) { response in
                #expect(response.status == .ok)
            }
            let item = try #require(try await store.item("owner/pic"))
            #expect(item.status == .review && item.reason == "reported by 3 users")
            #expect(!root.allFiles().contains("approved/owner/pic.jpg") && root.allFiles().contains("review/owner/pic.jpg"))
            try await client.execute(uri: "/v1/images/approved/owner/pic.jpg", method: .get, headers: SeedClientTests.app) { response in
                #expect(response.status == .notFound)
            }
            // Seed 004's reportUser.
            try await client.execute(uri: "/v1/functions/reportUser", method: .post, headers: SeedClientTests.user("r1"),
                                     body: ByteBuffer(string: #"{"data": {"reporterID": "r1", "reportedID": "owner", "reason": "spams everyone"}}"#)) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/v1/functions/reportUser", method: .post, headers: SeedClientTests.user("r1"),
                                     body: ByteBuffer(string: #"{"data": {"reporterID": "r2", "reportedID": "owner", "reason": "x"}}"#)) { response in
                #expect(response.status == .forbidden)
            }
            // Backends list and resolve.
            let reportId = try await client.execute(uri: "/v1/reports?status=open", method: .get, headers: SeedClientTests.app) { response in
                #expect(response.status == .ok)
                let reports = try #require(SeedClientTests.json(response.body)["reports"] as? [[String: Any]])
                #expect(reports.count == 5 && reports.contains { $0["target"] as? String == "user" && $0["messageId"] as? String == "owner" })
                return try #require(reports.first?["reportId"] as? String)
            }
            try await client.execute(uri: "/v1/reports?status=open", method: .get, headers: SeedClientTests.user("r1")) { response in
                #expect(response.status == .forbidden)
            }
            try await client.execute(uri: "/v1/reports?status=lost", method: .get, headers: SeedClientTests.app) { response in
                #expect(response.status == .badRequest)
            }
            try await client.execute(uri: "/v1/reports/\(reportId)/resolve", method: .post, headers: SeedClientTests.app,
                                     body: ByteBuffer(string: #"{"status": "dismissed", "note": "duplicate"}"#)) { response in
                #expect(response.status == .ok)
                #expect(SeedClientTests.json(response.body)["status"] as? String == "dismissed")
            }
            try await client.execute(uri: "/v1/reports/\(reportId)/resolve", method: .post, headers: SeedClientTests.app,
                                     body: ByteBuffer(string: #"{"status": "resolved"}"#)) { response in
                #expect(response.status == .notFound, "already dismissed")
            }
            try await client.execute(uri: "/v1/reports?status=open", method: .get, headers: SeedClientTests.app) { response in
                #expect((SeedClientTests.json(response.body)["reports"] as? [Any])?.count == 4)
            }
        }
    }

    /// A blocked message is appealed like an image, through `POST /v1/appeals` (which names the item in the body: the
    /// path `/v1/items/{textId}/appeal` is an image's, one called `appeal`), and reaches the console.
    @Test func blockedMessagesAreAppealedByTheirOwner() async throws {
        let root = try TemporaryDataRoot()
        let server = try await FakeVisionServer.always(cleanResult)
        defer { server.stop() }
        try root.writeQueue("m.jsonl", [#"{"id": "m1", "userId": "t1", "text": "total sh1t"}"#,
                                        #"{"id": "m2", "userId": "t1", "text": "see you at the cocktail bar"}"#])
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "t1", name: "appeal.jpg")
        let store = try await runOnce(root, server: server)
        #expect(try await store.item("m1")?.status == .blocked)
        #expect(try await store.item("m2")?.status == .approved)
        #expect(try await store.item("t1/appeal")?.status == .approved)
        _ = try await ReviewerAccounts(store: store, cost: 4).add("rita", role: .reviewer, password: Self.password)
        try await Self.application(root).test(.router) { client in
            func appeal(_ body: String, as user: String?, _ check: @escaping (TestResponse) throws -> Void) async throws {
                try await client.execute(uri: "/v1/appeals", method: .post, headers: user.map { SeedClientTests.user($0) } ?? [:],
                                         body: ByteBuffer(string: body)) { try check($0) }
            }
            let message = #"{"item": "m1", "message": "it was a quote"}"#
            try await appeal(message, as: nil) { #expect($0.status == .unauthorized) }
            try await appeal(message, as: "someone") { #expect($0.status == .notFound, "only the owner") }
            try await appeal(#"{"item": "m1"}"#, as: "t1") { #expect($0.status == .badRequest) }
            try await appeal(#"{"item": "a/b/c", "message": "x"}"#, as: "t1") { response in
                let error = SeedClientTests.json(response.body)["error"] as? [String: Any]
                #expect(response.status == .badRequest && (error?["message"] as? String)?.contains("an image is {userId}/{imageId}") == true, "\(String(buffer: response.body))")
            }
            try await appeal(#"{"item": "m2", "message": "why"}"#, as: "t1") { response in
                #expect(response.status == .conflict && String(buffer: response.body).contains("only blocked items can be appealed"))
            }
            try await appeal(message, as: "t1") { response in
                #expect(response.status == .accepted)
                #expect(SeedClientTests.json(response.body)["status"] as? String == "review")
            }
            try await appeal(message, as: "t1") { #expect($0.status == .conflict) }
            // The image path is still the image's: an image called `appeal` is read as before.
            try await client.execute(uri: "/v1/items/t1/appeal", method: .get, headers: SeedClientTests.user("t1")) { response in
                #expect(response.status == .ok && SeedClientTests.json(response.body)["status"] as? String == "approved")
            }
            let rita = Browser()
            _ = try await Self.signIn(client, rita, as: "rita")
            try await client.execute(uri: "/console/", method: .get, headers: rita.headers()) { response in
                #expect(String(buffer: response.body).contains("appeal: it was a quote"))
            }
        }
        #expect(try await store.item("m1")?.status == .review)
        #expect(try await store.events(of: "m1").last?.detail?.contains("appeal by the owner (it was a quote)") == true)
    }

    @Test func auditSamplesAndAppealsReachAPerson() async throws {
        let root = try TemporaryDataRoot()
        let clean = try await FakeVisionServer.always(cleanResult)
        defer { clean.stop() }
        let blocked = try await FakeVisionServer.always(Self.blocking)
        defer { blocked.stop() }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "s1", name: "one.jpg")
        try root.drop(TestEnvironment.fixture("images/photos/coffee.png"), user: "s1", name: "two.png")
        let store = try await runOnce(root, server: clean) { $0.review.auditSampleRate = 1 }
        try root.drop(TestEnvironment.fixture("images/photos/rocket.jpg"), user: "o1", name: "mine.jpg")
        _ = try await runOnce(root, server: blocked)
        #expect(try await store.item("o1/mine")?.status == .blocked)
        _ = try await ReviewerAccounts(store: store, cost: 4).add("rita", role: .reviewer, password: Self.password)
        try await Self.application(root).test(.router) { client in
            let rita = Browser()
            let csrf = try await Self.signIn(client, rita, as: "rita")
            try await client.execute(uri: "/console/audit-queue", method: .get, headers: rita.headers()) { response in
                let html = String(buffer: response.body)
                #expect(html.contains("data-item-id=\"s1/one\"") && html.contains("data-item-id=\"s1/two\"") && html.contains("not measured yet"))
            }
            try await client.execute(uri: "/console/audit-check/s1/one", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("verdict", "agree")])) { response in
                #expect(response.status == .seeOther)
            }
            try await client.execute(uri: "/console/audit-check/s1/two", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("verdict", "disagree")])) { response in
                #expect(response.status == .seeOther)
            }
            try await client.execute(uri: "/console/audit-check/s1/two", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("verdict", "agree")])) { response in
                #expect(response.status == .conflict, "checked once")
            }
            #expect(try await store.item("s1/one")?.status == .approved)
            let disputed = try #require(try await store.item("s1/two"))
            #expect(disputed.status == .review && disputed.reason == "audit: approval disputed by rita")
            #expect(!root.allFiles().contains("approved/s1/two.jpg"))
            try await client.execute(uri: "/console/audit-queue", method: .get, headers: rita.headers()) { response in
                #expect(String(buffer: response.body).contains("50.0%"))
            }

            // The owner appeals their blocked image; it returns to review marked as an appeal.
            let body = ByteBuffer(string: #"{"message": "it is a rocket, honestly"}"#)
            try await client.execute(uri: "/v1/items/o1/mine/appeal", method: .post, headers: SeedClientTests.user("s1"), body: body) { response in
                #expect(response.status == .notFound, "only the owner")
            }
            try await client.execute(uri: "/v1/items/o1/mine/appeal", method: .post, headers: SeedClientTests.user("o1"),
                                     body: ByteBuffer(string: #"{"message": ""}"#)) { response in
                #expect(response.status == .badRequest)
            }
            try await client.execute(uri: "/v1/items/o1/mine/appeal", method: .post, headers: SeedClientTests.user("o1"), body: body) { response in
                #expect(response.status == .accepted)
                #expect(SeedClientTests.json(response.body)["status"] as? String == "review")
            }
            try await client.execute(uri: "/v1/items/o1/mine/appeal", method: .post, headers: SeedClientTests.user("o1"), body: body) { response in
                #expect(response.status == .conflict)
                #expect((SeedClientTests.json(response.body)["error"] as? [String: Any])?["status"] as? String == "FAILED_PRECONDITION")
            }
            #expect(root.allFiles().contains("review/o1/mine.jpg") && !root.allFiles().contains { $0.hasPrefix("quarantine/o1/") })
            try await client.execute(uri: "/console/", method: .get, headers: rita.headers()) { response in
                #expect(String(buffer: response.body).contains("appeal: it is a rocket, honestly"))
            }
            try await client.execute(uri: "/console/decide/o1/mine", method: .post, headers: rita.headers(Self.formType),
                                     body: Self.form([("csrf", csrf), ("action", "approve")])) { response in
                #expect(response.status == .seeOther)
            }
            #expect(try await store.item("o1/mine")?.status == .approved)
            #expect(root.allFiles().contains("approved/o1/mine.jpg"))
        }
    }
}

extension HTTPField.Name {
    static let contentSecurityPolicy = Self("Content-Security-Policy")!
    static let xFrameOptionsTest = Self("X-Frame-Options")!
    static let referrerPolicyTest = Self("Referrer-Policy")!
}
