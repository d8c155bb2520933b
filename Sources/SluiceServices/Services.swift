import Foundation
import Logging
import Prometheus
import SluiceAPI
import SluiceCore
import SluiceDaemon
import SluiceImaging
import SluicePipeline
import SluiceProviders
import SluiceStore
import SluiceText

/// The composition root: the one place where concrete types are chosen. `live(config:)` opens the store and
/// builds the pipelines once; the daemon, reprocessing, human decisions, ingest and the API are made from them.
/// Tests call it with an in-memory config (and, where they need one, a provider of their own).
public struct Services: Sendable {
    public let pipelines: Pipelines
    public let store: any StatusStore
    /// The image pipeline with its match stage on this store's hash banks.
    public let images: ImagePipeline
    /// This process's claims on work shared with other daemons (uploads, text queue files, webhook dispatch).
    public let leases: WorkLeases

    public init(pipelines: Pipelines, store: any StatusStore) {
        self.pipelines = pipelines
        self.store = store
        leases = WorkLeases(store: store, leaseSeconds: pipelines.config.daemon.leaseSeconds, logger: pipelines.logger)
        images = pipelines.images.with(matcher: BankMatcher(store: store, config: pipelines.config.banks,
                                                            reuseWithinDistance: pipelines.config.vision.reuseWithinDistance,
                                                            logger: pipelines.logger))
    }

    public var config: PipelineConfig { pipelines.config }
    /// The banks' matcher (one per process).
    public var matcher: BankMatcher? { images.matcher }
    public var texts: TextPipeline { pipelines.texts }

    /// `readOnlyStore` opens an existing store without ever writing (dry runs).
    public static func live(config: PipelineConfig, environment: [String: String] = ProcessInfo.processInfo.environment,
                            logger: Logger = Logger(label: "sluice"), vision: (any VisionProvider)? = nil,
                            readOnlyStore: Bool = false) async throws -> Services {
        let pipelines = try Pipelines.live(config: config, environment: environment, logger: logger, vision: vision)
        return Services(pipelines: pipelines, store: try await store(config: config, environment: environment, readOnly: readOnlyStore,
                                                                       logger: logger))
    }

    /// The configured store alone (commands that only read or record: `status`, `list`, `reports`): SQLite at
    /// `store.path`, or PostgreSQL when `store.url` names one (password from the env var `store.passwordEnv`).
    public static func store(config: PipelineConfig, environment: [String: String] = ProcessInfo.processInfo.environment,
                             readOnly: Bool = false, logger: Logger = Logger(label: "sluice")) async throws(StoreError) -> any StatusStore {
        guard let location = config.store.postgres else {
            return try SQLiteStore(path: config.store.path, readOnly: readOnly)
        }
        let password = environment[config.store.passwordEnv].flatMap { $0.isEmpty ? nil : $0 }
        return try await PostgresStore(location, password: password, readOnly: readOnly, logger: logger)
    }

    /// `sluice store migrate`: copies the SQLite store at `source` into the (empty) PostgreSQL store at `target`
    /// and returns each table's count on both sides.
    public static func migrateStore(from source: URL, to target: PostgresLocation, password: String?,
                                    progress: @escaping @Sendable (String, Int) -> Void) async throws(StoreError) -> [StoreMigration.TableCount] {
        let from = try SQLiteStore(path: source, readOnly: true)
        let to = try await PostgresStore(target, password: password)
        do {
            let counts = try await StoreMigration.copy(from: from, to: to, progress: progress)
            await to.close()
            return counts
        } catch {
            await to.close()
            throw error
        }
    }

    /// The daemon over `pending/` and `queues/text/`.
    public func daemon(mode: DropFolderService.Mode) -> Daemon {
        let logger = pipelines.logger
        let uploads = UploadProcessor(store: store, pipeline: images, maxBytes: config.limits.maxBytes,
                                      sampler: AuditSampler(rate: config.review.auditSampleRate), logger: logger)
        let texts = TextQueueIngestor(root: DataRoot(config.dataRoot), store: store, pipeline: textsWithRules, logger: logger)
        let service = DropFolderService(config: config, processor: uploads, textQueue: texts, mode: mode, leases: leases, logger: logger)
        return Daemon(service: service, store: store, pool: pipelines.pool, vision: pipelines.vision, logger: logger)
    }

    /// The text pipeline with the conversation rules over this store (what the daemon's text queues run).
    public var textsWithRules: TextPipeline {
        texts.with(rules: ConversationRules(store: store, conversation: config.conversation, spam: config.spam))
    }

    public func reprocessor() -> Reprocessor {
        Reprocessor(store: store, images: images, texts: texts, maxBytes: config.limits.maxBytes, claims: leases, logger: pipelines.logger)
    }

    public var decisions: HumanDecisions {
        HumanDecisions(store: store, images: images, maxBytes: config.limits.maxBytes)
    }

    public var erasure: Erasure { Erasure(store: store, layout: images.layout) }

    public var relations: Relations { Relations(store: store, conversation: config.conversation) }

    /// The outbound webhooks' dispatcher; nil when none is configured. Refuses (naming the webhook) when one cannot
    /// sign with what `environment` holds: deliveries would otherwise fail one by one, or be signed with a key
    /// anyone could guess.
    public func webhookDispatcher(environment: [String: String] = ProcessInfo.processInfo.environment,
                                  interval: Duration = .seconds(1)) throws(ConfigurationError) -> WebhookDispatcher? {
        guard !config.webhooks.isEmpty else { return nil }
        for (index, hook) in config.webhooks.enumerated() {
            if let problem = hook.signingProblem(environment: environment) {
                throw ConfigurationError.badValue(key: "webhooks[\(index)]", reason: problem)
            }
        }
        return WebhookDispatcher(webhooks: config.webhooks, store: store, transport: WebhookHTTPTransport(), environment: environment,
                                 interval: interval, leases: leases, logger: pipelines.logger)
    }

    public func ingestor() -> BacklogIngestor {
        BacklogIngestor(config: config, store: store, processor: pipelines.processor)
    }

    /// What `sluice serve` needs; `metrics` is the registry `/metrics` serves for this process.
    public func api(metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) -> APIServices {
        APIServices(config: config, store: store, images: images, texts: texts, decisions: decisions, erasure: erasure,
                    providers: pipelines.providers, metrics: metrics, threads: threads)
    }

    /// Seed 004's thread callables over this store.
    public var threads: ThreadIntelligence {
        ThreadIntelligence(store: store, llm: pipelines.languageModel, maxTokens: config.threads.languageModel(caption: config.caption).maxTokens,
                           embedder: pipelines.embedder, config: config.threads, logger: pipelines.logger)
    }

    /// Vectors for approved thread messages; nil when `threads.embeddings.provider` is `none`.
    public func embeddingIndexer() -> EmbeddingIndexer? {
        pipelines.embedder.map { EmbeddingIndexer(store: store, provider: $0, batchSize: config.threads.embeddings.batchSize, logger: pipelines.logger) }
    }
}

/// Everything that judges, without a store: the image processor, the CPU pool, the providers and both
/// pipelines. Commands that judge one thing (`sluice caption`, `check-text`, `priority`) use it directly.
public struct Pipelines: Sendable {
    public let config: PipelineConfig
    public let processor: any ImageProcessor
    public let pool: CPUPool
    public let vision: any VisionProvider
    public let captions: Result<any CaptionProvider, CaptionUnavailable>
    /// The thread callables' LLM (`threads.llm`, else `caption`'s provider).
    public let languageModel: Result<any LanguageModelProvider, CaptionUnavailable>
    /// Vectors for smart search (`threads.embeddings`).
    public let embedder: (any EmbeddingProvider)?
    /// Every provider this config calls, in its role, for health checks.
    public let providers: [ProviderInRole]
    public let images: ImagePipeline
    public let texts: TextPipeline
    public let logger: Logger

    public static func live(config: PipelineConfig, environment: [String: String] = ProcessInfo.processInfo.environment,
                            logger: Logger = Logger(label: "sluice"), vision: (any VisionProvider)? = nil) throws -> Pipelines {
        let processor: VipsImageProcessor
        do {
            processor = try VipsImageProcessor(maxPixels: config.limits.maxPixels, failOn: config.limits.failOn,
                                               maxMetadataBytes: config.limits.maxMetadataBytes)
        } catch {
            throw ServicesError("cannot start libvips: \(error.message)")
        }
        let vision = vision ?? visionProvider(config.vision, environment: environment, logger: logger)
        let captions = CaptionProviders.make(config.caption, environment: environment, logger: logger)
        var providers = [ProviderInRole(role: "vision", provider: vision)]
        if case let .success(captioner) = captions { providers.append(ProviderInRole(role: "caption", provider: captioner)) }
        let languageModel = LanguageModelProviders.make(config.threads.languageModel(caption: config.caption), environment: environment,
                                                        logger: logger)
        if config.threads.llm != nil, case let .success(llm) = languageModel { providers.append(ProviderInRole(role: "threads", provider: llm)) }
        var embedder: (any EmbeddingProvider)?
        if config.threads.embeddings.provider == .openAICompatible {
            let provider = OpenAICompatibleEmbeddingProvider(config: config.threads.embeddings, environment: environment, logger: logger)
            providers.append(ProviderInRole(role: "embeddings", provider: provider))
            embedder = provider
        }
        let rules = try rulesEngine(config)
        let priority: any PriorityEngine
        switch config.priority.engine {
        case .rules:
            priority = rules
        case .llm:
            let llm = LLMPriorityEngine(config: config.priority, environment: environment, fallback: rules, logger: logger)
            providers.append(ProviderInRole(role: "priority", provider: llm))
            priority = llm
        case .model:
            priority = try modelEngine(config, scorer: rules.scorer)
        }
        var textClassifier: (any TextClassifier)?
        if config.text.classifier.kind != .none {
            let classifier = OpenAIModerationTextClassifier(config: config.text.classifier, environment: environment, logger: logger)
            providers.append(ProviderInRole(role: "text-classifier", provider: classifier))
            textClassifier = classifier
        }
        let pool = CPUPool(threads: config.concurrency.effectiveCPU)
        let observer = StageMetrics()
        return Pipelines(config: config, processor: processor, pool: pool, vision: vision, captions: captions,
                         languageModel: languageModel, embedder: embedder, providers: providers,
                         images: ImagePipeline(config: config, processor: processor, vision: vision, captions: captions, pool: pool,
                                               observer: observer),
                         texts: TextPipeline(filter: try filter(config), priority: priority, classifier: textClassifier,
                                             classifierConfig: config.text.classifier, observer: observer), logger: logger)
    }

    /// The configured vision adapter.
    static func visionProvider(_ config: VisionConfig, environment: [String: String], logger: Logger) -> any VisionProvider {
        switch config.provider {
        case .googleVision: GoogleVisionProvider(config: config, environment: environment, logger: logger)
        case .openAIModeration: OpenAIModerationProvider(config: config, environment: environment, logger: logger)
        }
    }

    /// The profanity filter with the configured languages, operator lists and actions.
    public static func filter(_ config: PipelineConfig) throws -> ProfanityFilter {
        do {
            return try ProfanityFilter.load(config.text)
        } catch {
            throw ServicesError("cannot load wordlists: \(error)")
        }
    }

    static func modelEngine(_ config: PipelineConfig, scorer: PriorityScorer) throws -> ModelPriorityEngine {
        do {
            return ModelPriorityEngine(model: try PriorityModel.load(directory: config.text.wordlistsDirectory, language: config.priority.language),
                                       scorer: scorer, timeZone: config.priority.zone)
        } catch {
            throw ServicesError("cannot load the priority model (priority.engine \"model\"): \(error)")
        }
    }

    static func rulesEngine(_ config: PipelineConfig) throws -> RulesPriorityEngine {
        do {
            return RulesPriorityEngine(scorer: try PriorityScorer.load(directory: config.text.wordlistsDirectory, language: config.priority.language),
                                       timeZone: config.priority.zone)
        } catch {
            throw ServicesError("cannot load priority indicators: \(error)")
        }
    }
}

/// The services could not be assembled from the config.
public struct ServicesError: Error, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
