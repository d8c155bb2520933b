/// A 256-bit PDQ perceptual hash (facebook/ThreatExchange `pdq/`): bit `i*16+j` is set when DCT coefficient
/// (i, j) is above the median. Written as 64 hex characters, most significant word first, exactly as the
/// reference implementation prints it, so hashes exchange with ThreatExchange and HMA lists unchanged.
public struct PDQHash: Sendable, Hashable, Codable, CustomStringConvertible, BitwiseCopyable {
    /// Bits 0…63, 64…127, 128…191, 192…255.
    public var words: (UInt64, UInt64, UInt64, UInt64)

    public init(words: (UInt64, UInt64, UInt64, UInt64)) {
        self.words = words
    }

    /// From the 256 bits in reference order (`bits[k]` is bit k).
    public init(bits: [Bool]) {
        var w: [UInt64] = [0, 0, 0, 0]
        for (k, bit) in bits.prefix(256).enumerated() where bit { w[k >> 6] |= 1 << UInt64(k & 63) }
        words = (w[0], w[1], w[2], w[3])
    }

    /// Parses 64 hex characters (either case); nil for anything else.
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var w: [UInt64] = [0, 0, 0, 0]
        for (index, char) in utf8.enumerated() {
            let nibble: UInt64
            switch char {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = UInt64(char - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = UInt64(char - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = UInt64(char - UInt8(ascii: "A") + 10)
            default: return nil
            }
            // Character 0 is the highest nibble of word 3.
            let word = 3 - index / 16
            w[word] = w[word] << 4 | nibble
        }
        words = (w[0], w[1], w[2], w[3])
    }

    public var hex: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for word in [words.3, words.2, words.1, words.0] { withUnsafeBytes(of: word.bigEndian) { bytes.append(contentsOf: $0) } }
        return ContentHash.hex(bytes)
    }

    public var description: String { hex }

    /// Word 0…3 (bits 64·i …).
    @inline(__always)
    func word(_ i: Int) -> UInt64 {
        switch i {
        case 0: words.0
        case 1: words.1
        case 2: words.2
        default: words.3
        }
    }

    public func bit(_ k: Int) -> Bool {
        word(k >> 6) >> UInt64(k & 63) & 1 == 1
    }

    /// Hamming distance: how many of the 256 bits differ.
    @inline(__always)
    public func distance(to other: PDQHash) -> Int {
        (words.0 ^ other.words.0).nonzeroBitCount + (words.1 ^ other.words.1).nonzeroBitCount
            + (words.2 ^ other.words.2).nonzeroBitCount + (words.3 ^ other.words.3).nonzeroBitCount
    }

    /// The 16-bit chunk `index` (0…15), as multi-index hashing splits a hash.
    @inline(__always)
    public func chunk(_ index: Int) -> Int {
        Int(truncatingIfNeeded: (word(index >> 2) >> UInt64((index & 3) * 16)) & 0xFFFF)
    }

    public static func == (lhs: PDQHash, rhs: PDQHash) -> Bool {
        lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let hash = PDQHash(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a PDQ hash (64 hex characters): \(text.prefix(80))"))
        }
        self = hash
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(hex)
    }
}

/// An image's PDQ hash, its quality (0…100: how much gradient the 64×64 downsample has; below 50 the hash is
/// too unreliable to act on) and, for matching, the hashes of its 8 dihedral variants (rotations and flips,
/// computed from the same DCT as the reference does).
public struct PDQFingerprint: Sendable, Equatable, Codable {
    public var hash: PDQHash
    public var quality: Int
    /// Original, rotate 90, 180, 270, flip X, flip Y, flip over the main and the other diagonal. Not stored.
    public var dihedral: [PDQHash]

    public init(hash: PDQHash, quality: Int, dihedral: [PDQHash] = []) {
        self.hash = hash
        self.quality = quality
        self.dihedral = dihedral.isEmpty ? [hash] : dihedral
    }

    enum CodingKeys: String, CodingKey { case hash, quality }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(hash: try c.decode(PDQHash.self, forKey: .hash), quality: try c.decode(Int.self, forKey: .quality))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(hash, forKey: .hash)
        try c.encode(quality, forKey: .quality)
    }

    public static func == (lhs: PDQFingerprint, rhs: PDQFingerprint) -> Bool {
        lhs.hash == rhs.hash && lhs.quality == rhs.quality
    }
}
