import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluicePipeline
import SluiceServices

struct CaptionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "caption",
        abstract: "Caption one image with the configured caption provider (caption.provider in pipeline.json).")

    @OptionGroup var common: CommonOptions

    @Argument(help: "Image file (JPEG, PNG, WebP, GIF, HEIF/AVIF).")
    var image: String

    @Flag(help: "Print JSON: {caption, provider, model, usage, processingTime}.")
    var json = false

    func run() async throws {
        let config = try common.loadConfig().config
        let pipelines: Pipelines
        do { pipelines = try Pipelines.live(config: config, logger: Logger(label: "sluice")) } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        if case let .failure(unavailable) = pipelines.captions { throw CLIError(message: "captioning is off: \(unavailable.reason)") }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: image)) } catch {
            throw CLIError(message: "cannot read \(image): \((error as NSError).localizedDescription)")
        }
        guard data.count <= config.limits.maxBytes else {
            throw CLIError(message: "\(image) is \(data.count) bytes, over the \(config.limits.maxBytes) byte limit (limits.maxBytes)")
        }
        // The image pipeline's own checks, decode and caption stages, as the daemon and the caption API run them.
        let run = await pipelines.images.captioning.run(ImageUpload(image: nil, bytes: data), context: .intake)
        await pipelines.pool.shutdown()
        let caption: Caption
        switch run.end {
        case let .stopped(conclusion, _, _):
            let reason = switch conclusion {
            case let .verdict(verdict): verdict.reason ?? "not usable"
            case let .keep(reason): reason
            }
            throw CLIError(message: "\(image): \(reason)")
        case let .completed(captioned):
            switch captioned.result {
            case let .caption(made)?: caption = made
            case let .unavailable(reason)?: throw CLIError(message: "captioning is off: \(reason)")
            case let .failed(_, error)?: throw CLIError(message: "caption failed: \(error.description)")
            case nil: throw CLIError(message: "caption failed: the caption stage did not run")
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let output = CaptionJSON(caption: caption.caption, provider: caption.provider, model: caption.model, usage: caption.usage,
                                     processingTime: Int(caption.processingTimeMs.rounded()))
            print(String(decoding: try encoder.encode(output), as: UTF8.self))
        } else {
            print(caption.caption)
            print("  (\(caption.provider) \(caption.model), \(caption.usage.totalTokens.map { "\($0) tokens, " } ?? "")\(Int(caption.processingTimeMs)) ms)")
        }
    }

    /// The seed Caption Generation API's field names; processingTime in milliseconds.
    struct CaptionJSON: Encodable {
        var caption: String
        var provider: String
        var model: String
        var usage: CaptionUsage
        var processingTime: Int
    }
}
