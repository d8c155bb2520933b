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
        let port = freeLoopbackPort()
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
            // Whatever happened above, nothing outlives the test.
            if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
            if server.isRunning { kill(server.processIdentifier, SIGKILL) }
        }
        let base = "http://127.0.0.1:\(port)"
        func send(_ method: HTTPMethod, _ path: String, body: Data? = nil, contentType: String? = nil, timeout: Int64 = 10) async throws -> (Int, Data) {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            request.headers.add(name: "X-App-Token", value: "e2e-token")
            if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
            if let body { request.body = .bytes(ByteBuffer(data: body)) }
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(timeout))
            return (Int(response.status.code), Data(buffer: try await response.body.collect(upTo: 32 << 20)))
        }
        // Wait for the server to listen (bounded: 30 s).
        var healthy = false
        let deadline = Date().addingTimeInterval(30)
        while !healthy, Date() < deadline {
            healthy = (try? await send(.GET, "/healthz", timeout: 1).0) == 200
            if !healthy { try await Task.sleep(nanoseconds: 100_000_000) }
        }
        try #require(healthy, "sluice serve did not answer on port \(port)")

        let jpeg = try Data(contentsOf: TestEnvironment.fixture("images/photos/rocket.jpg"))
        let (status, body) = try await send(.POST, "/v1/uploads/zoe", body: jpeg, contentType: "image/jpeg")
        #expect(status == 201)
        let imageId = try #require((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["imageId"] as? String)

        var imageStatus = ""
        let approvalDeadline = Date().addingTimeInterval(60)
        while imageStatus != "approved", Date() < approvalDeadline {
            try await Task.sleep(nanoseconds: 100_000_000)
            let (code, item) = try await send(.GET, "/v1/items/zoe/\(imageId)", timeout: 5)
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
        #expect(await waitForExit(server, seconds: 30), "sluice serve did not stop on SIGTERM")
        #expect(await waitForExit(daemon, seconds: 30), "sluice run did not stop on SIGTERM")
        #expect(server.terminationStatus == 0 && daemon.terminationStatus == 0)
    }
}
