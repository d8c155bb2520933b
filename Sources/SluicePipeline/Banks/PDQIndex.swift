#if canImport(Glibc)
import Glibc
#endif
import SluiceCore

/// Multi-index hashing over PDQ hashes (Norouzi et al.): each hash is split into 16 chunks of 16 bits, and each
/// chunk has its own table from chunk value to entries. Two hashes within `t` bits agree within `t / 16` bits on
/// at least one chunk (pigeonhole), so a search probes, per chunk, every value within that radius (1 + 16 values
/// for PDQ's usual 31) and checks only the entries found there. Tables are compact (one offsets array and one
/// postings array for all 16 chunks, on 2 MB pages where the kernel allows); hashes appended after the build are
/// scanned linearly until the next build.
public struct PDQIndex: Sendable {
    public private(set) var hashes: [PDQHash] = []
    /// Chunk k's 65,537 offsets start at k × 65,537; its postings at k × count (entries whose chunk k has value v
    /// are postings[k × count + offsets[k × 65,537 + v] ..< … + offsets[k × 65,537 + v + 1]]).
    private var offsets: [Int32] = []
    private var postings: [Int32] = []
    static let slots = 65_537
    /// Entries at or after this index are not in the tables yet.
    private var built = 0

    public init() {}

    public init(_ hashes: [PDQHash]) {
        self.hashes = Self.array(count: hashes.count) { buffer in _ = buffer.initialize(from: hashes) }
        rebuild()
    }

    public var count: Int { hashes.count }

    /// Adds a hash; returns its entry number.
    @discardableResult
    public mutating func append(_ hash: PDQHash) -> Int {
        hashes.append(hash)
        if hashes.count - built > 4096 { rebuild() }
        return hashes.count - 1
    }

    private mutating func rebuild() {
        let n = hashes.count
        let slots = Self.slots
        let hashes = hashes
        var cursor = [Int32](repeating: 0, count: slots)
        offsets = Self.array(count: 16 * slots) { (offsets: UnsafeMutableBufferPointer<Int32>) in
            for i in 0..<offsets.count { offsets.initializeElement(at: i, to: 0) }
            for chunk in 0..<16 {
                let base = chunk * slots
                for hash in hashes { offsets[base + hash.chunk(chunk) + 1] += 1 }
                for v in 1..<slots { offsets[base + v] += offsets[base + v - 1] }
            }
        }
        let offsets = offsets
        postings = Self.array(count: 16 * n) { (postings: UnsafeMutableBufferPointer<Int32>) in
            for chunk in 0..<16 {
                for v in 0..<slots { cursor[v] = offsets[chunk * slots + v] }
                let base = chunk * n
                for (entry, hash) in hashes.enumerated() {
                    let v = hash.chunk(chunk)
                    postings.initializeElement(at: base + Int(cursor[v]), to: Int32(entry))
                    cursor[v] += 1
                }
            }
        }
        built = n
    }

    /// An array of plain values whose memory asks the kernel for 2 MB pages (a lookup touches thousands of random
    /// places in tens of megabytes: with 4 KB pages most of them also miss the TLB). `fill` must set every element.
    static func array<T: BitwiseCopyable>(count: Int, fill: (UnsafeMutableBufferPointer<T>) -> Void) -> [T] {
        [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            #if canImport(Glibc)
            let huge = 1 << 21
            if let base = buffer.baseAddress, count * MemoryLayout<T>.stride >= 2 * huge {
                let start = (UInt(bitPattern: base) + UInt(huge - 1)) & ~UInt(huge - 1)
                let end = UInt(bitPattern: base + count) & ~UInt(huge - 1)
                if end > start, let region = UnsafeMutableRawPointer(bitPattern: start) {
                    _ = madvise(region, Int(end - start), Int32(MADV_HUGEPAGE))
                }
            }
            #endif
            fill(buffer)
            initialized = count
        }
    }

    /// Calls `body(entry, distance)` for every entry within `threshold` bits of `query` (an entry may be reported
    /// more than once).
    public func search(_ query: PDQHash, within threshold: Int, _ body: (Int, Int) -> Void) {
        guard threshold >= 0 else { return }
        let radius = threshold / 16
        if radius > 2 {
            for (entry, hash) in hashes.enumerated() {
                let d = hash.distance(to: query)
                if d <= threshold { body(entry, d) }
            }
            return
        }
        let slots = Self.slots
        let n = built
        hashes.withUnsafeBufferPointer { all in
            offsets.withUnsafeBufferPointer { starts in
                postings.withUnsafeBufferPointer { list in
                    @inline(__always) func probe(_ chunk: Int, _ v: Int) {
                        let slot = chunk * slots + v
                        var i = chunk * n + Int(starts[slot])
                        let end = chunk * n + Int(starts[slot + 1])
                        while i < end {
                            let entry = Int(list[i])
                            let d = all[entry].distance(to: query)
                            if d <= threshold { body(entry, d) }
                            i += 1
                        }
                    }
                    for chunk in 0..<16 where n > 0 {
                        let value = query.chunk(chunk)
                        probe(chunk, value)
                        if radius >= 1 {
                            for a in 0..<16 {
                                let flippedA = value ^ (1 << a)
                                probe(chunk, flippedA)
                                if radius >= 2 { for b in (a + 1)..<16 { probe(chunk, flippedA ^ (1 << b)) } }
                            }
                        }
                    }
                }
            }
            var entry = n
            while entry < all.count {
                let d = all[entry].distance(to: query)
                if d <= threshold { body(entry, d) }
                entry += 1
            }
        }
    }

    /// The closest entry within `threshold` of any of `queries`, or nil.
    public func nearest(_ queries: [PDQHash], within threshold: Int) -> (entry: Int, distance: Int)? {
        var best: (entry: Int, distance: Int)?
        for query in queries {
            search(query, within: threshold) { entry, d in
                if let current = best, current.distance <= d { return }
                best = (entry, d)
            }
        }
        return best
    }
}
