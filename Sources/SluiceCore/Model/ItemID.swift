/// An item's id as the store keys it: `{userId}/{imageId}` for images, the queue line's id for texts, and for
/// an upload rejected by its name, the raw relative path it was found at (`{folder}/{file}`).
public struct ItemID: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringInterpolation {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public init(stringInterpolation: DefaultStringInterpolation) { rawValue = String(stringInterpolation: stringInterpolation) }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The image this id names, when it is `{userId}/{imageId}` with both segments valid.
    public var image: ImageRef? {
        guard let slash = rawValue.utf8.firstIndex(of: 0x2F) else { return nil }
        let user = String(rawValue[..<slash])
        let image = String(rawValue[rawValue.index(after: slash)...])
        return ImageRef(userId: user, imageId: image)
    }

    public var description: String { rawValue }
    public static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One image of the drop-folder contract: a valid `userId` and `imageId`.
public struct ImageRef: Hashable, Sendable, CustomStringConvertible {
    public let userId: String
    public let imageId: String

    /// Nil unless both segments match `[A-Za-z0-9_-]{1,128}`.
    public init?(userId: String, imageId: String) {
        guard Identifiers.isValidSegment(userId), Identifiers.isValidSegment(imageId) else { return nil }
        self.userId = userId
        self.imageId = imageId
    }

    public var itemID: ItemID { ItemID("\(userId)/\(imageId)") }
    public var description: String { itemID.rawValue }
}

/// Naming rules of the drop-folder contract and the text queue.
public enum Identifiers {
    /// `userId` and `imageId`: `[A-Za-z0-9_-]{1,128}`.
    public static func isValidSegment(_ value: String) -> Bool {
        isValid(value) { $0 == 0x5F || $0 == 0x2D }
    }

    /// Text item ids: `[A-Za-z0-9_.:-]{1,128}` (no `/`, so they never look like image ids).
    public static func isValidTextID(_ value: String) -> Bool {
        isValid(value) { $0 == 0x5F || $0 == 0x2E || $0 == 0x3A || $0 == 0x2D }
    }

    private static func isValid(_ value: String, extra: (UInt8) -> Bool) -> Bool {
        var count = 0
        for byte in value.utf8 {
            count += 1
            guard count <= 128 else { return false }
            let alphanumeric = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            guard alphanumeric || extra(byte) else { return false }
        }
        return count > 0
    }

    /// Why a segment is not a valid id, for the rejection reason; nil when valid.
    public static func problem(with value: String, role: String) -> String? {
        if value.isEmpty { return "\(role) is empty" }
        if value.utf8.count > 128 { return "\(role) is \(value.utf8.count) bytes long, over the 128 limit" }
        if isValidSegment(value) { return nil }
        return "\(role) \(printable(value, limit: 64)) has characters outside [A-Za-z0-9_-]"
    }

    /// Text from outside (file names, messages, reasons) made safe to print on a terminal or in a one-line log
    /// record: control characters (C0, DEL, C1: escape sequences, carriage returns, line breaks that would forge a log
    /// line) are written as `\n`, `\t`, `\r` or `\u{1B}`; everything else is kept.
    public static func terminalSafe(_ value: String) -> String {
        guard value.unicodeScalars.contains(where: isControl) else { return value }
        var out = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            guard isControl(scalar) else { out.append(scalar); continue }
            let escaped = switch scalar {
            case "\n": "\\n"
            case "\t": "\\t"
            case "\r": "\\r"
            default: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
            out.append(contentsOf: escaped.unicodeScalars)
        }
        return String(out)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// A value from outside, quoted for a message: at most `limit` scalars, control characters shown as `?`.
    public static func printable(_ value: String, limit: Int = 80) -> String {
        let scalars = value.unicodeScalars
        let shown = String(String.UnicodeScalarView(scalars.prefix(limit).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
        return "\"\(shown)\""
    }
}
