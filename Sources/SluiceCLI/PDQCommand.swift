import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluiceServices

struct PDQCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pdq",
        abstract: "Print the PDQ perceptual hash and quality of image files, through the daemon's own checks and decode.",
        discussion: """
            One line per file: `HASH QUALITY FILE` (64 hex characters, 0-100), or with --json one JSON object per line: \
            {"file", "pdq", "quality"} (and "dihedral": the 8 rotation/flip hashes with --dihedral). A file that cannot be \
            hashed is named on stderr with the reason, the others are still hashed, and the exit status is 1.
            """)

    @OptionGroup var common: CommonOptions

    @Argument(help: "Image files (JPEG, PNG, WebP, GIF, HEIF/AVIF).")
    var files: [String]

    @Flag(help: "One JSON object per file and line.")
    var json = false

    @Flag(help: "Also print the hashes of the 8 rotations and flips (original, rot90, rot180, rot270, flipX, flipY, flip+1, flip-1).")
    var dihedral = false

    func run() async throws {
        let config = try common.loadConfig().config
        let pipelines: Pipelines
        do { pipelines = try Pipelines.live(config: config, logger: Logger(label: "sluice")) } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        let processor = pipelines.processor
        let options = ImageOptions(config: config)
        var failed = 0
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for file in files {
            do {
                let data = try FileOps.readRegularFile(URL(fileURLWithPath: file), limit: config.limits.maxBytes)
                let format = try processor.sniff(data)
                guard let fingerprint = try processor.fingerprint(data, format: format, options: options) else {
                    throw CLIError(message: "image is under 5 pixels a side; PDQ cannot hash it")
                }
                if json {
                    let line = Line(file: file, pdq: fingerprint.hash.hex, quality: fingerprint.quality,
                                    dihedral: dihedral ? fingerprint.dihedral.map(\.hex) : nil)
                    print(String(decoding: try encoder.encode(line), as: UTF8.self))
                } else {
                    print("\(fingerprint.hash.hex) \(fingerprint.quality) \(file)")
                    if dihedral { for (name, hash) in zip(Self.variantNames, fingerprint.dihedral) { print("  \(name) \(hash.hex)") } }
                }
            } catch {
                failed += 1
                FileHandle.standardError.write(Data("sluice pdq: \(file): \(Self.describe(error))\n".utf8))
            }
        }
        await pipelines.pool.shutdown()
        if failed > 0 { throw ExitCode(1) }
    }

    static let variantNames = ["original", "rot90", "rot180", "rot270", "flipX", "flipY", "flip+1", "flip-1"]

    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as UploadReadError:
            switch error {
            case let .notRegular(what): "not a regular file: \(what)"
            case let .tooLarge(size): "file is \(size) bytes, over the limit (limits.maxBytes)"
            case let .io(error): "cannot read: \(error)"
            case .beingWritten: "still open for writing by another process"
            }
        case let error as ImagingError: error.message
        case let error as CLIError: error.message
        default: "\(error)"
        }
    }

    struct Line: Encodable {
        var file: String
        var pdq: String
        var quality: Int
        var dihedral: [String]?
    }
}
