import Crypto
import Foundation

/// SHA-256 as lower-case hex: uploads' content hashes, text hashes, run keys, ETags and safe file names.
public enum ContentHash {
    /// The whole digest (64 hex characters).
    public static func sha256<Bytes: DataProtocol>(_ data: Bytes) -> String {
        hex(SHA256.hash(data: data), bytes: 32)
    }

    /// The whole digest of a string's UTF-8 (a text's content hash), without copying it into `Data` first.
    public static func sha256(utf8 text: String) -> String {
        var text = text
        return text.withUTF8 { hex(digest(UnsafeRawBufferPointer($0)), bytes: 32) }
    }

    /// The first `bytes` bytes of the digest as hex.
    public static func sha256Prefix<Bytes: DataProtocol>(_ data: Bytes, bytes: Int) -> String {
        // Contiguous bytes (an array: a message's fingerprint) are hashed in place, not through `DataProtocol`'s regions.
        data.withContiguousStorageIfAvailable { hex(digest(UnsafeRawBufferPointer($0)), bytes: bytes) }
            ?? hex(SHA256.hash(data: data), bytes: bytes)
    }

    /// SHA-256 of bytes in memory, handed to the hash as one buffer.
    private static func digest(_ bytes: UnsafeRawBufferPointer) -> SHA256.Digest {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        return hasher.finalize()
    }

    private static func hex(_ digest: SHA256.Digest, bytes: Int) -> String {
        digest.withUnsafeBytes { raw in lowerHex(UnsafeRawBufferPointer(rebasing: raw.prefix(bytes))) }
    }

    /// Bytes as lower-case hex, two characters each (also how PDQ hashes are written).
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.withContiguousStorageIfAvailable { lowerHex(UnsafeRawBufferPointer($0)) } ?? Array(bytes).withUnsafeBytes { lowerHex($0) }
    }

    private static func lowerHex(_ raw: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: raw.count * 2) { text in
            for (index, byte) in raw.enumerated() {
                text[index * 2] = hexDigit(byte >> 4)
                text[index * 2 + 1] = hexDigit(byte & 0x0F)
            }
            return raw.count * 2
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x61 + nibble - 10 }
}
