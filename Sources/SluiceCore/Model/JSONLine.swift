import Foundation

/// One line of a JSON Lines file (a text queue, a relations import) read as a JSON object, or the reason it is not
/// one, naming what is wrong: `not valid UTF-8`, `not valid JSON (…)` with the parser's own account (a missing
/// quote, a lone UTF-16 surrogate in a `\u` escape, where it stopped), or `not a JSON object (an array)`.
public enum JSONLine {
    public static func object(_ bytes: Data) -> Result<[String: Any], Problem> {
        guard String(validating: bytes, as: UTF8.self) != nil else { return .failure(Problem("not valid UTF-8")) }
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: bytes, options: [.fragmentsAllowed])
        } catch {
            let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String)
                .map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ". ")) }
            return .failure(Problem("not valid JSON" + (detail.map { " (\($0))" } ?? "")))
        }
        guard let object = value as? [String: Any] else { return .failure(Problem("not a JSON object (\(kind(of: value)))")) }
        return .success(object)
    }

    public struct Problem: Error, Equatable, Sendable {
        public var message: String
        init(_ message: String) { self.message = message }
    }

    static func kind(of value: Any) -> String {
        switch value {
        case is [Any]: "an array"
        case is String: "a string"
        case is NSNull: "null"
        case let number as NSNumber where isBoolean(number): "true or false"
        default: "a number"
        }
    }

    /// Whether a number `JSONSerialization` gave is JSON's `true` or `false` (Foundation bridges both to NSNumber).
    public static func isBoolean(_ number: NSNumber) -> Bool { String(cString: number.objCType) == "c" }
}
