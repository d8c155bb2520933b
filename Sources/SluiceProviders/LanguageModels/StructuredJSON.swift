import Foundation
import SluiceCore

/// Request bodies that carry a caller's JSON Schema, and answers read as free JSON: the schema is data, so these
/// bodies are built from JSON values rather than fixed `Encodable` types.
enum StructuredJSON {
    static func schema(_ request: StructuredRequest, provider: String) throws(ProviderError) -> Any {
        guard let schema = try? JSONSerialization.jsonObject(with: Data(request.schema.utf8)), schema is [String: Any] else {
            throw ProviderError(kind: .notConfigured, message: "\(provider): the \(request.schemaName) schema is not a JSON object")
        }
        return schema
    }

    static func body(_ object: [String: Any]) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }

    static func object(_ data: Data, provider: String) throws(ProviderError) -> [String: Any] {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw ProviderError(kind: .malformedResponse, message: "\(provider) answer is not a JSON object")
        }
        return object
    }

    /// The model's answer must itself be one JSON object; returned as compact JSON text.
    static func answerObject(_ text: String, provider: String) throws(ProviderError) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)), object is [String: Any],
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            throw ProviderError(kind: .malformedResponse, message: "\(provider) answer is not one JSON object: \(String(trimmed.prefix(80)))")
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func int(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }
}
