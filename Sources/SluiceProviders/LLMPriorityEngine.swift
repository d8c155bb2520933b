import AsyncHTTPClient
import Foundation
import Logging
import SluiceCore

/// Priority through an OpenAI-compatible chat completion that must answer one strict JSON object; any failure
/// (no key, HTTP error, timeout, non-JSON, a missing or mistyped field, a score out of range) falls back to the
/// rule engine, and the verdict records why.
public struct LLMPriorityEngine: PriorityEngine, ProviderProbe {
    public let name = "priority-llm"
    public var endpoint: String { url }
    public func probe() async -> String? { await http.probe(url) }

    static let systemPrompt = """
    You rate how urgent a chat message is for the person receiving it. Answer with one JSON object and nothing \
    else: {"priority": "high"|"medium"|"low", "urgencyScore": integer 0-100, "isUrgent": boolean, \
    "reason": short string, "urgencyIndicators": array of short strings, "confidence": "high"|"medium"|"low", \
    "timeframe": "immediate"|"today"|"soon"|"none", "category": "emergency"|"safety"|"health"|"work"|"family"|\
    "logistics"|"finance"|"social"|"info", "recommendedAction": short string}. high is a score of 70 or more, \
    medium 20-69, low below 20; isUrgent is true exactly when priority is high. Use the conversation context: a \
    short follow-up to an emergency or an outage is as urgent as it.
    """

    let url: String
    let model: String
    let apiKey: String?
    let http: ProviderHTTP
    let caller: ResilientCaller
    let fallback: any PriorityEngine
    /// Where a message's send time is read as a time of day (`priority.timeZone`), for the prompt's "Sent at".
    let timeZone: TimeZone

    public init(config: PriorityConfig, environment: [String: String], fallback: any PriorityEngine,
                client: HTTPClient = .providers, logger: Logger) {
        url = ProviderHTTP.join(config.baseURL, "/chat/completions")
        model = config.model
        apiKey = environment[config.apiKeyEnv].flatMap { $0.isEmpty ? nil : $0 }
        http = ProviderHTTP(name: "priority LLM", client: client, timeoutSeconds: config.timeoutSeconds,
                            maxResponseBytes: 256 * 1024, secrets: [apiKey])
        caller = ResilientCaller(provider: "priority-llm", retry: RetryState.Policy(maxAttempts: 2, initialBackoff: 0.5, maxBackoff: 5),
                                 breaker: CircuitBreaker.Policy(), maxInFlight: 8, logger: logger)
        self.fallback = fallback
        timeZone = config.zone
    }

    struct Request: Encodable {
        struct Message: Encodable {
            var role: String
            var content: String
        }

        struct Format: Encodable { var type: String }

        var model: String
        var messages: [Message]
        var response_format: Format
        var temperature: Double
    }

    struct Response: Decodable {
        struct Choice: Decodable {
            struct Message: Decodable { var content: String? }
            var message: Message
        }

        var choices: [Choice]
    }

    struct Answer: Decodable {
        var priority: String
        var urgencyScore: Int
        var isUrgent: Bool
        var reason: String
        var urgencyIndicators: [String]
        var confidence: String?
        var timeframe: String?
        var category: String?
        var recommendedAction: String?
    }

    public func score(_ text: String, context: String?) async -> PriorityVerdict { await judge(text, context: context, sentAt: nil) }

    /// With `sentAt` the request says when the message was sent ("Sent at: 16:50 (local time)"), so the model can
    /// read "by 5pm"; without it the request is as it always was (recorded answers still match).
    public func score(_ text: String, context: String?, sentAt: Date) async -> PriorityVerdict {
        await judge(text, context: context, sentAt: sentAt)
    }

    /// The model's answer, or the rules' when it fails.
    func judge(_ text: String, context: String?, sentAt: Date?) async -> PriorityVerdict {
        do throws(ProviderError) {
            return try await ask(text, context: context, sentAt: sentAt)
        } catch {
            var verdict = await fallback.score(text, context: context, sentAt: sentAt)
            verdict.engine = "rules (llm fallback)"
            verdict.fallbackReason = error.description
            return verdict
        }
    }

    func ask(_ text: String, context: String?, sentAt: Date?) async throws(ProviderError) -> PriorityVerdict {
        let sent = sentAt.map { date -> String in
            let minutes = timeZone.minutesOfDay(at: date)
            return "Sent at: \(minutes / 60 < 10 ? "0" : "")\(minutes / 60):\(minutes % 60 < 10 ? "0" : "")\(minutes % 60) (local time)\n\n"
        }
        let user = (sent ?? "") + (context.map { "Conversation context: \($0)\n\n" } ?? "") + "Message: \(text)"
        let request = Request(model: model, messages: [.init(role: "system", content: Self.systemPrompt), .init(role: "user", content: user)],
                              response_format: .init(type: "json_object"), temperature: 0)
        let body = (try? JSONEncoder().encode(request)) ?? Data()
        let headers = apiKey.map { [("Authorization", "Bearer \($0)")] } ?? []
        let (http, url) = (http, url)
        let content = try await caller.call { () async throws(ProviderError) -> String in
            let data = try await http.postJSON(url, headers: headers, body: body)
            let response = try http.decode(Response.self, from: data)
            guard let content = response.choices.first?.message.content else {
                throw ProviderError(kind: .malformedResponse, message: "priority LLM answer has no message content")
            }
            return content
        }
        return try Self.parse(content)
    }

    /// Strict: exactly the documented fields and types, consistent bands.
    static func parse(_ content: String) throws(ProviderError) -> PriorityVerdict {
        let data = Data(content.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw ProviderError(kind: .malformedResponse, message: "priority LLM answer is not a JSON object")
        }
        let expected: Set<String> = ["priority", "urgencyScore", "isUrgent", "reason", "urgencyIndicators", "confidence", "timeframe", "category",
                                     "recommendedAction"]
        if let extra = Set(object.keys).subtracting(expected).sorted().first {
            throw ProviderError(kind: .malformedResponse, message: "priority LLM answer has an unexpected field \"\(extra)\"")
        }
        let answer: Answer
        do { answer = try JSONDecoder().decode(Answer.self, from: data) } catch {
            throw ProviderError(kind: .malformedResponse, message: "priority LLM answer has wrong fields: \(ProviderHTTP.describe(error))")
        }
        guard (0...100).contains(answer.urgencyScore) else {
            throw ProviderError(kind: .malformedResponse, message: "priority LLM urgencyScore \(answer.urgencyScore) is outside 0-100")
        }
        guard answer.priority == PriorityVerdict.band(answer.urgencyScore), answer.isUrgent == (answer.urgencyScore >= 70) else {
            throw ProviderError(kind: .malformedResponse,
                                message: "priority LLM answer is inconsistent: \(answer.priority) with score \(answer.urgencyScore), isUrgent \(answer.isUrgent)")
        }
        func choice(_ value: String?, _ field: String, _ allowed: [String]) throws(ProviderError) -> String? {
            guard let value else { return nil }
            guard allowed.contains(value) else {
                throw ProviderError(kind: .malformedResponse, message: "priority LLM \(field) \"\(value.prefix(40))\" is not one of \(allowed.joined(separator: ", "))")
            }
            return value
        }
        return PriorityVerdict(urgencyScore: answer.urgencyScore, reason: String(answer.reason.prefix(500)),
                               urgencyIndicators: answer.urgencyIndicators.prefix(20).map { String($0.prefix(100)) }, engine: "llm",
                               confidence: try choice(answer.confidence, "confidence", ["high", "medium", "low"]),
                               timeframe: try choice(answer.timeframe, "timeframe", ["immediate", "today", "soon", "none"]),
                               category: try choice(answer.category, "category", ["emergency", "safety", "health", "work", "family", "logistics",
                                                                                  "finance", "social", "info"]),
                               recommendedAction: answer.recommendedAction.map { String($0.prefix(300)) })
    }
}
