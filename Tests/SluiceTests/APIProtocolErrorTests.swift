#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import SluiceAPI
import SluiceCore
import SluiceServices
import SluiceStore
import SluiceTesting
import Testing

/// Requests the HTTP parser rejects, sent over a real socket.
@Suite struct APIProtocolErrorTests {
    /// Sends raw bytes to 127.0.0.1:port and returns what comes back until the server closes (or 5 s pass).
    static func exchange(port: Int, _ request: [UInt8]) async throws -> String {
        try await offPool {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { return "" }
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { return "" }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { break }
                received += buffer[0..<count]
            }
            return String(decoding: received, as: UTF8.self)
        }
    }

    @Test func hugeHeadersGetTheEnvelopeAndTheServerKeepsServing() async throws {
        let root = try TemporaryDataRoot()
        let services = try await APIContractTests.services(root.config(endpoint: "http://127.0.0.1:9/v1"))
        try await APIContractTests.application(services).test(.live) { client in
            let port = try #require(client.port)
            let huge = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 200_000))\r\n\r\n".utf8)
            let answer = try await Self.exchange(port: port, huge)
            #expect(answer.hasPrefix("HTTP/1.1 431"))
            #expect(answer.contains(#""status":"INVALID_ARGUMENT""#) && answer.contains(#""message":"request headers are too large""#))
            let garbage = try await Self.exchange(port: port, Array("NOT HTTP AT ALL\r\n\r\n".utf8))
            #expect(garbage.hasPrefix("HTTP/1.1 400") && garbage.contains(#""status":"INVALID_ARGUMENT""#))
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }
}
