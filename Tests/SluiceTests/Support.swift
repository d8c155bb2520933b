import Foundation
import Logging
import SluiceCore
import SluiceDaemon
import SluiceStore
import SluiceTesting

/// Runs the daemon once over a data root, in process, against a fake provider; returns the store.
@discardableResult
func runOnce(_ root: TemporaryDataRoot, server: FakeVisionServer,
             edit: (inout PipelineConfig) -> Void = { _ in }) async throws -> StatusStore {
    let config = root.config(endpoint: server.endpoint, edit: edit)
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    let daemon = try ImageDaemon.build(config: config, mode: .once, environment: [:], logger: logger)
    try await daemon.run()
    return daemon.store
}

let cleanResult = SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .unlikely, violence: .veryUnlikely, racy: .unlikely)

func read(_ url: URL) throws -> Data { try Data(contentsOf: url) }

/// Runs a command and waits for it on a plain thread, so the cooperative pool (which serves the in-process
/// fake providers) is never blocked by a child process.
@discardableResult
func shell(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await offPool { try shellBlocking(executable, arguments, environment: environment) }
}

/// Waits for a process to exit without blocking a cooperative thread.
func waitForExit(_ process: Process) async {
    await offPool { process.waitUntilExit() }
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
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}
