#if canImport(Glibc)
import Glibc
#endif
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOFoundationCompat
import SluiceTesting
import Testing

/// The daemon and the API as separate processes on one data root: an upload goes in through the API, the
/// daemon moderates it, and the API serves the approved file.
@Suite(.serialized) struct EndToEndTests {
    @Test func uploadThroughTheAPIIsModeratedAndServed() async throws {
        let root = try TemporaryDataRoot()
        let vision = try await FakeVisionServer.always(cleanResult)
        defer { vision.stop() }
        let port = 18_000 + Int(getpid() % 1000)
        let config = try root.writeConfigFile(endpoint: vision.endpoint, extra: #""api": {"port": \#(port)}"#)
        var environment = ProcessInfo.processInfo.environment
        environment["SLUICE_APP_TOKENS"] = "e2e-token"
        func start(_ arguments: [String]) throws -> Process {
            let process = Process()
            process.executableURL = TestEnvironment.sluiceBinary
            process.arguments = arguments + ["--config", config.path, "--log-level", "error"]
            process.environment = environment
            try process.run()
            return process
        }
        let daemon = try start(["run"])
        let server = try start(["serve"])
        defer {
            kill(daemon.processIdentifier, SIGTERM)
            kill(server.processIdentifier, SIGTERM)
        }
        let base = "http://127.0.0.1:\(port)"
        func send(_ method: HTTPMethod, _ path: String, body: Data? = nil, contentType: String? = nil) async throws -> (Int, Data) {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            request.headers.add(name: "X-App-Token", value: "e2e-token")
            if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
            if let body { request.body = .bytes(ByteBuffer(data: body)) }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            return (Int(response.status.code), Data(buffer: try await response.body.collect(upTo: 32 << 20)))
        }
        // Wait for the server to listen.
        var healthy = false
        for _ in 0..<100 where !healthy {
            healthy = (try? await send(.GET, "/healthz").0) == 200
            if !healthy { try await Task.sleep(nanoseconds: 100_000_000) }
        }
        #expect(healthy)

        let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
        let (status, body) = try await send(.POST, "/v1/uploads/zoe", body: jpeg, contentType: "image/jpeg")
        #expect(status == 201)
        let imageId = try #require((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["imageId"] as? String)

        var imageStatus = ""
        for _ in 0..<200 where imageStatus != "approved" {
            try await Task.sleep(nanoseconds: 100_000_000)
            let (code, item) = try await send(.GET, "/v1/items/zoe/\(imageId)")
            if code == 200 { imageStatus = (try JSONSerialization.jsonObject(with: item) as? [String: Any])?["imageStatus"] as? String ?? "" }
        }
        #expect(imageStatus == "approved")
        let (imageCode, image) = try await send(.GET, "/v1/images/approved/zoe/\(imageId).jpg")
        #expect(imageCode == 200)
        #expect(JPEGInspector.dimensions(image) != nil)
        #expect(JPEGInspector.metadataSegments(image).isEmpty)
        let (thumbCode, thumb) = try await send(.GET, "/v1/images/thumbnails/zoe/\(imageId).jpg")
        #expect(thumbCode == 200 && JPEGInspector.dimensions(thumb).map { max($0.width, $0.height) } == 200)

        kill(server.processIdentifier, SIGTERM)
        kill(daemon.processIdentifier, SIGTERM)
        await waitForExit(server)
        await waitForExit(daemon)
        #expect(server.terminationStatus == 0 && daemon.terminationStatus == 0)
    }
}
