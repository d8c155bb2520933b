import Foundation

/// One line of a JSON Lines file (a text queue, a relations import) read as a JSON object, or the reason it is not
/// one, naming what is wrong: `not valid UTF-8`, `not valid JSON (…)` with the parser's own account (a missing
/// quote, a lone UTF-16 surrogate in a `\u` escape, where it stopped), or `not a JSON object (an array)`.
public enum JSONLine {
    public static func object(_ bytes: Data) -> Result<[String: Any], Problem> {
        if let plain = bytes.withUnsafeBytes(plainStringObject) { return .success(plain) }
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

    /// The line read directly when it is a flat object whose keys and values are all strings without escapes or
    /// control characters (every line of a queue whose writer has nothing to escape): the dictionary
    /// `JSONSerialization` gives for it, for a fraction of the work (Foundation's parser was ~6% of a text queue's
    /// ingest). Nil for anything else — another value, an escape, a repeated key, invalid UTF-8 in a string,
    /// any syntax it does not expect — which then goes to `JSONSerialization`, so errors keep its wording.
    static func plainStringObject(_ raw: UnsafeRawBufferPointer) -> [String: Any]? {
        let bytes = raw.bindMemory(to: UInt8.self)
        var index = 0
        func skipSpace() {
            // JSON's whitespace: space, tab, line feed, carriage return.
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
                index += 1
            }
        }
        func string() -> String? {
            guard index < bytes.count, bytes[index] == 0x22 else { return nil }
            let start = index + 1
            var end = start
            while end < bytes.count, bytes[end] != 0x22 {
                // A backslash (an escape) or a control character: JSONSerialization decides.
                if bytes[end] == 0x5C || bytes[end] < 0x20 { return nil }
                end += 1
            }
            guard end < bytes.count else { return nil }
            index = end + 1
            return String(validating: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
        skipSpace()
        guard index < bytes.count, bytes[index] == 0x7B else { return nil }
        index += 1
        var object: [String: Any] = [:]
        // Room for a queue line's fields at once: grown from empty, a four-field line reallocated and rehashed three times.
        object.reserveCapacity(8)
        skipSpace()
        if index < bytes.count, bytes[index] == 0x7D {
            index += 1
        } else {
            while true {
                guard let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == 0x3A else { return nil }
                index += 1
                skipSpace()
                guard let value = string(), object.updateValue(value, forKey: key) == nil else { return nil }
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == 0x7D {
                    index += 1
                    break
                }
                guard bytes[index] == 0x2C else { return nil }
                index += 1
                skipSpace()
            }
        }
        skipSpace()
        return index == bytes.count ? object : nil
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
