import Foundation
import Logging
import SluiceCore
import SluiceImaging
import SluiceProviders
import SluiceStore
import SluiceText

/// Assembles the daemon from a config: the one place where concrete types are chosen.
/// Tests call it directly with an in-memory config and a provider pointed at a fake server.
public struct ImageDaemon: Sendable {
    public let service: DropFolderService
    public let store: StatusStore
    public let pool: CPUPool
    public let provider: any VisionProvider

    public static func build(config: PipelineConfig, mode: DropFolderService.Mode,
                             provider: (any VisionProvider)? = nil,
                             environment: [String: String] = ProcessInfo.processInfo.environment,
                             logger: Logger = Logger(label: "sluice")) throws -> ImageDaemon {
        let store = try StatusStore(path: config.store.path)
        let processor = try VipsImageProcessor(maxPixels: config.limits.maxPixels, failOn: config.limits.failOn,
                                               maxMetadataBytes: config.limits.maxMetadataBytes)
        let provider = provider ?? Self.visionProvider(config: config.vision, environment: environment, logger: logger)
        let pool = CPUPool(threads: config.concurrency.effectiveCPU)
        let pipeline = ImagePipeline(config: config, processor: processor, provider: provider, pool: pool)
        let items = ImageItemProcessor(config: config, store: store, pipeline: pipeline, providerName: provider.name,
                                       captionProvider: Self.captionProvider(config: config.caption, environment: environment, logger: logger),
                                       logger: logger)
        let filter: ProfanityFilter
        do {
            filter = try ProfanityFilter.load(config.text)
        } catch {
            throw DaemonStartError(message: "cannot load wordlists: \(error)")
        }
        let priority: any PriorityEngine
        do {
            priority = try Self.priorityEngine(config: config, environment: environment, logger: logger)
        } catch {
            throw DaemonStartError(message: "cannot load priority indicators: \(error)")
        }
        let textQueue = TextQueueProcessor(root: DataRoot(config.dataRoot), store: store, filter: filter, priority: priority, logger: logger)
        let service = DropFolderService(config: config, processor: items, textQueue: textQueue, mode: mode, logger: logger)
        return ImageDaemon(service: service, store: store, pool: pool, provider: provider)
    }

    /// A reprocessor with the current config's providers, policy, wordlists and priority engine.
    public static func reprocessor(config: PipelineConfig, store: StatusStore, environment: [String: String] = ProcessInfo.processInfo.environment,
                                   logger: Logger) throws -> Reprocessor {
        let processor = try VipsImageProcessor(maxPixels: config.limits.maxPixels, failOn: config.limits.failOn,
                                               maxMetadataBytes: config.limits.maxMetadataBytes)
        let filter: ProfanityFilter
        let priority: any PriorityEngine
        do {
            filter = try ProfanityFilter.load(config.text)
            priority = try priorityEngine(config: config, environment: environment, logger: logger)
        } catch {
            throw DaemonStartError(message: "cannot load wordlists: \(error)")
        }
        return Reprocessor(config: config, store: store, processor: processor,
                           vision: visionProvider(config: config.vision, environment: environment, logger: logger),
                           captions: captionProvider(config: config.caption, environment: environment, logger: logger),
                           filter: filter, priority: priority, logger: logger)
    }

    /// The configured priority engine (rules, or the LLM engine falling back to rules).
    public static func priorityEngine(config: PipelineConfig, environment: [String: String], logger: Logger) throws(WordlistError) -> any PriorityEngine {
        let rules = RulesPriorityEngine(scorer: try PriorityScorer.load(directory: config.text.wordlistsDirectory, language: config.priority.language))
        guard config.priority.engine == "llm" else { return rules }
        return LLMPriorityEngine(config: config.priority, environment: environment, fallback: rules, logger: logger)
    }

    public static func visionProvider(config: VisionConfig, environment: [String: String], logger: Logger) -> any VisionProvider {
        switch config.provider {
        case "openai-moderation": OpenAIModerationProvider(config: config, environment: environment, logger: logger)
        default: GoogleVisionProvider(config: config, environment: environment, logger: logger)
        }
    }

    /// The configured caption adapter, or why captioning is off.
    public static func captionProvider(config: CaptionConfig, environment: [String: String],
                                       logger: Logger) -> Result<any CaptionProvider, CaptionUnavailableReason> {
        CaptionProviders.make(config, environment: environment, logger: logger).mapError { CaptionUnavailableReason(reason: $0.reason) }
    }

    /// Runs until done (`once`) or until graceful shutdown, then releases the worker pool.
    public func run() async throws {
        if let google = provider as? GoogleVisionProvider, let problem = await google.probe() {
            Logger(label: "sluice").warning("\(problem); uploads will be held for review (fail closed) until it answers")
        }
        do {
            try await service.run()
        } catch {
            await pool.shutdown()
            throw error
        }
        await pool.shutdown()
    }
}

/// The daemon could not be assembled from its config.
public struct DaemonStartError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
