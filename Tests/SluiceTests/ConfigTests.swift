import Foundation
import SluiceCore
import SluiceTesting
import Testing

@Suite struct ConfigTests {
    let base = URL(fileURLWithPath: "/srv/sluice")

    @Test func committedPipelineJSONLoadsWithDefaults() throws {
        let config = try PipelineConfig.load(from: TestEnvironment.repositoryRoot.appendingPathComponent("pipeline.json"))
        #expect(config.dataRoot == TestEnvironment.repositoryRoot.appendingPathComponent("data").standardizedFileURL)
        #expect(config.store.path.lastPathComponent == "sluice.sqlite")
        #expect(config.vision.provider == .googleVision)
        #expect(config.limits.maxBytes == 25 * 1024 * 1024)
        #expect(config.limits.maxPixels == 50_000_000)
        #expect(config.output.maxSide == 1920 && config.output.quality == 80)
        #expect(config.policy == .standard)
        #expect(config.concurrency.items == 0 && config.itemsInFlight == config.vision.maxInFlight + 2 * config.concurrency.effectiveCPU)
        #expect(config.limits.rate.exchangeMilliseconds == 100)
        #expect(config.limits.rate.holdBackPercent == 5)
        #expect(config.threads.embeddings.provider == .openAICompatible)
        #expect(config.threads.embeddings.baseURL == "http://127.0.0.1:8091/v1")
        #expect(config.threads.llm == nil)
        #expect(config.localVision.models == ["open_nsfw", "image_safety"])
        #expect(config.threads.languageModel(caption: config.caption).maxTokens == 1500)
    }

    @Test func storeURLNamesSQLiteOrPostgreSQL() throws {
        let sqlite = try PipelineConfig.parse(Data(#"{"dataRoot": "d", "store": {"url": "sqlite:s/y.sqlite"}}"#.utf8), baseDirectory: base)
        #expect(sqlite.store.path.path == "/srv/sluice/s/y.sqlite" && sqlite.store.postgres == nil)
        let postgres = try PipelineConfig.parse(Data(#"""
            {"dataRoot": "d", "store": {"url": "postgres://sluice@db.internal:6432/moderation?sslmode=verify-full&schema=app_1&maxConnections=8",
                                        "passwordEnv": "PGPASS"}}
            """#.utf8), baseDirectory: base)
        #expect(postgres.store.postgres == PostgresLocation(host: "db.internal", port: 6432, user: "sluice", database: "moderation",
                                                            schema: "app_1", tls: .verifyFull, maxConnections: 8))
        #expect(postgres.store.passwordEnv == "PGPASS")
        #expect(postgres.store.postgres?.description == "postgres://sluice@db.internal:6432/moderation (schema app_1)")
        let location = try #require(postgres.store.postgres)
        #expect(location.url == "postgres://sluice@db.internal:6432/moderation?sslmode=verify-full&schema=app_1&maxConnections=8")
        #expect(try PostgresLocation(url: location.url) == location, "the URL a location prints parses back to it")
        let defaults = try PipelineConfig.parse(Data(#"{"store": {"url": "postgresql://u@h/db"}}"#.utf8), baseDirectory: base)
        #expect(defaults.store.postgres == PostgresLocation(host: "h", port: 5432, user: "u", database: "db", tls: .prefer))
        #expect(defaults.store.passwordEnv == "SLUICE_STORE_PASSWORD")
    }

    @Test(arguments: [
        (#"{"store": {"url": "postgres://u:secret@h/db"}}"#, "store.url", "password"),
        (#"{"store": {"url": "postgres://u@h/db?sslmode=maybe"}}"#, "store.url", "sslmode \"maybe\""),
        (#"{"store": {"url": "postgres://u@h/db?pool=3"}}"#, "store.url", "unknown option \"pool\""),
        (#"{"store": {"url": "postgres://u@h/db?schema=a;drop"}}"#, "store.url", "schema"),
        (#"{"store": {"url": "postgres://h/db"}}"#, "store.url", "names no user"),
        (#"{"store": {"url": "postgres://u@h/"}}"#, "store.url", "names no database"),
        (#"{"store": {"url": "mysql://u@h/db"}}"#, "store.url", "unknown scheme"),
        (#"{"store": {"url": "sqlite:"}}"#, "store.url", "needs a path"),
        (#"{"store": {"url": "sqlite:a", "path": "b"}}"#, "store", "not both"),
        (#"{"store": {"url": "postgres://u@h/db", "passwordEnv": ""}}"#, "store.passwordEnv", "environment variable"),
    ])
    func badStoreSettingsNameTheKey(json: String, key: String, reason: String) throws {
        do {
            _ = try PipelineConfig.parse(Data(json.utf8), baseDirectory: base)
            Issue.record("\(json) was accepted")
        } catch {
            let text = "\(error)"
            #expect(text.contains(key) && text.contains(reason), "\(text)")
        }
    }

    @Test func relativePathsResolveAgainstTheConfigFolder() throws {
        let config = try PipelineConfig.parse(Data(#"{"dataRoot": "d", "store": {"path": "s/x.sqlite"}}"#.utf8), baseDirectory: base)
        #expect(config.dataRoot.path == "/srv/sluice/d")
        #expect(config.store.path.path == "/srv/sluice/s/x.sqlite")
        let absolute = try PipelineConfig.parse(Data(#"{"dataRoot": "/data"}"#.utf8), baseDirectory: base)
        #expect(absolute.dataRoot.path == "/data")
        #expect(absolute.store.path.path == "/data/sluice.sqlite")
    }

    @Test(arguments: [
        (#"{"dataRoot": "d", "visoin": {}}"#, "unknown config key \"visoin\""),
        // Foundation's parser keeps the first of two keys and takes trailing commas; jq and Python read the last.
        (#"{"policy": {"racy": {"block": "VERY_LIKELY"}}, "dataRoot": "d", "policy": {"racy": {"block": "LIKELY"}}}"#, "\"policy\": the key appears twice"),
        (#"{"dataRoot": "a", "dat\u0061Root": "b"}"#, "\"dataRoot\": the key appears twice"),
        (#"{"webhooks": [{"name": "a", "url": "http://h", "name": "b"}]}"#, "\"webhooks[0].name\": the key appears twice"),
        (#"{"text": {"maxLength": 100,}}"#, "\"text\": a comma before \"}\""),
        (#"{"dataRoot": "d",}"#, "line 1: a comma before \"}\""),
        (#"{"localVision": {"models": ["open_nsfw",]}}"#, "\"localVision.models\": a comma before \"]\""),
        (#"{"threads": {"llm": {"provider": "gemini", "prompt": "x"}}}"#, "unknown config key \"threads.llm.prompt\""),
        (#"{"threads": {"embeddings": {"provider": "bert"}}}"#, "threads.embeddings.provider"),
        (#"{"threads": {"embeddings": {"baseURL": "file:///x"}}}"#, "threads.embeddings.baseURL"),
        (#"{"threads": {"embeddings": {"batchSize": 0}}}"#, "threads.embeddings.batchSize"),
        (#"{"threads": {"fusionK": 0}}"#, "threads.fusionK"),
        (#"{"localVision": {"models": ["clip"]}}"#, "localVision.models"),
        (#"{"localVision": {"models": []}}"#, "localVision.models"),
        (#"{"localVision": {"models": ["image_safety"]}}"#, "image_safety scores violence only"),
        (#"{"localVision": {"models": ["open_nsfw", "open_nsfw"]}}"#, "localVision.models"),
        (#"{"localVision": {"modles": []}}"#, "unknown config key \"localVision.modles\""),
        (#"{"threads": {"minSimilarity": 2}}"#, "threads.minSimilarity"),
        (#"{"threads": {"maxMessageLimit": 0}}"#, "threads.maxMessageLimit"),
        (#"{"limits": {"rate": {"threads": {"limit": "x"}}}}"#, "limits.rate.threads"),
        (#"{"vision": {"endpont": "x"}}"#, "unknown config key \"vision.endpont\""),
        (#"{"policy": {"adult": {"blok": "LIKELY"}}}"#, "unknown config key \"policy.adult.blok\""),
        (#"{"policy": {"nudity": {}}}"#, "unknown config key \"policy.nudity\""),
        (#"{"policy": {"adult": {"block": "MAYBE"}}}"#, "policy.adult.block"),
        (#"{"vision": {"provider": "aws"}}"#, "vision.provider"),
        (#"{"vision": {"endpoint": "ftp://x"}}"#, "vision.endpoint"),
        (#"{"limits": {"maxBytes": "big"}}"#, "limits.maxBytes"),
        (#"{"limits": {"maxPixels": 0}}"#, "limits.maxPixels"),
        (#"{"output": {"quality": 101}}"#, "output.quality"),
        (#"{"policy": {"racy": {"block": "POSSIBLE", "review": "LIKELY"}}}"#, "policy.racy.review"),
        (#"{"dataRoot": 3}"#, "dataRoot"),
        (#"{"priority": {"timeZone": "Mars/Olympus"}}"#, #"bad value for config key "priority.timeZone": "Mars/Olympus" is not a time zone name"#),
        (#"{"concurrency": {"items": -1}}"#, "concurrency.items"),
        (#"{"limits": {"rate": {"exchangeMilliseconds": -1}}}"#, "limits.rate.exchangeMilliseconds"),
        (#"{"limits": {"rate": {"exchangeMilliseconds": 60001}}}"#, "limits.rate.exchangeMilliseconds"),
        (#"{"limits": {"rate": {"holdBackPercent": 51}}}"#, "limits.rate.holdBackPercent"),
        (#"{"limits": {"rate": {"holdBackPercent": -1}}}"#, "limits.rate.holdBackPercent"),
        (#"{"dataRoot": "d""#, "not valid JSON"),
        // A number that does not fit its key's type is named, not reported as invalid JSON.
        (#"{"output": {"quality": 80.5}}"#, #"bad value for config key "output.quality": expected a whole number"#),
        (#"{"text": {"maxLength": 99999999999999999999}}"#, #"bad value for config key "text.maxLength": expected a whole number"#),
        (#"{"webhooks": [{"name": "a", "url": "http://127.0.0.1:9/h", "maxAttempts": 2.5}]}"#, #"config key "webhooks[0].maxAttempts""#),
        (#"{"webhooks": [{"name": "a", "url": "http://127.0.0.1:9/h", "evnts": []}]}"#, #"unknown config key "webhooks[0].evnts""#),
        (#"{"webhooks": [{"name": "a"}]}"#, #"bad value for config key "webhooks[0].url": is required"#),
        ("[]", "must hold one JSON object"),
    ])
    func badConfigNamesTheKey(json: String, expected: String) throws {
        do {
            _ = try PipelineConfig.parse(Data(json.utf8), baseDirectory: base)
            Issue.record("accepted \(json)")
        } catch let error as ConfigurationError {
            #expect(error.description.contains(expected), "\(error.description)")
        }
    }

    @Test func unknownKeyErrorListsWhatIsAllowed() throws {
        #expect(throws: ConfigurationError.unknownKey(path: "limits.maxMegabytes", allowed: ["maxBytes", "maxPixels", "failOn", "maxMetadataBytes", "rate"])) {
            try PipelineConfig.parse(Data(#"{"limits": {"maxMegabytes": 3}}"#.utf8), baseDirectory: base)
        }
    }

    @Test func policyDecidesWithStandardThresholds() {
        let policy = ModerationPolicy.standard
        #expect(policy.decide(cleanResultCore) == .approve)
        var adult = cleanResultCore
        adult.adult = .likely
        #expect(policy.decide(adult) == .block(reason: "blocked by policy: adult LIKELY ≥ LIKELY"))
        var racy = cleanResultCore
        racy.racy = .likely
        #expect(policy.decide(racy) == .review(reason: "needs review: racy LIKELY ≥ POSSIBLE"))
        racy.racy = .veryLikely
        #expect(policy.decide(racy) == .block(reason: "blocked by policy: racy VERY_LIKELY ≥ VERY_LIKELY"))
        var violence = cleanResultCore
        violence.violence = .possible
        #expect(policy.decide(violence) == .review(reason: "needs review: violence POSSIBLE ≥ POSSIBLE"))
        // Nothing is approved without an adult signal.
        #expect(policy.decide(SafeSearch()) == .review(reason: "needs review: adult is UNKNOWN"))
        var medical = cleanResultCore
        medical.medical = .veryLikely
        #expect(policy.decide(medical) == .approve)
    }

    private var cleanResultCore: SafeSearch {
        SafeSearch(adult: .veryUnlikely, spoof: .veryUnlikely, medical: .unlikely, violence: .veryUnlikely, racy: .unlikely)
    }
}
