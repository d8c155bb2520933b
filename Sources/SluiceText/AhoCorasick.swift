import SluiceCore
/// Aho–Corasick automaton over a–z for the `compound` roots: one pass over a word finds every root inside it.
struct AhoCorasick: Sendable {
    private var next: [Int32] = Array(repeating: 0, count: 26)
    private var fail: [Int32] = [0]
    /// Value and pattern length of the longest pattern ending at each state (via failure links), or -1.
    private var output: [(value: Int, length: Int)?] = [nil]

    init(patterns: [(pattern: [UInt8], value: Int)]) {
        for (pattern, value) in patterns where !pattern.isEmpty {
            var state = 0
            for byte in pattern {
                let slot = state * 26 + Int(byte &- 0x61)
                if next[slot] == 0 {
                    next.append(contentsOf: repeatElement(0, count: 26))
                    fail.append(0)
                    output.append(nil)
                    next[slot] = Int32(fail.count - 1)
                }
                state = Int(next[slot])
            }
            if output[state].map({ $0.length < pattern.count }) ?? true { output[state] = (value, pattern.count) }
        }
        // Breadth-first: failure links and goto completion.
        var queue: [Int] = []
        for letter in 0..<26 where next[letter] != 0 { queue.append(Int(next[letter])) }
        var head = 0
        while head < queue.count {
            let state = queue[head]
            head += 1
            if output[state] == nil, let inherited = output[Int(fail[state])] { output[state] = inherited }
            for letter in 0..<26 {
                let child = Int(next[state * 26 + letter])
                let viaFail = Int(next[Int(fail[state]) * 26 + letter])
                if child != 0 {
                    fail[child] = Int32(viaFail)
                    queue.append(child)
                } else {
                    next[state * 26 + letter] = Int32(viaFail)
                }
            }
        }
    }

    var isEmpty: Bool { fail.count == 1 }

    /// The first root found (value, start, end) in a word of a–z letters; nil if none or other characters.
    /// Offsets are relative to `start`.
    func firstMatch(in chars: [UInt32], _ start: Int, _ end: Int) -> (Int, Int, Int)? {
        if isEmpty { return nil }
        return next.withUnsafeBufferPointer { next in
            chars.withUnsafeBufferPointer { chars in
                var state = 0
                var index = start
                while index < end {
                    let char = chars[index]
                    guard char >= 0x61, char <= 0x7A else { return nil }
                    state = Int(next[state &* 26 &+ Int(char &- 0x61)])
                    if let hit = output[state] { return (hit.value, index + 1 - start - hit.length, index + 1 - start) }
                    index += 1
                }
                return nil
            }
        }
    }
}
