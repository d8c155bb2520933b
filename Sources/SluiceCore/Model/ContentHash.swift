import Crypto
import Foundation

/// SHA-256 as lower-case hex: uploads' content hashes, text hashes, run keys, ETags and safe file names.
public enum ContentHash {
    /// The whole digest (64 hex characters).
    public static func sha256<Bytes: DataProtocol>(_ data: Bytes) -> String {
        hex(SHA256.hash(data: data), bytes: 32)
    }

    /// The first `bytes` bytes of the digest as hex.
    public static func sha256Prefix<Bytes: DataProtocol>(_ data: Bytes, bytes: Int) -> String {
        hex(SHA256.hash(data: data), bytes: bytes)
    }

    private static func hex(_ digest: SHA256.Digest, bytes: Int) -> String {
        hex(digest.prefix(bytes))
    }

    /// Bytes as lower-case hex, two characters each (also how PDQ hashes are written).
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
