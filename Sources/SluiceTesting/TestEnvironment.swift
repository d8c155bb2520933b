import Foundation
import SluiceCore

/// Paths and temporary data roots for tests.
public enum TestEnvironment {
    /// The repository root, found from this file's location.
    public static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared/fixtures` beside the repository.
    public static let fixtures: URL = repositoryRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/fixtures", isDirectory: true)

    public static func fixture(_ relative: String) -> URL { fixtures.appendingPathComponent(relative) }

    /// Files in a fixtures folder (not recursing, skipping licences and READMEs).
    public static func fixtureFiles(_ folder: String, recursive: Bool = false) -> [URL] {
        let base = fixture(folder)
        let fm = FileManager.default
        var files: [URL] = []
        if recursive {
            let enumerator = fm.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey])
            while let url = enumerator?.nextObject() as? URL {
                if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { files.append(url) }
            }
        } else {
            files = ((try? fm.contentsOfDirectory(at: base, includingPropertiesForKeys: nil)) ?? [])
        }
        return files.filter { url in
            let name = url.lastPathComponent.lowercased()
            return !name.hasPrefix("license") && !name.hasPrefix("readme")
        }.sorted { $0.path < $1.path }
    }

    /// The built `sluice` executable, next to the test bundle.
    public static var sluiceBinary: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var folder = exe.deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = folder.appendingPathComponent("sluice")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return repositoryRoot.appendingPathComponent(".build/debug/sluice")
    }
}

/// A throwaway data root with its own config; removed on deinit.
public final class TemporaryDataRoot: Sendable {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url.appendingPathComponent("pending"), withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    public var pending: URL { url.appendingPathComponent("pending") }

    /// A config for this root pointing at `endpoint`, with fast retries so fail-closed tests stay quick.
    public func config(endpoint: String, edit: (inout PipelineConfig) -> Void = { _ in }) -> PipelineConfig {
        var vision = VisionConfig()
        vision.endpoint = endpoint
        vision.apiKeyEnv = nil
        vision.maxAttempts = 2
        vision.initialBackoffSeconds = 0.01
        vision.maxBackoffSeconds = 0.05
        vision.timeoutSeconds = 30
        var config = PipelineConfig(dataRoot: url, vision: vision, concurrency: ConcurrencyConfig(cpu: 2, items: 8),
                                    text: TextConfig(wordlistsDirectory: TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists")))
        config.store.postgres = storeLocation
        edit(&config)
        return config
    }

    /// With `SLUICE_TEST_STORE_URL` (a `postgres://` URL), every data root's store is a PostgreSQL schema of its own
    /// (`scripts/test` runs the store-facing suites a second time that way); otherwise the SQLite file in the root.
    public var storeLocation: PostgresLocation? {
        guard let raw = ProcessInfo.processInfo.environment["SLUICE_TEST_STORE_URL"], !raw.isEmpty,
              var location = try? PostgresLocation(url: raw) else { return nil }
        location.schema = "r_" + url.lastPathComponent.lowercased().filter { $0.isLetter || $0.isNumber }
        location.maxConnections = 2
        return location
    }

    /// The `store` entry of a config file for this root (empty: the SQLite default).
    var storeConfigEntry: String {
        guard let location = storeLocation else { return "" }
        return ",\n  \"store\": { \"url\": \"\(location.url)\" }"
    }

    /// Writes config JSON for the CLI; returns its path.
    public func writeConfigFile(endpoint: String, extra: String = "") throws -> URL {
        let file = url.appendingPathComponent("pipeline.json")
        let json = """
        {
          "dataRoot": "\(url.path)",
          "vision": { "endpoint": "\(endpoint)", "apiKeyEnv": null, "maxAttempts": 3,
                      "initialBackoffSeconds": 0.01, "maxBackoffSeconds": 0.05, "timeoutSeconds": 30 },
          "concurrency": { "cpu": 2, "items": 8 }\(extra.contains("\"store\"") ? "" : storeConfigEntry)\(extra.contains("\"text\"") ? "" : ",\n  \"text\": { \"wordlistsDirectory\": \"\(TestEnvironment.repositoryRoot.appendingPathComponent("Wordlists").path)\" }")\(extra.isEmpty ? "" : ",\n  " + extra)
        }
        """
        try Data(json.utf8).writeClosingOnExec(to: file)
        return file
    }

    /// Copies a file into pending/{userId}/{name} the way a writer should: dotfile, then rename.
    @discardableResult
    public func drop(_ source: URL, user: String, name: String) throws -> URL {
        let folder = pending.appendingPathComponent(user)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let temp = folder.appendingPathComponent(".\(name).\(UUID().uuidString)")
        try FileManager.default.copyClosingOnExec(at: source, to: temp)
        let destination = folder.appendingPathComponent(name)
        guard rename(temp.path, destination.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        return destination
    }

    /// Writes bytes into pending/{userId}/{name}.
    @discardableResult
    public func drop(_ data: Data, user: String, name: String) throws -> URL {
        let folder = pending.appendingPathComponent(user)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let destination = folder.appendingPathComponent(name)
        try data.writeClosingOnExec(to: destination)
        return destination
    }

    public func file(_ relative: String) -> URL { url.appendingPathComponent(relative) }

    /// Writes a text queue file `queues/text/{name}`, one line each.
    public func writeQueue(_ name: String, _ lines: [String]) throws {
        let folder = url.appendingPathComponent("queues/text")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((lines.joined(separator: "\n") + "\n").utf8).writeClosingOnExec(to: folder.appendingPathComponent(name))
    }

    public func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: file(relative).path) }

    /// Every file under the root (relative paths), for leak checks such as orphan temp files.
    public func allFiles() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: url.path)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.appendingPathComponent(path).path, isDirectory: &isDir), !isDir.boolValue {
                files.append(path)
            }
        }
        return files.sorted()
    }
}

/// Reads JPEG segment markers, to prove outputs carry no metadata.
public enum JPEGInspector {
    /// Names of metadata segments found before the image data: EXIF, XMP, ICC, IPTC, COM.
    public static func metadataSegments(_ data: Data) -> [String] {
        let bytes = [UInt8](data)
        guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return ["not a JPEG"] }
        var found: [String] = []
        var index = 2
        while index + 4 <= bytes.count {
            guard bytes[index] == 0xFF else { break }
            let marker = bytes[index + 1]
            if marker == 0xDA || marker == 0xD9 { break }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            let payload = bytes[min(index + 4, bytes.count)..<min(index + 2 + length, bytes.count)]
            let head = String(decoding: payload.prefix(32), as: UTF8.self)
            switch marker {
            case 0xE1: found.append(head.hasPrefix("Exif") ? "EXIF" : head.contains("adobe") ? "XMP" : "APP1")
            case 0xE2: found.append(head.hasPrefix("ICC_PROFILE") ? "ICC" : "APP2")
            case 0xED: found.append("IPTC")
            case 0xFE: found.append("COM")
            case 0xE3...0xEF: found.append(String(format: "APP%d", Int(marker) - 0xE0))
            default: break
            }
            index += 2 + length
        }
        return found
    }

    /// Width and height from the first SOF segment.
    public static func dimensions(_ data: Data) -> (width: Int, height: Int)? {
        let bytes = [UInt8](data)
        var index = 2
        while index + 9 <= bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                let height = Int(bytes[index + 5]) << 8 | Int(bytes[index + 6])
                let width = Int(bytes[index + 7]) << 8 | Int(bytes[index + 8])
                return (width, height)
            }
            index += 2 + length
        }
        return nil
    }
}
