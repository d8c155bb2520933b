import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import Synchronization

/// A generic JSON API stand-in on loopback (OpenAI, Anthropic, Gemini, OpenAI moderation): records every
/// request exactly as sent and answers whatever the test's handler returns, including error bodies and 429s.
public final class FakeJSONServer: Sendable {
    public struct Received: Sendable {
        public var method: String
        public var path: String
        public var query: String?
        /// Header values by lower-cased name.
        public var headers: [String: String]
        public var body: Data

        /// The body as a JSON object (nil if it is not one).
        public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
    }

    public struct Reply: Sendable {
        public var status: Int
        public var body: Data
        public var headers: [String: String]
        public var delay: Double
        /// Awaited before the answer goes (a test's gate: the answer waits until the test opens it).
        public var held: (@Sendable () async -> Void)?
        /// When above 0: the head and the body's first byte go at once, then the rest a byte every `dripEvery` seconds.
        public var dripEvery: Double

        public init(status: Int = 200, body: String, headers: [String: String] = [:], delay: Double = 0, dripEvery: Double = 0) {
            self.status = status
            self.body = Data(body.utf8)
            self.headers = headers
            self.delay = delay
            self.dripEvery = dripEvery
        }

        public init(status: Int = 200, bytes: Data, headers: [String: String] = [:]) {
            self.status = status
            body = bytes
            self.headers = headers
            delay = 0
            dripEvery = 0
        }
    }

    private let state = Mutex<[Received]>([])
    private let handler: @Sendable (Received, Int) -> Reply
    private let server: LoopbackServer.Running
    public var port: Int { server.port }

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var received: [Received] { state.withLock { $0 } }

    public static func start(_ handler: @escaping @Sendable (Received, Int) -> Reply) async throws -> FakeJSONServer {
        let box = Mutex<FakeJSONServer?>(nil)
        let router = Router()
        let respond: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            guard let server = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return try await server.respond(to: request)
        }
        router.post("**", use: respond)
        router.get("**", use: respond)
        let running = await LoopbackServer.start(router, name: "fake-json")
        let server = FakeJSONServer(server: running, handler: handler)
        box.withLock { $0 = server }
        return server
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
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName.lowercased()] = field.value }
        let received = Received(method: request.method.rawValue, path: request.uri.path, query: request.uri.query,
                                headers: headers, body: Data(buffer: body))
        let index = state.withLock { state in
            state.append(received)
            return state.count - 1
        }
        let reply = handler(received, index)
        if let held = reply.held { await held() }
        if reply.delay > 0 { try await Task.sleep(nanoseconds: UInt64(reply.delay * 1_000_000_000)) }
        var response = Response(status: .init(code: reply.status), headers: [.contentType: "application/json"],
                                body: reply.dripEvery > 0 ? LoopbackServer.dripping(Array(reply.body), every: reply.dripEvery)
                                    : .init(byteBuffer: ByteBuffer(data: reply.body)))
        for (name, value) in reply.headers {
            if let field = HTTPField.Name(name) { response.headers[field] = value }
        }
        return response
    }
}
