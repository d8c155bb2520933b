import Foundation

extension PipelineConfig {
    public static let defaultFileName = "pipeline.json"

    /// Reads and validates pipeline.json; relative paths resolve against the file's folder.
    public static func load(from file: URL) throws -> PipelineConfig {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw ConfigurationError.unreadable(path: file.path, reason: (error as NSError).localizedDescription)
        }
        return try parse(data, baseDirectory: file.deletingLastPathComponent(), sourceName: file.path)
    }

    /// Parses config JSON; `baseDirectory` anchors relative paths.
    public static func parse(_ data: Data, baseDirectory: URL, sourceName: String = "config") throws -> PipelineConfig {
        if let problem = StrictJSONCheck.problem(in: data) {
            if let path = problem.path { throw ConfigurationError.badValue(key: path, reason: problem.message) }
            throw ConfigurationError.invalidJSON(path: sourceName, reason: "line \(problem.line): \(problem.message)")
        }
        let file: ConfigFile
        do {
            file = try JSONDecoder().decode(ConfigFile.self, from: data)
        } catch let error as ConfigurationError {
            throw error
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.isEmpty {
            throw ConfigurationError.invalidJSON(path: sourceName, reason: Self.underlyingMessage(context))
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            throw ConfigurationError.invalidJSON(path: sourceName, reason: "the file must hold one JSON object ({…}) at the top level")
        } catch let error as DecodingError {
            throw ConfigurationError.badValue(key: Self.keyPath(of: error), reason: Self.reason(of: error))
        }
        let config = try file.resolve(baseDirectory: baseDirectory)
        try config.validate()
        return config
    }

    /// Range checks that the types alone cannot express.
    public func validate() throws {
        func require(_ ok: Bool, _ key: String, _ reason: String) throws {
            if !ok { throw ConfigurationError.badValue(key: key, reason: reason) }
        }
        let endpoint = URL(string: vision.endpoint)
        try require(endpoint?.scheme == "http" || endpoint?.scheme == "https", "vision.endpoint",
                    "\"\(vision.endpoint)\" is not an http(s) URL")
        try require(endpoint?.host?.isEmpty == false, "vision.endpoint", "\"\(vision.endpoint)\" has no host")
        try require(vision.timeoutSeconds > 0 && vision.timeoutSeconds <= 600, "vision.timeoutSeconds", "must be in 0 < t ≤ 600")
        try require((1...20).contains(vision.maxAttempts), "vision.maxAttempts", "must be 1...20")
        if let zone = priority.timeZone {
            try require(TimeZone(identifier: zone) != nil, "priority.timeZone",
                        "\"\(zone)\" is not a time zone name (IANA, e.g. \"Europe/London\", \"UTC\")")
        }
        try require(vision.initialBackoffSeconds >= 0, "vision.initialBackoffSeconds", "must be ≥ 0")
        try require(vision.maxBackoffSeconds >= vision.initialBackoffSeconds, "vision.maxBackoffSeconds",
                    "must be ≥ vision.initialBackoffSeconds")
        try require((1...1024).contains(vision.maxInFlight), "vision.maxInFlight", "must be 1...1024")
        try require((64...2048).contains(vision.classifyMaxSide), "vision.classifyMaxSide", "must be 64...2048")
        try require((1024...(64 << 20)).contains(vision.maxResponseBytes), "vision.maxResponseBytes", "must be 1 KiB...64 MiB")
        try require((1...1000).contains(vision.breakerFailures), "vision.breakerFailures", "must be 1...1000")
        try require(vision.breakerOpenSeconds > 0 && vision.breakerOpenSeconds <= 3600, "vision.breakerOpenSeconds", "must be in 0 < t ≤ 3600")
        try require((1...(1 << 30)).contains(limits.maxBytes), "limits.maxBytes", "must be 1...1073741824")
        try require((1...1_000_000_000).contains(limits.maxPixels), "limits.maxPixels", "must be 1...1000000000")
        try require((1024...(64 << 20)).contains(limits.maxMetadataBytes), "limits.maxMetadataBytes", "must be 1024...67108864")
        try require((16...16384).contains(output.maxSide), "output.maxSide", "must be 16...16384")
        try require((1...100).contains(output.quality), "output.quality", "must be 1...100")
        try require((16...2048).contains(output.thumbnailSize), "output.thumbnailSize", "must be 16...2048")
        try require((1...100).contains(output.thumbnailQuality), "output.thumbnailQuality", "must be 1...100")
        try require((0...256).contains(concurrency.cpu), "concurrency.cpu", "must be 0 (number of cores) ...256")
        try require((0...4096).contains(concurrency.items), "concurrency.items", "must be 0...4096 (0 = vision.maxInFlight + 2 per CPU thread)")
        try require(daemon.rescanSeconds >= 1, "daemon.rescanSeconds", "must be ≥ 1")
        try require(daemon.leaseSeconds >= 3 && daemon.leaseSeconds <= 3600, "daemon.leaseSeconds", "must be 3…3600")
        let captionURL = URL(string: caption.effectiveBaseURL)
        try require(captionURL?.scheme == "http" || captionURL?.scheme == "https", "caption.baseURL",
                    "\"\(caption.effectiveBaseURL)\" is not an http(s) URL")
        try require((1...8192).contains(caption.maxTokens), "caption.maxTokens", "must be 1...8192")
        try require(caption.timeoutSeconds > 0 && caption.timeoutSeconds <= 600, "caption.timeoutSeconds", "must be in 0 < t ≤ 600")
        try require((1...20).contains(caption.maxAttempts), "caption.maxAttempts", "must be 1...20")
        try require((1...256).contains(caption.maxInFlight), "caption.maxInFlight", "must be 1...256")
        try require(!caption.prompt.isEmpty, "caption.prompt", "must not be empty")
        try require((1...65535).contains(api.port), "api.port", "must be 1...65535")
        if let problem = text.classifier.problems().first { throw problem }
        for (name, rule) in limits.rate.all {
            try require((1...1_000_000).contains(rule.limit), "limits.rate.\(name).limit", "must be 1...1000000")
            try require((1...86_400).contains(rule.windowSeconds), "limits.rate.\(name).windowSeconds", "must be 1...86400")
        }
        try require((0...60_000).contains(limits.rate.exchangeMilliseconds), "limits.rate.exchangeMilliseconds", "must be 0...60000")
        try require((0...50).contains(limits.rate.holdBackPercent), "limits.rate.holdBackPercent", "must be 0...50")
        if let jwks = api.auth.jwksURL {
            let url = URL(string: jwks)
            try require(url?.scheme == "https" || url?.scheme == "http", "api.auth.jwksURL", "\"\(jwks)\" is not an http(s) URL")
        }
        try require(api.auth.jwksRefreshSeconds >= 10, "api.auth.jwksRefreshSeconds", "must be ≥ 10")
        try require((1...120).contains(api.auth.jwksTimeoutSeconds), "api.auth.jwksTimeoutSeconds", "must be 1...120")
        if let project = api.auth.firebaseProjectId {
            try require(!project.isEmpty && project.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }), "api.auth.firebaseProjectId",
                        "\"\(project)\" is not a Firebase project id")
        }
        try require(api.events.timeoutSeconds > 0 && api.events.timeoutSeconds <= 86_400, "api.events.timeoutSeconds", "must be in 0 < t ≤ 86400")
        try require((20...60_000).contains(api.events.pollMilliseconds), "api.events.pollMilliseconds", "must be 20...60000")
        var webhookNames = Set<String>()
        for (index, hook) in webhooks.enumerated() {
            let url = URL(string: hook.url)
            try require((url?.scheme == "https" || url?.scheme == "http") && url?.host?.isEmpty == false, "webhooks[\(index)].url",
                        "\"\(hook.url)\" is not an http(s) URL")
            try require(webhookNames.insert(hook.name).inserted, "webhooks[\(index)].name", "\"\(hook.name)\" is used twice")
            try require(!hook.events.isEmpty, "webhooks[\(index)].events", "name at least one event")
            try require(hook.secret != nil || hook.secretEnv != nil, "webhooks[\(index)]", "needs a secret or secretEnv to sign deliveries")
            if let secret = hook.secret {
                try require(secret.utf8.count >= WebhookConfig.minimumSecretBytes, "webhooks[\(index)].secret",
                            "is \(secret.utf8.count) bytes; a signing secret needs at least \(WebhookConfig.minimumSecretBytes) (anyone could forge deliveries signed with a short or empty one)")
            }
            try require((1...100).contains(hook.maxAttempts), "webhooks[\(index)].maxAttempts", "must be 1...100")
            try require(hook.timeoutSeconds > 0 && hook.timeoutSeconds <= 120, "webhooks[\(index)].timeoutSeconds", "must be in 0 < t ≤ 120")
        }
        try require(console.sessionHours > 0 && console.sessionHours <= 24 * 30, "console.sessionHours", "must be in 0 < h ≤ 720")
        try require(console.claimSeconds >= 10 && console.claimSeconds <= 3600, "console.claimSeconds", "must be 10...3600")
        try require((0...1).contains(review.auditSampleRate), "review.auditSampleRate", "must be 0...1")
        try require((0...1000).contains(conversation.requestLimit), "conversation.requestLimit", "must be 0...1000")
        try require(!conversation.autoReply.isEmpty && conversation.autoReply.count <= 500, "conversation.autoReply", "must be 1-500 characters")
        try require(spam.flood.perMinute >= 1, "spam.flood.perMinute", "must be ≥ 1")
        try require(HashBank.isValidName(banks.autoAddBank), "banks.autoAddBank", "must be \(HashBank.nameRule)")
        try require((0...100).contains(banks.minQuality), "banks.minQuality", "must be 0...100")
        try require((10...600_000).contains(banks.refreshMilliseconds), "banks.refreshMilliseconds", "must be 10...600000")
        try require((1...2_592_000).contains(banks.flood.windowSeconds), "banks.flood.windowSeconds", "must be 1...2592000")
        try require(banks.flood.maxMatches >= 1, "banks.flood.maxMatches", "must be ≥ 1")
        let threadLLM = threads.languageModel(caption: caption)
        if threads.llm != nil {
            let url = URL(string: threadLLM.effectiveBaseURL)
            try require(url?.scheme == "http" || url?.scheme == "https", "threads.llm.baseURL", "\"\(threadLLM.effectiveBaseURL)\" is not an http(s) URL")
            try require((1...32768).contains(threadLLM.maxTokens), "threads.llm.maxTokens", "must be 1...32768")
            try require(threadLLM.timeoutSeconds > 0 && threadLLM.timeoutSeconds <= 600, "threads.llm.timeoutSeconds", "must be in 0 < t ≤ 600")
            try require((1...20).contains(threadLLM.maxAttempts), "threads.llm.maxAttempts", "must be 1...20")
            try require((1...256).contains(threadLLM.maxInFlight), "threads.llm.maxInFlight", "must be 1...256")
        }
        let embedURL = URL(string: threads.embeddings.baseURL)
        try require(embedURL?.scheme == "http" || embedURL?.scheme == "https", "threads.embeddings.baseURL",
                    "\"\(threads.embeddings.baseURL)\" is not an http(s) URL")
        try require(!threads.embeddings.model.isEmpty, "threads.embeddings.model", "must not be empty")
        try require((1...2048).contains(threads.embeddings.batchSize), "threads.embeddings.batchSize", "must be 1...2048")
        try require(threads.embeddings.timeoutSeconds > 0 && threads.embeddings.timeoutSeconds <= 600, "threads.embeddings.timeoutSeconds",
                    "must be in 0 < t ≤ 600")
        try require((1...20).contains(threads.embeddings.maxAttempts), "threads.embeddings.maxAttempts", "must be 1...20")
        try require((1...64).contains(threads.embeddings.maxInFlight), "threads.embeddings.maxInFlight", "must be 1...64")
        try require((10...600_000).contains(threads.embeddings.intervalMilliseconds), "threads.embeddings.intervalMilliseconds", "must be 10...600000")
        try require((1...10_000).contains(threads.maxMessageLimit), "threads.maxMessageLimit", "must be 1...10000")
        try require((1000...1_000_000).contains(threads.maxPromptCharacters), "threads.maxPromptCharacters", "must be 1000...1000000")
        try require((-1...1).contains(threads.minSimilarity), "threads.minSimilarity", "must be -1...1")
        try require((1...1000).contains(threads.fusionK), "threads.fusionK", "must be 1...1000")
        try require(!localVision.models.isEmpty && localVision.models.allSatisfy(LocalVisionConfig.known.contains)
                        && Set(localVision.models).count == localVision.models.count,
                    "localVision.models", "must list models from \(LocalVisionConfig.known.joined(separator: ", ")), each once")
        try require(!Set(localVision.models).isDisjoint(with: LocalVisionConfig.adultModels), "localVision.models",
                    "image_safety scores violence only; list open_nsfw or nudenet with it (adult and racy would be UNKNOWN for every image)")
        if let distance = vision.reuseWithinDistance {
            try require((0...31).contains(distance), "vision.reuseWithinDistance", "must be 0...31 (bits of 256), or null for off")
        }
        try require(spam.duplicates.recipients >= 1, "spam.duplicates.recipients", "must be ≥ 1")
        try require((1...86_400).contains(spam.duplicates.windowSeconds), "spam.duplicates.windowSeconds", "must be 1...86400")
        try require(spam.links.minAccountAgeHours >= 0, "spam.links.minAccountAgeHours", "must be ≥ 0")
        for (index, domain) in spam.links.blockedDomains.enumerated() {
            try require(!domain.isEmpty && !domain.contains("/") && !domain.contains(" "), "spam.links.blockedDomains[\(index)]",
                        "\"\(domain)\" is not a domain name")
        }
        try require(spam.repeats.maxRun >= 2, "spam.repeats.maxRun", "must be ≥ 2")
        try require(spam.newAccount.firstHours >= 0 && spam.newAccount.messages >= 1 && spam.newAccount.links >= 0, "spam.newAccount",
                    "firstHours ≥ 0, messages ≥ 1, links ≥ 0")
        var counterNames = Set<String>()
        for (index, rule) in spam.counters.enumerated() {
            try require(!rule.name.isEmpty && counterNames.insert(rule.name).inserted, "spam.counters[\(index)].name", "must be set and unique")
            try require(rule.threshold >= 0, "spam.counters[\(index)].threshold", "must be ≥ 0")
            try require((0...2_592_000).contains(rule.windowSeconds), "spam.counters[\(index)].windowSeconds", "must be 0...2592000")
            try require(rule.windowSeconds > 0 || rule.counter == .mentions || rule.counter == .links, "spam.counters[\(index)].windowSeconds",
                        "0 (per message) works for mentions and links only")
        }
        try require((1...100).contains(report.trustedWeight), "report.trustedWeight", "must be 1...100")
        try require(report.flagUserAfter >= 0 && report.flagBlocksAfter >= 0, "report.flagUserAfter", "flag thresholds must be ≥ 0")
        try require(report.flagWindowHours > 0 && report.flagWindowHours <= 24 * 365, "report.flagWindowHours", "must be in 0 < h ≤ 8760")
        try require((0...1000).contains(report.autoReviewAfter), "report.autoReviewAfter", "must be 0...1000 (0 = never)")
        try require(!api.host.isEmpty, "api.host", "must not be empty")
        try require((1...1_000_000).contains(text.maxLength), "text.maxLength", "must be 1...1000000")
        try require(!text.languages.isEmpty || !text.wordlists.isEmpty, "text.languages", "load at least one language or wordlist")
        for language in text.languages {
            try require(!language.isEmpty && language.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }), "text.languages",
                        "\"\(language)\" is not a language file name")
        }
        for (category, rule) in policy.categories {
            if let block = rule.block, let review = rule.review {
                try require(review <= block, "policy.\(category.rawValue).review", "must not be above policy.\(category.rawValue).block")
            }
            try require(rule.block != .unknown && rule.review != .unknown, "policy.\(category.rawValue)",
                        "UNKNOWN is not a threshold; use onUnknown")
        }
    }

    static func keyPath(of error: DecodingError) -> String {
        let path: [any CodingKey]
        switch error {
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context):
            path = context.codingPath
        case let .keyNotFound(key, context):
            path = context.codingPath + [key]
        @unknown default:
            path = []
        }
        return keyPath(path)
    }

    /// `webhooks[0].url`: keys joined by dots, array positions in brackets.
    static func keyPath(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    static func reason(of error: DecodingError) -> String {
        switch error {
        case let .typeMismatch(type, _): "expected \(typeName(type))"
        case let .valueNotFound(type, _): "expected \(typeName(type)), found null"
        case .keyNotFound: "is required"
        case let .dataCorrupted(context): underlyingMessage(context)
        @unknown default: "invalid"
        }
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type, is String?.Type: "a string"
        case is Int.Type, is Int?.Type: "a whole number (at most 9223372036854775807)"
        case is Double.Type, is Double?.Type: "a number"
        case is Bool.Type, is Bool?.Type: "true or false"
        default: "\(type)"
        }
    }

    private static func underlyingMessage(_ context: DecodingError.Context) -> String {
        if let underlying = context.underlyingError as NSError? {
            return underlying.userInfo[NSDebugDescriptionErrorKey] as? String ?? context.debugDescription
        }
        return context.debugDescription
    }
}

/// The file's shape, before paths are resolved.
private struct ConfigFile: Decodable {
    var dataRoot: String
    var store: StoreSection?
    var vision: VisionConfig
    var policy: ModerationPolicy
    var limits: LimitsConfig
    var output: OutputConfig
    var concurrency: ConcurrencyConfig
    var daemon: DaemonConfig
    var text: TextSection?
    var caption: CaptionConfig
    var priority: PriorityConfig
    var api: APIConfig
    var webhooks: [WebhookConfig]
    var console: ConsoleConfig
    var report: ReportConfig
    var review: ReviewConfig
    var conversation: ConversationConfig
    var spam: SpamConfig
    var banks: BanksConfig
    var threads: ThreadsConfig
    var localVision: LocalVisionConfig

    struct StoreSection: Decodable {
        var path: String?
        var url: String?
        var passwordEnv: String?
        init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(["path", "url", "passwordEnv"])
            let c = try decoder.container(keyedBy: AnyCodingKey.self)
            path = try c.optional(String.self, forKey: AnyCodingKey(stringValue: "path"))
            url = try c.optional(String.self, forKey: AnyCodingKey(stringValue: "url"))
            passwordEnv = try c.optional(String.self, forKey: AnyCodingKey(stringValue: "passwordEnv"))
            if path != nil, url != nil {
                throw ConfigurationError.badValue(key: "store", reason: "give store.url or store.path, not both")
            }
        }

        /// The store this section names, relative paths resolved by `path`.
        func resolve(defaultPath: URL, path resolvePath: (String, String) throws -> URL) throws -> StoreConfig {
            var config = StoreConfig(path: defaultPath)
            if let path { config.path = try resolvePath(path, "store.path") }
            if let url {
                switch try StoreConfig.parse(url: url) {
                case .sqlite(let path): config.path = try resolvePath(path, "store.url")
                case .postgres(let location): config.postgres = location
                }
            }
            if let passwordEnv {
                guard !passwordEnv.isEmpty else { throw ConfigurationError.badValue(key: "store.passwordEnv", reason: "must name an environment variable") }
                config.passwordEnv = passwordEnv
            }
            return config
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case dataRoot, store, vision, policy, limits, output, concurrency, daemon, text, caption, priority, api, webhooks, console, report, review, conversation, spam, banks, threads, localVision
    }

    struct TextSection: Decodable {
        var wordlistsDirectory: String?
        var languages: [String]?
        var wordlists: [String]?
        var allowlists: [String]?
        var actions: [Severity: SeverityAction]?
        var maxLength: Int?
        var classifier = TextClassifierConfig()

        enum CodingKeys: String, CodingKey, CaseIterable {
            case wordlistsDirectory, languages, wordlists, allowlists, actions, maxLength
            case classifier, classifierEndpoint, classifierModel, classifierApiKeyEnv, classifierTimeoutSeconds, classifierMaxAttempts
            case classifierMaxInFlight, classifierPolicy, classifierMayAllow
        }

        init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: CodingKeys.self)
            wordlistsDirectory = try c.optional(String.self, forKey: .wordlistsDirectory)
            languages = try c.optional([String].self, forKey: .languages)
            wordlists = try c.optional([String].self, forKey: .wordlists)
            allowlists = try c.optional([String].self, forKey: .allowlists)
            if c.contains(.actions) {
                let nested = try c.superDecoder(forKey: .actions)
                try nested.rejectUnknownKeys(Severity.allCases.map(\.rawValue))
                let named = try c.required([String: SeverityAction].self, forKey: .actions)
                actions = Dictionary(uniqueKeysWithValues: named.compactMap { key, action in Severity(rawValue: key).map { ($0, action) } })
            }
            maxLength = try c.optional(Int.self, forKey: .maxLength)
            classifier.kind = try c.value(.classifier, default: classifier.kind)
            classifier.endpoint = try c.optional(String.self, forKey: .classifierEndpoint)
            classifier.model = try c.optional(String.self, forKey: .classifierModel)
            classifier.apiKeyEnv = try c.optional(String.self, forKey: .classifierApiKeyEnv)
            classifier.timeoutSeconds = try c.value(.classifierTimeoutSeconds, default: classifier.timeoutSeconds)
            classifier.maxAttempts = try c.value(.classifierMaxAttempts, default: classifier.maxAttempts)
            classifier.maxInFlight = try c.value(.classifierMaxInFlight, default: classifier.maxInFlight)
            for (index, name) in try c.value(.classifierMayAllow, default: [String]()).enumerated() {
                guard let severity = Severity(rawValue: name) else {
                    throw ConfigurationError.badValue(key: "text.classifierMayAllow[\(index)]",
                                                      reason: "\"\(name)\" is not a severity; allowed: mild, strong, severe")
                }
                classifier.mayAllow.append(severity)
            }
            if c.contains(.classifierPolicy) {
                // Named categories replace the standard rule for that category; the others keep theirs.
                let nested = try c.superDecoder(forKey: .classifierPolicy)
                try nested.rejectUnknownKeys(TextCategory.allCases.map(\.rawValue))
                let named = try c.required([String: CategoryRuleSection].self, forKey: .classifierPolicy)
                for (key, section) in named {
                    if let category = TextCategory(rawValue: key) { classifier.policy[category] = section.rule }
                }
            }
        }

        struct CategoryRuleSection: Decodable {
            var rule: TextCategoryRule
            init(from decoder: any Decoder) throws {
                try decoder.rejectUnknownKeys(TextClassifierAction.allCases.map(\.rawValue))
                rule = try TextCategoryRule(from: decoder)
            }
        }
    }

    init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        dataRoot = try c.value(.dataRoot, default: "data")
        store = try c.optional(StoreSection.self, forKey: .store)
        vision = try c.value(.vision, default: VisionConfig())
        policy = try c.value(.policy, default: .standard)
        limits = try c.value(.limits, default: LimitsConfig())
        output = try c.value(.output, default: OutputConfig())
        concurrency = try c.value(.concurrency, default: ConcurrencyConfig())
        daemon = try c.value(.daemon, default: DaemonConfig())
        text = try c.optional(TextSection.self, forKey: .text)
        caption = try c.value(.caption, default: CaptionConfig())
        priority = try c.value(.priority, default: PriorityConfig())
        api = try c.value(.api, default: APIConfig())
        webhooks = try c.value(.webhooks, default: [])
        console = try c.value(.console, default: ConsoleConfig())
        report = try c.value(.report, default: ReportConfig())
        review = try c.value(.review, default: ReviewConfig())
        conversation = try c.value(.conversation, default: ConversationConfig())
        spam = try c.value(.spam, default: SpamConfig())
        banks = try c.value(.banks, default: BanksConfig())
        threads = try c.value(.threads, default: ThreadsConfig())
        localVision = try c.value(.localVision, default: LocalVisionConfig())
    }

    func resolve(baseDirectory: URL) throws -> PipelineConfig {
        func path(_ raw: String, key: String) throws -> URL {
            guard !raw.isEmpty, !raw.contains("\0") else {
                throw ConfigurationError.badValue(key: key, reason: "must be a non-empty path")
            }
            return raw.hasPrefix("/") ? URL(fileURLWithPath: raw) : baseDirectory.appendingPathComponent(raw)
        }
        let root = try path(dataRoot, key: "dataRoot")
        let storeConfig = try store.map { try $0.resolve(defaultPath: root.appendingPathComponent("sluice.sqlite"), path: path) }
        var textConfig = TextConfig(wordlistsDirectory: try path(text?.wordlistsDirectory ?? "Wordlists", key: "text.wordlistsDirectory"))
        if let text {
            if let languages = text.languages { textConfig.languages = languages }
            textConfig.wordlists = try (text.wordlists ?? []).enumerated().map { try path($1, key: "text.wordlists[\($0)]") }
            textConfig.allowlists = try (text.allowlists ?? []).enumerated().map { try path($1, key: "text.allowlists[\($0)]") }
            if let actions = text.actions { textConfig.actions.merge(actions) { $1 } }
            if let maxLength = text.maxLength { textConfig.maxLength = maxLength }
            textConfig.classifier = text.classifier
        }
        var config = PipelineConfig(dataRoot: root, store: storeConfig, vision: vision,
                                    policy: policy, limits: limits, output: output, concurrency: concurrency, daemon: daemon,
                                    text: textConfig)
        config.caption = caption
        config.priority = priority
        config.api = api
        if let file = api.auth.jwksFile { config.api.auth.jwksFile = try path(file.relativePath, key: "api.auth.jwksFile") }
        config.webhooks = webhooks
        config.console = console
        config.report = report
        config.review = review
        config.conversation = conversation
        config.spam = spam
        config.banks = banks
        config.threads = threads
        config.localVision = localVision
        return config
    }
}

extension VisionConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case provider, endpoint, apiKeyEnv, bearerTokenEnv, timeoutSeconds, maxAttempts, initialBackoffSeconds,
             maxBackoffSeconds, maxInFlight, classifyMaxSide, maxResponseBytes, breakerFailures, breakerOpenSeconds, model,
             reuseWithinDistance
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = VisionConfig()
        v.provider = try c.value(.provider, default: v.provider)
        v.endpoint = try c.value(.endpoint, default: v.endpoint)
        v.apiKeyEnv = try c.contains(.apiKeyEnv) ? c.optional(String.self, forKey: .apiKeyEnv) : v.apiKeyEnv
        v.bearerTokenEnv = try c.optional(String.self, forKey: .bearerTokenEnv)
        v.timeoutSeconds = try c.value(.timeoutSeconds, default: v.timeoutSeconds)
        v.maxAttempts = try c.value(.maxAttempts, default: v.maxAttempts)
        v.initialBackoffSeconds = try c.value(.initialBackoffSeconds, default: v.initialBackoffSeconds)
        v.maxBackoffSeconds = try c.value(.maxBackoffSeconds, default: v.maxBackoffSeconds)
        v.maxInFlight = try c.value(.maxInFlight, default: v.maxInFlight)
        v.classifyMaxSide = try c.value(.classifyMaxSide, default: v.classifyMaxSide)
        v.maxResponseBytes = try c.value(.maxResponseBytes, default: v.maxResponseBytes)
        v.breakerFailures = try c.value(.breakerFailures, default: v.breakerFailures)
        v.breakerOpenSeconds = try c.value(.breakerOpenSeconds, default: v.breakerOpenSeconds)
        v.model = try c.value(.model, default: v.model)
        v.reuseWithinDistance = try c.optional(Int.self, forKey: .reuseWithinDistance)
        self = v
    }
}

extension ModerationPolicy: Decodable {
    /// Categories left out of the file keep their standard rule.
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(SafeSearchCategory.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        var categories = ModerationPolicy.standard.categories
        for category in SafeSearchCategory.allCases {
            if let rule = try c.optional(CategoryPolicy.self, forKey: AnyCodingKey(stringValue: category.rawValue)) {
                categories[category] = rule
            }
        }
        self.init(categories: categories)
    }
}

extension LimitsConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case maxBytes, maxPixels, failOn, maxMetadataBytes, rate }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = LimitsConfig()
        v.maxBytes = try c.value(.maxBytes, default: v.maxBytes)
        v.maxPixels = try c.value(.maxPixels, default: v.maxPixels)
        v.failOn = try c.value(.failOn, default: v.failOn)
        v.maxMetadataBytes = try c.value(.maxMetadataBytes, default: v.maxMetadataBytes)
        v.rate = try c.value(.rate, default: v.rate)
        self = v
    }
}

extension RateLimitsConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case imageUpload, textMessage, report, detectPriority, caption, threads, exchangeMilliseconds, holdBackPercent }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = RateLimitsConfig()
        v.imageUpload = try c.value(.imageUpload, default: v.imageUpload)
        v.textMessage = try c.value(.textMessage, default: v.textMessage)
        v.report = try c.value(.report, default: v.report)
        v.detectPriority = try c.value(.detectPriority, default: v.detectPriority)
        v.caption = try c.value(.caption, default: v.caption)
        v.threads = try c.value(.threads, default: v.threads)
        v.exchangeMilliseconds = try c.value(.exchangeMilliseconds, default: v.exchangeMilliseconds)
        v.holdBackPercent = try c.value(.holdBackPercent, default: v.holdBackPercent)
        self = v
    }

    var all: [(String, RateLimitRule)] {
        [("imageUpload", imageUpload), ("textMessage", textMessage), ("report", report), ("detectPriority", detectPriority), ("caption", caption), ("threads", threads)]
    }
}

extension OutputConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case maxSide, quality, thumbnailSize, thumbnailQuality }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = OutputConfig()
        v.maxSide = try c.value(.maxSide, default: v.maxSide)
        v.quality = try c.value(.quality, default: v.quality)
        v.thumbnailSize = try c.value(.thumbnailSize, default: v.thumbnailSize)
        v.thumbnailQuality = try c.value(.thumbnailQuality, default: v.thumbnailQuality)
        self = v
    }
}

extension ConcurrencyConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case cpu, items }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(cpu: try c.value(.cpu, default: 0), items: try c.value(.items, default: 0))
    }
}

extension DaemonConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case rescanSeconds, leaseSeconds }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = DaemonConfig()
        v.rescanSeconds = try c.value(.rescanSeconds, default: v.rescanSeconds)
        v.leaseSeconds = try c.value(.leaseSeconds, default: v.leaseSeconds)
        self = v
    }
}

extension CaptionConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case provider, baseURL, model, apiKeyEnv, prompt, maxTokens, timeoutSeconds, maxAttempts, initialBackoffSeconds,
             maxBackoffSeconds, maxInFlight, maxResponseBytes, breakerFailures, breakerOpenSeconds, logprobs
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = CaptionConfig()
        v.provider = try c.value(.provider, default: v.provider)
        v.baseURL = try c.optional(String.self, forKey: .baseURL)
        v.model = try c.optional(String.self, forKey: .model)
        v.apiKeyEnv = try c.optional(String.self, forKey: .apiKeyEnv)
        v.prompt = try c.value(.prompt, default: v.prompt)
        v.maxTokens = try c.value(.maxTokens, default: v.maxTokens)
        v.timeoutSeconds = try c.value(.timeoutSeconds, default: v.timeoutSeconds)
        v.maxAttempts = try c.value(.maxAttempts, default: v.maxAttempts)
        v.initialBackoffSeconds = try c.value(.initialBackoffSeconds, default: v.initialBackoffSeconds)
        v.maxBackoffSeconds = try c.value(.maxBackoffSeconds, default: v.maxBackoffSeconds)
        v.maxInFlight = try c.value(.maxInFlight, default: v.maxInFlight)
        v.maxResponseBytes = try c.value(.maxResponseBytes, default: v.maxResponseBytes)
        v.breakerFailures = try c.value(.breakerFailures, default: v.breakerFailures)
        v.breakerOpenSeconds = try c.value(.breakerOpenSeconds, default: v.breakerOpenSeconds)
        v.logprobs = try c.value(.logprobs, default: v.logprobs)
        self = v
    }
}

extension PriorityConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case engine, language, baseURL, model, apiKeyEnv, timeoutSeconds, timeZone }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = PriorityConfig()
        v.engine = try c.value(.engine, default: v.engine)
        v.language = try c.value(.language, default: v.language)
        v.baseURL = try c.value(.baseURL, default: v.baseURL)
        v.model = try c.value(.model, default: v.model)
        v.apiKeyEnv = try c.value(.apiKeyEnv, default: v.apiKeyEnv)
        v.timeoutSeconds = try c.value(.timeoutSeconds, default: v.timeoutSeconds)
        v.timeZone = try c.optional(String.self, forKey: .timeZone)
        self = v
    }
}

extension APIConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case host, port, appTokensEnv, jwtSecretEnv, trustForwardedFor, auth, images, events
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = APIConfig()
        v.host = try c.value(.host, default: v.host)
        v.port = try c.value(.port, default: v.port)
        v.appTokensEnv = try c.value(.appTokensEnv, default: v.appTokensEnv)
        v.jwtSecretEnv = try c.value(.jwtSecretEnv, default: v.jwtSecretEnv)
        v.trustForwardedFor = try c.value(.trustForwardedFor, default: v.trustForwardedFor)
        v.auth = try c.value(.auth, default: v.auth)
        v.images = try c.value(.images, default: v.images)
        v.events = try c.value(.events, default: v.events)
        self = v
    }
}

extension APIImagesConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case visibility }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = APIImagesConfig()
        v.visibility = try c.value(.visibility, default: v.visibility)
        self = v
    }
}

extension AuthConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case jwksFile, jwksURL, jwksRefreshSeconds, jwksTimeoutSeconds, issuer, audience, firebaseProjectId, allowEmulatorTokens, userIdClaim
    }

    /// `jwksFile` is resolved against the config file's folder by `PipelineConfig.parse`.
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = AuthConfig()
        v.jwksFile = try c.optional(String.self, forKey: .jwksFile).map { URL(fileURLWithPath: $0) }
        v.jwksURL = try c.optional(String.self, forKey: .jwksURL)
        v.jwksRefreshSeconds = try c.value(.jwksRefreshSeconds, default: v.jwksRefreshSeconds)
        v.jwksTimeoutSeconds = try c.value(.jwksTimeoutSeconds, default: v.jwksTimeoutSeconds)
        v.issuer = try c.optional(String.self, forKey: .issuer)
        v.audience = try c.optional(String.self, forKey: .audience)
        v.firebaseProjectId = try c.optional(String.self, forKey: .firebaseProjectId)
        v.allowEmulatorTokens = try c.value(.allowEmulatorTokens, default: v.allowEmulatorTokens)
        v.userIdClaim = try c.value(.userIdClaim, default: v.userIdClaim)
        guard !v.userIdClaim.isEmpty else {
            throw DecodingError.dataCorruptedError(forKey: .userIdClaim, in: c, debugDescription: "expected a claim name, not an empty string")
        }
        self = v
    }
}

extension EventsConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case timeoutSeconds, pollMilliseconds }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = EventsConfig()
        v.timeoutSeconds = try c.value(.timeoutSeconds, default: v.timeoutSeconds)
        v.pollMilliseconds = try c.value(.pollMilliseconds, default: v.pollMilliseconds)
        self = v
    }
}

extension WebhookConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case name, url, events, secret, secretEnv, maxAttempts, timeoutSeconds }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let url = try c.required(String.self, forKey: .url)
        var v = WebhookConfig(name: try c.optional(String.self, forKey: .name) ?? URL(string: url)?.host ?? url, url: url)
        v.events = try c.value(.events, default: v.events)
        v.secret = try c.optional(String.self, forKey: .secret)
        v.secretEnv = try c.optional(String.self, forKey: .secretEnv)
        v.maxAttempts = try c.value(.maxAttempts, default: v.maxAttempts)
        v.timeoutSeconds = try c.value(.timeoutSeconds, default: v.timeoutSeconds)
        self = v
    }
}

extension ConsoleConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case secureCookie, sessionHours, claimSeconds }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = ConsoleConfig()
        v.secureCookie = try c.value(.secureCookie, default: v.secureCookie)
        v.sessionHours = try c.value(.sessionHours, default: v.sessionHours)
        v.claimSeconds = try c.value(.claimSeconds, default: v.claimSeconds)
        self = v
    }
}

extension ReportConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case autoReviewAfter, trustedWeight, flagUserAfter, flagBlocksAfter, flagWindowHours }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = ReportConfig()
        v.autoReviewAfter = try c.value(.autoReviewAfter, default: v.autoReviewAfter)
        v.trustedWeight = try c.value(.trustedWeight, default: v.trustedWeight)
        v.flagUserAfter = try c.value(.flagUserAfter, default: v.flagUserAfter)
        v.flagBlocksAfter = try c.value(.flagBlocksAfter, default: v.flagBlocksAfter)
        v.flagWindowHours = try c.value(.flagWindowHours, default: v.flagWindowHours)
        self = v
    }
}

extension ReviewConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case auditSampleRate }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = ReviewConfig()
        v.auditSampleRate = try c.value(.auditSampleRate, default: v.auditSampleRate)
        self = v
    }
}

extension ConversationConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case autoReply, requestLimit }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = ConversationConfig()
        v.autoReply = try c.value(.autoReply, default: v.autoReply)
        v.requestLimit = try c.value(.requestLimit, default: v.requestLimit)
        self = v
    }
}

extension SpamConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case enabled, flood, duplicates, links, repeats, newAccount, counters }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = SpamConfig()
        v.enabled = try c.value(.enabled, default: v.enabled)
        v.flood = try c.value(.flood, default: v.flood)
        v.duplicates = try c.value(.duplicates, default: v.duplicates)
        v.links = try c.value(.links, default: v.links)
        v.repeats = try c.value(.repeats, default: v.repeats)
        v.newAccount = try c.value(.newAccount, default: v.newAccount)
        v.counters = try c.value(.counters, default: v.counters)
        self = v
    }
}

extension SpamConfig.Flood: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case perMinute, outcome }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = Self()
        v.perMinute = try c.value(.perMinute, default: v.perMinute)
        v.outcome = try c.value(.outcome, default: v.outcome)
        self = v
    }
}

extension SpamConfig.Duplicates: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case recipients, windowSeconds, outcome }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = Self()
        v.recipients = try c.value(.recipients, default: v.recipients)
        v.windowSeconds = try c.value(.windowSeconds, default: v.windowSeconds)
        v.outcome = try c.value(.outcome, default: v.outcome)
        self = v
    }
}

extension SpamConfig.Links: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case minAccountAgeHours, outcome, blockedDomains, blockedDomainOutcome }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = Self()
        v.minAccountAgeHours = try c.value(.minAccountAgeHours, default: v.minAccountAgeHours)
        v.outcome = try c.value(.outcome, default: v.outcome)
        v.blockedDomains = try c.value(.blockedDomains, default: v.blockedDomains).map { $0.lowercased() }
        v.blockedDomainOutcome = try c.value(.blockedDomainOutcome, default: v.blockedDomainOutcome)
        self = v
    }
}

extension SpamConfig.Repeats: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case maxRun, outcome }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = Self()
        v.maxRun = try c.value(.maxRun, default: v.maxRun)
        v.outcome = try c.value(.outcome, default: v.outcome)
        self = v
    }
}

extension SpamConfig.NewAccount: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case firstHours, messages, links, outcome }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = Self()
        v.firstHours = try c.value(.firstHours, default: v.firstHours)
        v.messages = try c.value(.messages, default: v.messages)
        v.links = try c.value(.links, default: v.links)
        v.outcome = try c.value(.outcome, default: v.outcome)
        self = v
    }
}

extension SpamConfig.CounterRule: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case name, counter, windowSeconds, threshold, maxAccountAgeHours, outcome }
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.required(String.self, forKey: .name), counter: try c.required(Counter.self, forKey: .counter),
                  threshold: try c.required(Int.self, forKey: .threshold))
        windowSeconds = try c.value(.windowSeconds, default: windowSeconds)
        maxAccountAgeHours = try c.optional(Double.self, forKey: .maxAccountAgeHours)
        outcome = try c.value(.outcome, default: outcome)
    }
}

extension BanksConfig: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case autoAddBlocked, autoAddBank, minQuality, refreshMilliseconds, flood }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = BanksConfig()
        v.autoAddBlocked = try c.value(.autoAddBlocked, default: v.autoAddBlocked)
        v.autoAddBank = try c.value(.autoAddBank, default: v.autoAddBank)
        v.minQuality = try c.value(.minQuality, default: v.minQuality)
        v.refreshMilliseconds = try c.value(.refreshMilliseconds, default: v.refreshMilliseconds)
        v.flood = try c.value(.flood, default: v.flood)
        self = v
    }
}

extension BanksConfig.Flood: Decodable {
    enum CodingKeys: String, CodingKey, CaseIterable { case windowSeconds, maxMatches }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.allCases.map(\.rawValue))
        let c = try decoder.container(keyedBy: CodingKeys.self)
        var v = Self()
        v.windowSeconds = try c.value(.windowSeconds, default: v.windowSeconds)
        v.maxMatches = try c.value(.maxMatches, default: v.maxMatches)
        self = v
    }
}
