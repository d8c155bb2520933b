#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPTypes
import Logging
import SluiceCore
import SluiceDaemon
import SluiceServices
import SluiceStore
import SluiceTesting

/// Runs the daemon once over a data root, in process, against a fake provider; returns the store.
@discardableResult
func runOnce(_ root: TemporaryDataRoot, server: FakeVisionServer,
             edit: (inout PipelineConfig) -> Void = { _ in }) async throws -> any StatusStore {
    try await runOnce(root, endpoint: server.endpoint, edit: edit)
}

/// The same against any vision endpoint (one that nothing answers, say).
@discardableResult
func runOnce(_ root: TemporaryDataRoot, endpoint: String,
             edit: (inout PipelineConfig) -> Void = { _ in }) async throws -> any StatusStore {
    let config = root.config(endpoint: endpoint, edit: edit)
    let daemon = try await Services.live(config: config, environment: [:], logger: quietLogger).daemon(mode: .once)
    try await daemon.run()
    return daemon.store
}

/// A logger that only speaks for critical problems.
var quietLogger: Logger {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    return logger
}

let cleanResult = SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .unlikely, violence: .veryUnlikely, racy: .unlikely)

func read(_ url: URL) throws -> Data { try Data(contentsOf: url) }

/// Runs a command and waits for it on a plain thread, so the cooperative pool (which serves the in-process
/// fake providers) is never blocked by a child process.
@discardableResult
func shell(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await offPool { try shellBlocking(executable, arguments, environment: environment) }
}

/// Waits for a process to exit without blocking a cooperative thread, at most `seconds`; a process still
/// running then is killed (SIGKILL) and false is returned, so a test fails instead of hanging.
@discardableResult
func waitForExit(_ process: Process, seconds: Double = 60) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while process.isRunning, Date() < deadline {
        try? await Task.sleep(nanoseconds: 50_000_000)
    }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { try? await Task.sleep(nanoseconds: 50_000_000) }
        return false
    }
    return true
}

/// Asks `done` every `milliseconds` until it says yes or `seconds` have passed (a deadline, not a count of polls: a
/// loaded machine can be slow to start a process); whether it said yes.
@discardableResult
func waitUntil(seconds: Double = 60, every milliseconds: Int = 50, _ done: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await done() { return true }
        try? await Task.sleep(for: .milliseconds(milliseconds))
    }
    return false
}

/// A TCP port nothing listens on right now (bound once to port 0 and released).
func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return 18_080 }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    return bound ? Int(UInt16(bigEndian: address.sin_port)) : 18_080
}

func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

private func shellBlocking(_ executable: URL, _ arguments: [String], environment: [String: String]?) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // A child that never ends would hang the suite: after 5 minutes it is killed and the test fails on its status.
    let pid = process.processIdentifier
    DispatchQueue.global().asyncAfter(deadline: .now() + 300) { if process.isRunning { kill(pid, SIGKILL) } }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

/// Tests name items with plain strings, often built in loops.
extension StatusStore {
    func item(_ id: String) async throws -> Item? { try await item(ItemID(id)) }
    func events(of id: String) async throws -> [ItemEvent] { try await events(of: ItemID(id)) }
}

extension HTTPFields {
    /// A header's value by name (any case), without force-unwrapping a field name.
    func value(_ name: String) -> String? {
        first { $0.name.canonicalName == name.lowercased() }?.value
    }
}

extension TemporaryDataRoot {
    /// The root's store as its config names it: the SQLite file, or (with `SLUICE_TEST_STORE_URL`) its PostgreSQL
    /// schema. Tests that read what a process under test recorded open it this way.
    func store() async throws -> any StatusStore {
        if let location = storeLocation { return try await PostgresStore(location, password: nil) }
        return try SQLiteStore(path: url.appendingPathComponent("sluice.sqlite"))
    }

    /// For polling while another process writes: nil until the store exists. SQLite is opened afresh each time (as a
    /// new reader would); a PostgreSQL store is opened once and kept.
    func storeWhenReady() async -> (any StatusStore)? {
        if storeLocation != nil { return await OpenedStores.shared.store(for: self) }
        guard FileManager.default.fileExists(atPath: url.appendingPathComponent("sluice.sqlite").path) else { return nil }
        return try? await store()
    }
}

/// PostgreSQL stores opened for polling, one per data root.
private actor OpenedStores {
    static let shared = OpenedStores()
    private var stores: [URL: any StatusStore] = [:]

    func store(for root: TemporaryDataRoot) async -> (any StatusStore)? {
        if let store = stores[root.url] { return store }
        guard let store = try? await root.store() else { return nil }
        stores[root.url] = store
        return store
    }
}
