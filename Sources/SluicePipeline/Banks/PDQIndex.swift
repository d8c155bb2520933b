import SluiceCore

/// Multi-index hashing over PDQ hashes (Norouzi et al.): each hash is split into 16 chunks of 16 bits, and each
/// chunk has its own table from chunk value to entries. Two hashes within `t` bits agree within `t / 16` bits on
/// at least one chunk (pigeonhole), so a search probes, per chunk, every value within that radius (1 + 16 values
/// for PDQ's usual 31) and checks only the entries found there. Tables are compact (one offsets array and one
/// postings array per chunk); hashes appended after the build are scanned linearly until the next build.
public struct PDQIndex: Sendable {
    public private(set) var hashes: [PDQHash] = []
    /// Per chunk: 65,537 offsets into `postings` (entries whose chunk has value v are postings[offsets[v]..<offsets[v+1]]).
    private var offsets: [[Int32]] = []
    private var postings: [[Int32]] = []
    /// Entries at or after this index are not in the tables yet.
    private var built = 0

    public init() {}

    public init(_ hashes: [PDQHash]) {
        self.hashes = hashes
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
        offsets = []
        postings = []
        offsets.reserveCapacity(16)
        postings.reserveCapacity(16)
        for chunk in 0..<16 {
            var counts = [Int32](repeating: 0, count: 65_537)
            for hash in hashes { counts[hash.chunk(chunk) + 1] += 1 }
            for v in 1..<65_537 { counts[v] += counts[v - 1] }
            var cursor = counts
            var list = [Int32](repeating: 0, count: n)
            for (entry, hash) in hashes.enumerated() {
                let v = hash.chunk(chunk)
                list[Int(cursor[v])] = Int32(entry)
                cursor[v] += 1
            }
            offsets.append(counts)
            postings.append(list)
        }
        built = n
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
        hashes.withUnsafeBufferPointer { all in
            for chunk in 0..<16 where built > 0 {
                let value = query.chunk(chunk)
                offsets[chunk].withUnsafeBufferPointer { starts in
                    postings[chunk].withUnsafeBufferPointer { list in
                        func probe(_ v: Int) {
                            var i = Int(starts[v])
                            let end = Int(starts[v + 1])
                            while i < end {
                                let entry = Int(list[i])
                                let d = all[entry].distance(to: query)
                                if d <= threshold { body(entry, d) }
                                i += 1
                            }
                        }
                        probe(value)
                        if radius >= 1 {
                            for a in 0..<16 {
                                let flippedA = value ^ (1 << a)
                                probe(flippedA)
                                if radius >= 2 { for b in (a + 1)..<16 { probe(flippedA ^ (1 << b)) } }
                            }
                        }
                    }
                }
            }
            var entry = built
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
