import Foundation

/// A fast, canonical JSON text (sorted keys, no whitespace) for the verdict types the store keeps as JSON:
/// the same value always gives the same text, so reprocessing compares text instead of decoding.
public protocol CanonicalJSON {
    func writeCanonicalJSON(into output: inout JSONBytes)
}

extension CanonicalJSON {
    public var canonicalJSON: String {
        // A priority verdict is ~300 bytes: one allocation instead of growing two or three times.
        var output = JSONBytes(capacity: 512)
        writeCanonicalJSON(into: &output)
        return output.text
    }
}

/// The UTF-8 bytes of a JSON text, written piece by piece and made a `String` once. Appending to a `String` piece by
/// piece checked its capacity, flags and counts on every append: a text queue line's two verdict texts took ~5% of
/// its ingest that way.
public struct JSONBytes {
    @usableFromInline var bytes: [UInt8] = []

    public init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// JSON written as it is (keys, punctuation, literals).
    @inlinable public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// A string's bytes as they are (a nested JSON text).
    public mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    public mutating func int(_ value: Int) {
        // An integer's text is at most 20 bytes: a small string, no allocation.
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A JSON string: quotes, backslashes, control characters and U+2028/2029 escaped.
    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        // Fast path: nothing to escape (no quote, backslash, control character, U+2028/2029's lead byte 0xE2).
        let plain = { (byte: UInt8) in byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte != 0xE2 }
        let copied = value.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard utf8.allSatisfy(plain) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied != true { escaped(value) }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { raw("null") }
    }

    public mutating func strings(_ values: some Collection<String>) {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            string(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func escaped(_ value: String) {
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": raw("\\\"")
            case "\\": raw("\\\\")
            case "\n": raw("\\n")
            case "\r": raw("\\r")
            case "\t": raw("\\t")
            default:
                if scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029 {
                    let hex = String(scalar.value, radix: 16)
                    raw("\\u")
                    raw(String(repeating: "0", count: 4 - hex.count) + hex)
                } else {
                    bytes.append(contentsOf: String(scalar).utf8)
                }
            }
        }
    }
}

/// JSON arrays of strings, escaped as the canonical texts are.
public enum JSONText {
    /// `values` as a JSON array of strings.
    public static func strings(_ values: some Collection<String>) -> String {
        var output = JSONBytes(capacity: 16 + values.count * 24)
        output.strings(values)
        return output.text
    }
}

extension TextVerdict: CanonicalJSON {
    public func writeCanonicalJSON(into output: inout JSONBytes) {
        output.raw(allowed ? #"{"allowed":true,"censored":"# : #"{"allowed":false,"censored":"#)
        output.string(censored)
        if let classifier {
            // Rare (only with `text.classifier`): Foundation's sorted-keys encoding is canonical enough here.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if let data = try? encoder.encode(classifier), let json = String(data: data, encoding: .utf8) {
                output.raw(#","classifier":"#)
                output.raw(json)
            }
        }
        output.raw(#","matches":["#)
        for (index, match) in matches.enumerated() {
            if index > 0 { output.raw(",") }
            output.raw(#"{"category":"#)
            output.string(match.category)
            output.raw(#","end":"#)
            output.int(match.end)
            output.raw(#","severity":"#)
            output.string(match.severity.rawValue)
            output.raw(#","start":"#)
            output.int(match.start)
            output.raw(#","term":"#)
            output.string(match.term)
            output.raw("}")
        }
        output.raw(#"],"reason":"#)
        output.optionalString(reason)
        output.raw("}")
    }
}

extension PriorityVerdict: CanonicalJSON {
    /// Every field the type has, in key order; the optional ones only when set (as `JSONEncoder` leaves them out).
    public func writeCanonicalJSON(into output: inout JSONBytes) {
        output.raw("{")
        if let category {
            output.raw(#""category":"#)
            output.string(category)
            output.raw(",")
        }
        if let confidence {
            output.raw(#""confidence":"#)
            output.string(confidence)
            output.raw(",")
        }
        output.raw(#""engine":"#)
        output.string(engine)
        if let fallbackReason {
            output.raw(#","fallbackReason":"#)
            output.string(fallbackReason)
        }
        output.raw(isUrgent ? #","isUrgent":true,"priority":"# : #","isUrgent":false,"priority":"#)
        output.string(priority)
        output.raw(#","reason":"#)
        output.string(reason)
        if let recommendedAction {
            output.raw(#","recommendedAction":"#)
            output.string(recommendedAction)
        }
        if let timeframe {
            output.raw(#","timeframe":"#)
            output.string(timeframe)
        }
        output.raw(#","urgencyIndicators":"#)
        output.strings(urgencyIndicators)
        output.raw(#","urgencyScore":"#)
        output.int(urgencyScore)
        output.raw("}")
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
