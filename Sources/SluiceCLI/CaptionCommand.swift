import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluiceDaemon
import SluiceImaging

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
        let provider: any CaptionProvider
        switch ImageDaemon.captionProvider(config: config.caption, environment: ProcessInfo.processInfo.environment,
                                           logger: Logger(label: "sluice")) {
        case let .success(value): provider = value
        case let .failure(unavailable): throw CLIError(message: "captioning is off: \(unavailable.reason)")
        }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: image)) } catch {
            throw CLIError(message: "cannot read \(image): \((error as NSError).localizedDescription)")
        }
        guard data.count <= config.limits.maxBytes else {
            throw CLIError(message: "\(image) is \(data.count) bytes, over the \(config.limits.maxBytes) byte limit (limits.maxBytes)")
        }
        let jpeg: Data
        do throws(ImagingError) {
            let processor = try VipsImageProcessor(maxPixels: config.limits.maxPixels, failOn: config.limits.failOn,
                                                   maxMetadataBytes: config.limits.maxMetadataBytes)
            let format = try processor.sniff(data)
            _ = try processor.header(data, format: format)
            jpeg = try processor.process(data, format: format, options: ImageOptions(config: config)).classifyJPEG
        } catch {
            throw CLIError(message: "\(image): \(error.message)")
        }
        let caption: Caption
        do throws(ProviderError) {
            caption = try await provider.caption(jpeg, mimeType: "image/jpeg")
        } catch {
            throw CLIError(message: "caption failed: \(error.description)")
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
