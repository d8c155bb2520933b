/// Naming rules of the drop-folder contract.
public enum Identifiers {
    /// `userId` and `imageId`: `[A-Za-z0-9_-]{1,128}`.
    public static func isValidSegment(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard (1...128).contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F || byte == 0x2D
        }
    }

    /// Why a segment is not a valid id, for the rejection reason; nil when valid.
    public static func problem(with value: String, role: String) -> String? {
        if value.isEmpty { return "\(role) is empty" }
        if value.utf8.count > 128 { return "\(role) is \(value.utf8.count) bytes long, over the 128 limit" }
        if isValidSegment(value) { return nil }
        let shown = String(value.unicodeScalars.prefix(64).map { scalar -> Character in
            scalar.value < 0x20 || scalar.value == 0x7F ? "?" : Character(scalar)
        })
        return "\(role) \"\(shown)\" has characters outside [A-Za-z0-9_-]"
    }

    public static func imageItemID(userId: String, imageId: String) -> String { "\(userId)/\(imageId)" }
}
