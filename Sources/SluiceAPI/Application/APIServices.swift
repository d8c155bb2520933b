import Foundation
import Prometheus
import SluiceCore
import SluicePipeline

/// Everything the routes use, assembled once by the composition root (`Services.api()`).
public struct APIServices: Sendable {
    public let config: PipelineConfig
    public let store: any StatusStore
    /// The image pipeline (the caption API runs its decode and caption stages).
    public let images: ImagePipeline
    /// The text pipeline's filter and priority engine (`validate_text`, `detectPriority`).
    public let texts: TextPipeline
    public let decisions: HumanDecisions
    public let erasure: Erasure
    /// Every provider the config calls, for `/healthz`.
    public let providers: [ProviderInRole]
    /// This process's metrics (HTTP requests; provider calls when swift-metrics is bootstrapped with it).
    public let metrics: PrometheusCollectorRegistry
    /// Seed 004's thread callables.
    public let threads: ThreadIntelligence

    public init(config: PipelineConfig, store: any StatusStore, images: ImagePipeline, texts: TextPipeline, decisions: HumanDecisions,
                erasure: Erasure, providers: [ProviderInRole], metrics: PrometheusCollectorRegistry, threads: ThreadIntelligence) {
        self.config = config
        self.store = store
        self.images = images
        self.texts = texts
        self.decisions = decisions
        self.erasure = erasure
        self.providers = providers
        self.metrics = metrics
        self.threads = threads
    }

    public var layout: OutputLayout { images.layout }
    public var relations: Relations { Relations(store: store, conversation: config.conversation) }
}
