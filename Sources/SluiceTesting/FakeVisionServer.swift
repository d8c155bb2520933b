import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import SluiceCore
import Synchronization

/// A Google Vision `images:annotate` stand-in on loopback. It checks the exact request shape of every call
/// (method, path, headers, JSON body, base64 JPEG, feature) and answers whatever the test's handler says.
public final class FakeVisionServer: Sendable {
    /// One request as received, after the shape checks.
    public struct Received: Sendable {
        public var path: String
        public var query: String?
        /// Header values by lower-cased name.
        public var headers: [String: String]
        /// The decoded image bytes of `requests[0].image.content`, when present.
        public var image: Data?
    }

    public enum Reply: Sendable {
        case safeSearch(SafeSearch)
        /// Any status and body, e.g. 500, or 429 with a Retry-After header.
        case http(status: Int, body: String, headers: [String: String] = [:])
        /// Google's per-image error object inside a 200 answer.
        case imageError(code: Int, message: String)
        /// Waits, then answers (for timeouts).
        indirect case delayed(seconds: Double, then: Reply)
        /// Answers once `until` returns: a test holds the calls until it has seen what it waits for, however slow the
        /// machine (a fixed delay can run out first).
        indirect case held(until: @Sendable () async -> Void, then: Reply)
        /// Answers `result` with its head and first byte at once, then the rest of the body a byte every `every`
        /// seconds: a server that answers and then drips (a timeout must cover the body too).
        case dripped(every: Double, result: SafeSearch)
    }

    /// A gate a test opens once: `wait` returns when it is open (for `Reply.held`).
    public actor Gate {
        private var isOpen = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        public init() {}

        public func wait() async {
            if isOpen { return }
            await withCheckedContinuation { waiting.append($0) }
        }

        public func open() {
            isOpen = true
            for continuation in waiting { continuation.resume() }
            waiting.removeAll()
        }
    }

    private struct State {
        var received: [Received] = []
        var problems: [String] = []
    }

    private let state = Mutex(State())
    private let handler: @Sendable (Received, Int) -> Reply
    private let server: LoopbackServer.Running
    public var port: Int { server.port }

    /// Base URL to put in `vision.endpoint`.
    public var endpoint: String { "http://127.0.0.1:\(port)/v1" }

    /// Every request received so far.
    public var received: [Received] { state.withLock { $0.received } }

    /// Shape violations seen so far; a test expects this to be empty.
    public var problems: [String] { state.withLock { $0.problems } }

    /// Starts on a free loopback port. `handler` gets each request and its 0-based call index.
    public static func start(_ handler: @escaping @Sendable (Received, Int) -> Reply) async throws -> FakeVisionServer {
        let box = Mutex<FakeVisionServer?>(nil)
        let router = Router()
        router.post("**") { request, _ -> Response in
            guard let server = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return try await server.respond(to: request)
        }
        router.get("**") { _, _ -> Response in Response(status: .notFound) }
        let running = await LoopbackServer.start(router, name: "fake-vision")
        let server = FakeVisionServer(server: running, handler: handler)
        box.withLock { $0 = server }
        return server
    }

    /// A server that answers every request with the same classification.
    public static func always(_ result: SafeSearch) async throws -> FakeVisionServer {
        try await start { _, _ in .safeSearch(result) }
    }

    private init(server: LoopbackServer.Running, handler: @escaping @Sendable (Received, Int) -> Reply) {
        self.server = server
        self.handler = handler
    }

    public func stop() { server.stop() }

    deinit { server.stop() }

    private func respond(to request: Request) async throws -> Response {
        var request = request
        let body = try await request.collectBody(upTo: 64 << 20)
        var problems: [String] = []
        if request.uri.path != "/v1/images:annotate" { problems.append("path is \(request.uri.path), expected /v1/images:annotate") }
        if request.headers[.contentType]?.hasPrefix("application/json") != true {
            problems.append("Content-Type is \(request.headers[.contentType] ?? "missing"), expected application/json")
        }
        var image: Data?
        let json = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
        if let json {
            let requests = json["requests"] as? [[String: Any]] ?? []
            if requests.count != 1 { problems.append("requests has \(requests.count) entries, expected 1") }
            if let first = requests.first {
                let content = (first["image"] as? [String: Any])?["content"] as? String
                image = content.flatMap { Data(base64Encoded: $0) }
                if image == nil { problems.append("image.content is missing or not base64") }
                if let image, !image.starts(with: [0xFF, 0xD8, 0xFF]) { problems.append("image.content is not a JPEG") }
                let features = first["features"] as? [[String: Any]] ?? []
                if features.map({ $0["type"] as? String }) != ["SAFE_SEARCH_DETECTION"] {
                    problems.append("features are \(features), expected one SAFE_SEARCH_DETECTION")
                }
            }
        } else {
            problems.append("body is not a JSON object")
        }
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
        let received = Received(path: request.uri.path, query: request.uri.query, headers: headers, image: image)
        let index = state.withLock { state in
            state.received.append(received)
            state.problems.append(contentsOf: problems)
            return state.received.count - 1
        }
        return try await render(handler(received, index))
    }

    private func render(_ reply: Reply) async throws -> Response {
        switch reply {
        case let .safeSearch(result):
            return Self.json(200, Self.answer(result))
        case let .imageError(code, message):
            return Self.json(200, "{\"responses\":[{\"error\":{\"code\":\(code),\"message\":\"\(message)\"}}]}")
        case let .http(status, body, headers):
            var response = Self.json(status, body)
            for (name, value) in headers {
                if let field = HTTPField.Name(name) { response.headers[field] = value }
            }
            return response
        case let .delayed(seconds, then):
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            return try await render(then)
        case let .held(until, then):
            await until()
            return try await render(then)
        case let .dripped(every, result):
            return Response(status: .ok, headers: [.contentType: "application/json"], body: LoopbackServer.dripping(Array(Self.answer(result).utf8), every: every))
        }
    }

    private static func answer(_ result: SafeSearch) -> String {
        let annotation = SafeSearchCategory.allCases.map { "\"\($0.rawValue)\":\"\(result[$0].rawValue)\"" }.joined(separator: ",")
        return "{\"responses\":[{\"safeSearchAnnotation\":{\(annotation)}}]}"
    }

    private static func json(_ status: Int, _ body: String) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
