import Foundation

/// pipeline.json. Every key has a working default; unknown keys and bad values stop start-up.
public struct PipelineConfig: Sendable, Equatable {
    /// Absolute data root (relative paths in the file resolve against the config file's folder).
    public var dataRoot: URL
    public var store: StoreConfig
    public var vision: VisionConfig
    public var policy: ModerationPolicy
    public var limits: LimitsConfig
    public var output: OutputConfig
    public var concurrency: ConcurrencyConfig
    public var daemon: DaemonConfig
    public var text: TextConfig
    public var caption: CaptionConfig = CaptionConfig()
    public var priority: PriorityConfig = PriorityConfig()
    public var api: APIConfig = APIConfig()
    public var webhooks: [WebhookConfig] = []
    public var console = ConsoleConfig()
    public var report = ReportConfig()
    public var review = ReviewConfig()
    public var conversation = ConversationConfig()
    public var spam = SpamConfig()
    public var banks = BanksConfig()
    public var threads = ThreadsConfig()
    public var localVision = LocalVisionConfig()

    public init(dataRoot: URL, store: StoreConfig? = nil, vision: VisionConfig = VisionConfig(),
                policy: ModerationPolicy = .standard, limits: LimitsConfig = LimitsConfig(),
                output: OutputConfig = OutputConfig(), concurrency: ConcurrencyConfig = ConcurrencyConfig(),
                daemon: DaemonConfig = DaemonConfig(), text: TextConfig? = nil) {
        self.dataRoot = dataRoot.standardizedFileURL
        self.store = store ?? StoreConfig(path: dataRoot.appendingPathComponent("sluice.sqlite"))
        self.vision = vision
        self.policy = policy
        self.limits = limits
        self.output = output
        self.concurrency = concurrency
        self.daemon = daemon
        self.text = text ?? TextConfig(wordlistsDirectory: URL(fileURLWithPath: "Wordlists"))
    }
}

public struct VisionConfig: Sendable, Equatable {
    /// `google-vision`: the images:annotate wire format (Google, the local provider); `openai-moderation`:
    /// OpenAI's `omni-moderation-latest` at `{endpoint}/moderations`.
    public var provider: VisionProviderKind = .googleVision
    /// Base URL; `/images:annotate` is appended.
    public var endpoint: String = "http://127.0.0.1:8089/v1"
    /// Env var holding an API key sent as `?key=`; missing or empty means no key.
    public var apiKeyEnv: String? = "GOOGLE_VISION_API_KEY"
    /// Env var holding an OAuth bearer token, sent as `Authorization: Bearer`.
    public var bearerTokenEnv: String?
    public var timeoutSeconds: Double = 30
    public var maxAttempts: Int = 4
    public var initialBackoffSeconds: Double = 0.5
    public var maxBackoffSeconds: Double = 20
    public var maxInFlight: Int = 16
    /// Longest side of the JPEG sent for classification.
    public var classifyMaxSide: Int = 640
    public var maxResponseBytes: Int = 1 << 20
    /// Consecutive failures that open the circuit, and how long it stays open before a probe.
    public var breakerFailures: Int = 5
    public var breakerOpenSeconds: Double = 30
    /// Model for `openai-moderation`.
    public var model: String = "omni-moderation-latest"
    /// An upload whose PDQ hash is within this many bits of an approved image's takes over that image's
    /// classification instead of calling the provider (nil: off, the default).
    public var reuseWithinDistance: Int?
    public init() {}
}

/// Per-category thresholds: the likelihood at which an image is blocked and at which it goes to review.
public struct CategoryPolicy: Sendable, Equatable, Codable {
    public var block: Likelihood?
    public var review: Likelihood?
    /// What UNKNOWN means for this category: `"ignore"` or `"review"`.
    public var onUnknown: UnknownAction

    public init(block: Likelihood? = nil, review: Likelihood? = nil, onUnknown: UnknownAction = .ignore) {
        self.block = block
        self.review = review
        self.onUnknown = onUnknown
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(["block", "review", "onUnknown"])
        let c = try decoder.container(keyedBy: CodingKeys.self)
        block = try c.optional(Likelihood.self, forKey: .block)
        review = try c.optional(Likelihood.self, forKey: .review)
        onUnknown = try c.value(.onUnknown, default: .ignore)
    }
}

public enum UnknownAction: String, Sendable, Codable, Equatable {
    case ignore, review

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let value = UnknownAction(rawValue: raw) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(raw)\" is not allowed; allowed: ignore, review")
        }
        self = value
    }
}

public struct ModerationPolicy: Sendable, Equatable {
    public var categories: [SafeSearchCategory: CategoryPolicy]

    public init(categories: [SafeSearchCategory: CategoryPolicy]) { self.categories = categories }

    /// Block adult or violence ≥ LIKELY and racy ≥ VERY_LIKELY; review adult, violence or racy at POSSIBLE;
    /// an UNKNOWN adult likelihood goes to review (nothing is approved without an adult signal).
    public static let standard = ModerationPolicy(categories: [
        .adult: CategoryPolicy(block: .likely, review: .possible, onUnknown: .review),
        .violence: CategoryPolicy(block: .likely, review: .possible),
        .racy: CategoryPolicy(block: .veryLikely, review: .possible),
        .spoof: CategoryPolicy(),
        .medical: CategoryPolicy(),
    ])

    public subscript(category: SafeSearchCategory) -> CategoryPolicy {
        categories[category] ?? CategoryPolicy()
    }
}

public struct LimitsConfig: Sendable, Equatable {
    /// 25 MiB.
    public var maxBytes: Int = 25 * 1024 * 1024
    /// 50 megapixels.
    public var maxPixels: Int = 50_000_000
    /// How picky decoding is (libvips `fail_on`): `warning` rejects any upload the decoder complains about,
    /// `error` tolerates warnings, `truncated` only stops on truncation.
    public var failOn: FailOn = .warning
    /// Largest ICC profile or (decompressed) text metadata an upload may carry: 256 KiB.
    public var maxMetadataBytes: Int = 256 * 1024
    /// The API's request limits.
    public var rate = RateLimitsConfig()
    public init() {}
}

public struct OutputConfig: Sendable, Equatable {
    public var maxSide: Int = 1920
    public var quality: Int = 80
    public var thumbnailSize: Int = 200
    public var thumbnailQuality: Int = 75
    public init() {}
}

public struct ConcurrencyConfig: Sendable, Equatable {
    /// Threads for CPU stages (decode, encode); 0 means the number of cores.
    public var cpu: Int = 0
    /// Items in flight at once (each holds its upload in memory while the provider answers); 0 = the vision
    /// provider's calls in flight plus two per CPU thread (`PipelineConfig.itemsInFlight`).
    public var items: Int = 0

    public init(cpu: Int = 0, items: Int = 0) {
        self.cpu = cpu
        self.items = items
    }

    public var effectiveCPU: Int { cpu > 0 ? cpu : ProcessInfo.processInfo.activeProcessorCount }
}

extension PipelineConfig {
    /// Uploads in flight: `concurrency.items`, or (0, the default) `vision.maxInFlight` plus two per CPU thread, so
    /// that decoding and writing overlap the provider's wait instead of holding its slots (with exactly
    /// `maxInFlight` items, a 200 ms provider that allows 80 calls/s was used at 67).
    public var itemsInFlight: Int { concurrency.items > 0 ? concurrency.items : vision.maxInFlight + 2 * concurrency.effectiveCPU }
}

public struct DaemonConfig: Sendable, Equatable {
    /// Full rescan period, a safety net beside inotify.
    public var rescanSeconds: Double = 30
    /// How long a daemon's claim on an upload or a text queue file lasts without renewal (renewed every third of
    /// it): after a daemon dies, another one takes its work over this long later, at its next rescan.
    public var leaseSeconds: Double = 30
    public init() {}
}

/// Text moderation: which wordlists to load and what each severity does.
public struct TextConfig: Sendable, Equatable {
    /// Folder holding `{language}.tsv` and `allowlist-{language}.txt`.
    public var wordlistsDirectory: URL
    /// Languages to load (file names in the folder); short terms of one language are innocent in another,
    /// so only the languages an app's users write should be listed.
    public var languages: [String] = ["en"]
    /// Operator wordlists in the same TSV format, and allowlists (one word or phrase a line).
    public var wordlists: [URL] = []
    public var allowlists: [URL] = []
    /// Severity → `block`, `mark` (allowed but reported) or `ignore`.
    public var actions: [Severity: SeverityAction] = [.mild: .mark, .strong: .block, .severe: .block, .slur: .block]
    /// Longest message judged, in Unicode scalars; longer ones are rejected.
    public var maxLength: Int = 10_000
    /// The second opinion on messages the wordlists allow (`text.classifier*`).
    public var classifier = TextClassifierConfig()

    public init(wordlistsDirectory: URL) { self.wordlistsDirectory = wordlistsDirectory.standardizedFileURL }
}

/// Caption generation through a swappable LLM provider.
public struct CaptionConfig: Sendable, Equatable {
    public var provider: CaptionProviderKind = .none
    /// Each provider's SDK convention: OpenAI-compatible includes the version (`https://api.openai.com/v1`,
    /// `http://localhost:11434/v1`); Anthropic is `https://api.anthropic.com`; Gemini is
    /// `https://generativelanguage.googleapis.com`.
    public var baseURL: String?
    public var model: String?
    public var apiKeyEnv: String?
    public var prompt: String = "Write one short, factual sentence describing this image for alt text. No preamble."
    public var maxTokens: Int = 120
    public var timeoutSeconds: Double = 60
    public var maxAttempts: Int = 3
    public var initialBackoffSeconds: Double = 1
    public var maxBackoffSeconds: Double = 30
    public var maxInFlight: Int = 4
    public var maxResponseBytes: Int = 1 << 20
    public var breakerFailures: Int = 5
    public var breakerOpenSeconds: Double = 60
    /// Ask an OpenAI-compatible server for token log-probabilities (`logprobs: true`), from which the caption's
    /// confidence is derived. Off by default: not every compatible server accepts the field.
    public var logprobs: Bool = false

    public init() {}

    /// The base URL when none is configured.
    public var effectiveBaseURL: String {
        if let baseURL { return baseURL }
        switch provider {
        case .anthropic: return "https://api.anthropic.com"
        case .gemini: return "https://generativelanguage.googleapis.com"
        case .openAICompatible, .none: return "https://api.openai.com/v1"
        }
    }

    public var effectiveModel: String {
        if let model { return model }
        switch provider {
        case .anthropic: return "claude-3-5-haiku-latest"
        case .gemini: return "gemini-2.0-flash"
        case .openAICompatible, .none: return "gpt-4o-mini"
        }
    }

    public var effectiveAPIKeyEnv: String {
        if let apiKeyEnv { return apiKeyEnv }
        switch provider {
        case .anthropic: return "ANTHROPIC_API_KEY"
        case .gemini: return "GEMINI_API_KEY"
        case .openAICompatible, .none: return "OPENAI_API_KEY"
        }
    }
}

/// Message priority (urgency) detection.
public struct PriorityConfig: Sendable, Equatable {
    /// `rules` (offline, deterministic) or `llm` (OpenAI-compatible chat completions, rules on any failure).
    public var engine: PriorityEngineKind = .rules
    /// Indicator list in Wordlists/ (`priority-{language}.tsv`).
    public var language: String = "en"
    public var baseURL: String = "https://api.openai.com/v1"
    public var model: String = "gpt-4o-mini"
    public var apiKeyEnv: String = "OPENAI_API_KEY"
    public var timeoutSeconds: Double = 20
    /// The time zone of the app's users (IANA name, e.g. `Europe/London`): a deadline said as a time of day ("by
    /// 5pm") counts from when the message was sent, read in this zone. nil: the machine's (never checked by name,
    /// so an unusual `TZ` cannot stop Sluice from starting).
    public var timeZone: String?
    /// `timeZone` as a zone (the machine's when unset; an unknown name is refused by `validate()`).
    public var zone: TimeZone { timeZone.flatMap { TimeZone(identifier: $0) } ?? .current }
    public init() {}
}

/// `sluice serve`.
/// `api.images`: who may read approved images (seed 000: every signed-in user).
public struct APIImagesConfig: Sendable, Equatable {
    public var visibility: ImageVisibility = .authenticated
    public init() {}
}

public struct APIConfig: Sendable, Equatable {
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    /// Env var with comma-separated app tokens for trusted backends.
    public var appTokensEnv: String = "SLUICE_APP_TOKENS"
    /// Env var with the HS256 secret for end-user JWTs.
    public var jwtSecretEnv: String = "SLUICE_JWT_SECRET"
    /// Behind a reverse proxy: take the client address for per-IP limits from the first `X-Forwarded-For`
    /// entry instead of the connection's peer. Off by default (a client could forge the header).
    public var trustForwardedFor: Bool = false
    public var auth = AuthConfig()
    public var images = APIImagesConfig()
    public var events = EventsConfig()
    public init() {}
}

/// `console`: the review console's sessions and claims.
public struct ConsoleConfig: Sendable, Equatable {
    /// Mark the session cookie `Secure` (serve the console over HTTPS, e.g. behind a TLS proxy).
    public var secureCookie = false
    public var sessionHours: Double = 12
    /// How long opening an item claims it for one reviewer.
    public var claimSeconds: Double = 300
    public init() {}
}

/// `review`: checks on the machine.
public struct ReviewConfig: Sendable, Equatable {
    /// Share (0...1) of automatically approved images sent to the console's audit queue; 0 = none.
    public var auditSampleRate: Double = 0
    public init() {}
}

/// `report`: what reports do.
public struct ReportConfig: Sendable, Equatable {
    /// Distinct reporters of an approved item that send it back to review (its outputs withdrawn); 0 = never.
    public var autoReviewAfter = 3
    /// What a trusted reporter's report counts towards `autoReviewAfter` (users marked `trusted` in their profile).
    public var trustedWeight = 2
    /// A user with this many open reports (on them or their items) is flagged in the console; 0 = never.
    public var flagUserAfter = 3
    /// …or blocked by this many users within `flagWindowHours`; 0 = never.
    public var flagBlocksAfter = 3
    public var flagWindowHours: Double = 24
    public init() {}
}

/// `conversation`: the rules stage's messaging permissions (seed 003/004).
public struct ConversationConfig: Sendable, Equatable {
    /// What a blocked sender is told (seed 004's checkBlockOnMessage).
    public var autoReply = "This user has blocked you"
    /// Messages a non-follower may send before the recipient follows back (seed 003: one).
    public var requestLimit = 1
    public init() {}
}

/// `spam.*`: spam signals, each naming itself in the reason, each with its outcome (`block`, `review`, `mark`).
public struct SpamConfig: Sendable, Equatable {
    public struct Flood: Sendable, Equatable {
        public var perMinute = 20
        public var outcome: ConversationVerdict.Outcome = .review
    }

    public struct Duplicates: Sendable, Equatable {
        /// The same (normalised) text to more than this many distinct recipients within the window.
        public var recipients = 5
        public var windowSeconds = 600
        public var outcome: ConversationVerdict.Outcome = .review
    }

    public struct Links: Sendable, Equatable {
        /// Links from accounts younger than this are flagged (0 = off).
        public var minAccountAgeHours: Double = 24
        public var outcome: ConversationVerdict.Outcome = .review
        /// Links to these domains (and their subdomains) are flagged whatever the account's age.
        public var blockedDomains: [String] = []
        public var blockedDomainOutcome: ConversationVerdict.Outcome = .block
    }

    public struct Repeats: Sendable, Equatable {
        /// A run of more than this many identical characters or emoji.
        public var maxRun = 20
        public var outcome: ConversationVerdict.Outcome = .mark
    }

    public struct NewAccount: Sendable, Equatable {
        /// In the account's first hours: more than `messages` messages or `links` links.
        public var firstHours: Double = 1
        public var messages = 30
        public var links = 5
        public var outcome: ConversationVerdict.Outcome = .mark
    }

    /// An operator's own rule over a counter.
    public struct CounterRule: Sendable, Equatable {
        public enum Counter: String, Sendable, ConfigChoice {
            case messages, links, mentions, recipients
            public static let role = "a counter"
        }

        public var name: String
        public var counter: Counter
        /// 0 = per message (e.g. mentions in one message).
        public var windowSeconds = 3600
        public var threshold: Int
        /// Only accounts younger than this many hours (nil = every account).
        public var maxAccountAgeHours: Double?
        public var outcome: ConversationVerdict.Outcome = .review

        public init(name: String, counter: Counter, threshold: Int) {
            self.name = name
            self.counter = counter
            self.threshold = threshold
        }
    }

    public var enabled = true
    public var flood = Flood()
    public var duplicates = Duplicates()
    public var links = Links()
    public var repeats = Repeats()
    public var newAccount = NewAccount()
    public var counters: [CounterRule] = []
    public init() {}
}

/// PDQ hash banks: what feeds them and when their matches stop acting.
public struct BanksConfig: Sendable, Equatable {
    /// Every image blocked by the machine or a person joins `autoAddBank` (created as a block bank when missing).
    public var autoAddBlocked = false
    public var autoAddBank = "removed"
    /// Hashes of lower quality never act (PDQ's authors: below 50 the hash says little).
    public var minQuality = 50
    /// How often a running matcher looks for changed banks.
    public var refreshMilliseconds = 1000
    public var flood = Flood()

    /// A bank hash that matches more than `maxMatches` uploads within `windowSeconds` stops acting (quarantined)
    /// and alerts, until a person confirms it (`sluice banks confirm`).
    public struct Flood: Sendable, Equatable {
        public var windowSeconds = 3600
        public var maxMatches = 100
        public init() {}
    }

    public init() {}
}
