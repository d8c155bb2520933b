import Foundation

/// What Foundation's JSON parser lets through but a config file must not hold: a key twice in one object (the
/// parser keeps the first, while `jq`, Python and most editors read the last — a stricter policy appended below an
/// older one would be silently ignored) and a comma before `}` or `]` (not JSON). Run on the raw bytes before
/// decoding; the problem names the key's path (`policy.racy`) or the line.
struct StrictJSONCheck {
    struct Problem: Error {
        var path: String?
        var line: Int
        var message: String
    }

    private let bytes: [UInt8]
    private var index = 0
    private var line = 1

    private init(_ data: Data) { bytes = [UInt8](data) }

    /// The first problem in `data`, if any. Syntax errors Foundation reports itself (with its own position) are left
    /// to it: the check stops quietly at anything it does not understand.
    static func problem(in data: Data) -> Problem? {
        var check = StrictJSONCheck(data)
        // A UTF-8 byte order mark, which Foundation's parser skips too.
        if check.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { check.index = 3 }
        do {
            check.skipSpace()
            try check.value(path: [])
        } catch let problem as Problem {
            return problem
        } catch {
            return nil
        }
        return nil
    }

    private struct Unreadable: Error {}

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x0A: line += 1; index += 1
            case 0x20, 0x09, 0x0D: index += 1
            default: return
            }
        }
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func value(path: [String]) throws {
        // Foundation's parser stops at 512 levels; so does this check (rather than the stack).
        guard path.count < 512 else { throw Unreadable() }
        switch peek() {
        case UInt8(ascii: "{"): try object(path: path)
        case UInt8(ascii: "["): try array(path: path)
        case UInt8(ascii: "\""): _ = try string()
        case nil: throw Unreadable()
        default:
            // A number or a literal: up to the next structural character or space.
            let start = index
            while let byte = peek(), ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(byte) { index += 1 }
            if index == start { throw Unreadable() }
        }
        skipSpace()
    }

    private mutating func object(path: [String]) throws {
        index += 1
        skipSpace()
        if peek() == UInt8(ascii: "}") { index += 1; return }
        var seen = Set<String>()
        while true {
            guard peek() == UInt8(ascii: "\"") else {
                if peek() == UInt8(ascii: "}") {
                    throw Problem(path: Self.joined(path), line: line, message: "a comma before \"}\" (trailing commas are not JSON)")
                }
                throw Unreadable()
            }
            let keyLine = line
            let key = try string()
            let here = path + [key]
            if !seen.insert(key).inserted {
                throw Problem(path: Self.joined(here), line: keyLine,
                              message: "the key appears twice in one object (line \(keyLine)); keep one")
            }
            skipSpace()
            guard peek() == UInt8(ascii: ":") else { throw Unreadable() }
            index += 1
            skipSpace()
            try value(path: here)
            switch peek() {
            case UInt8(ascii: ","): index += 1; skipSpace()
            case UInt8(ascii: "}"): index += 1; return
            default: throw Unreadable()
            }
        }
    }

    private mutating func array(path: [String]) throws {
        index += 1
        skipSpace()
        if peek() == UInt8(ascii: "]") { index += 1; return }
        var position = 0
        while true {
            if peek() == UInt8(ascii: "]") {
                throw Problem(path: Self.joined(path), line: line, message: "a comma before \"]\" (trailing commas are not JSON)")
            }
            var element = path
            if let last = element.popLast() { element.append("\(last)[\(position)]") } else { element.append("[\(position)]") }
            try value(path: element)
            position += 1
            switch peek() {
            case UInt8(ascii: ","): index += 1; skipSpace()
            case UInt8(ascii: "]"): index += 1; return
            default: throw Unreadable()
            }
        }
    }

    /// A string's value (escapes decoded, so `"a\u0062"` and `"ab"` are the same key).
    private mutating func string() throws -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() {
            if !raw.isEmpty { scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars); raw.removeAll() }
        }
        while let byte = peek() {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush()
                guard let escaped = peek() else { throw Unreadable() }
                index += 1
                switch escaped {
                case UInt8(ascii: "u"):
                    guard index + 4 <= bytes.count, let unit = UInt16(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                        throw Unreadable()
                    }
                    index += 4
                    var units = [unit]
                    if (0xD800...0xDBFF).contains(unit), index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u"),
                       let low = UInt16(String(decoding: bytes[index + 2..<index + 6], as: UTF8.self), radix: 16) {
                        units.append(low)
                        index += 6
                    }
                    scalars.append(contentsOf: String(decoding: units, as: UTF16.self).unicodeScalars)
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "b"): scalars.append("\u{8}")
                case UInt8(ascii: "f"): scalars.append("\u{C}")
                default: scalars.append(Unicode.Scalar(escaped))
                }
            default:
                raw.append(byte)
            }
        }
        throw Unreadable()
    }

    private static func joined(_ path: [String]) -> String? {
        path.isEmpty ? nil : path.joined(separator: ".")
    }
}
