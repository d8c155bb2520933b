import Foundation

/// A fast, canonical JSON text (sorted keys, no whitespace) for the verdict types the store keeps as JSON:
/// the same value always gives the same text, so reprocessing compares text instead of decoding.
public protocol CanonicalJSON {
    func writeCanonicalJSON(into output: inout String)
}

extension CanonicalJSON {
    public var canonicalJSON: String {
        var output = ""
        // A priority verdict is ~300 bytes: one allocation instead of growing two or three times.
        output.reserveCapacity(512)
        writeCanonicalJSON(into: &output)
        return output
    }
}

/// JSON strings and arrays of strings, escaped as the canonical texts are.
public enum JSONText {
    static func string(_ value: String, into output: inout String) {
        output.append("\"")
        // Fast path: nothing to escape (no quote, backslash, control character, U+2028/2029's lead byte 0xE2).
        // Read through one pointer where the string is contiguous (a native string always is).
        let plain = { (byte: UInt8) in byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte != 0xE2 }
        if value.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(plain) }) ?? value.utf8.allSatisfy(plain) {
            output.append(value)
            output.append("\"")
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": output.append("\\\"")
            case "\\": output.append("\\\\")
            case "\n": output.append("\\n")
            case "\r": output.append("\\r")
            case "\t": output.append("\\t")
            default:
                if scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    let hex = String(scalar.value, radix: 16)
                    output.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output.append("\"")
    }

    static func optionalString(_ value: String?, into output: inout String) {
        if let value { string(value, into: &output) } else { output.append("null") }
    }

    public static func strings(_ values: [String], into output: inout String) {
        output.append("[")
        for (index, value) in values.enumerated() {
            if index > 0 { output.append(",") }
            string(value, into: &output)
        }
        output.append("]")
    }
}

extension TextVerdict: CanonicalJSON {
    public func writeCanonicalJSON(into output: inout String) {
        output.append(allowed ? #"{"allowed":true,"censored":"# : #"{"allowed":false,"censored":"#)
        JSONText.string(censored, into: &output)
        if let classifier {
            // Rare (only with `text.classifier`): Foundation's sorted-keys encoding is canonical enough here.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if let data = try? encoder.encode(classifier), let json = String(data: data, encoding: .utf8) {
                output.append(#","classifier":"#)
                output.append(json)
            }
        }
        output.append(#","matches":["#)
        for (index, match) in matches.enumerated() {
            if index > 0 { output.append(",") }
            output.append(#"{"category":"#)
            JSONText.string(match.category, into: &output)
            output.append(#","end":"#)
            output.append(String(match.end))
            output.append(#","severity":""#)
            output.append(match.severity.rawValue)
            output.append(#"","start":"#)
            output.append(String(match.start))
            output.append(#","term":"#)
            JSONText.string(match.term, into: &output)
            output.append("}")
        }
        output.append(#"],"reason":"#)
        JSONText.optionalString(reason, into: &output)
        output.append("}")
    }
}

extension PriorityVerdict: CanonicalJSON {
    /// Every field the type has, in key order; the optional ones only when set (as `JSONEncoder` leaves them out).
    public func writeCanonicalJSON(into output: inout String) {
        output.append("{")
        if let category {
            output.append(#""category":"#)
            JSONText.string(category, into: &output)
            output.append(",")
        }
        if let confidence {
            output.append(#""confidence":"#)
            JSONText.string(confidence, into: &output)
            output.append(",")
        }
        output.append(#""engine":"#)
        JSONText.string(engine, into: &output)
        if let fallbackReason {
            output.append(#","fallbackReason":"#)
            JSONText.string(fallbackReason, into: &output)
        }
        output.append(isUrgent ? #","isUrgent":true,"priority":"# : #","isUrgent":false,"priority":"#)
        JSONText.string(priority, into: &output)
        output.append(#","reason":"#)
        JSONText.string(reason, into: &output)
        if let recommendedAction {
            output.append(#","recommendedAction":"#)
            JSONText.string(recommendedAction, into: &output)
        }
        if let timeframe {
            output.append(#","timeframe":"#)
            JSONText.string(timeframe, into: &output)
        }
        output.append(#","urgencyIndicators":"#)
        JSONText.strings(urgencyIndicators, into: &output)
        output.append(#","urgencyScore":"#)
        output.append(String(urgencyScore))
        output.append("}")
    }
}

extension CanonicalJSON where Self: Decodable & Equatable {
    /// Whether this value equals what a store kept as JSON text: compares the text first (stores write canonical
    /// JSON), and decodes only when the text differs (rows written by an older version).
    public func matches(storedJSON json: String?) -> Bool {
        guard let json else { return false }
        if canonicalJSON == json { return true }
        return (try? JSONDecoder().decode(Self.self, from: Data(json.utf8))) == self
    }
}
