import SluiceCore
/// Aho–Corasick automaton over a–z for the `compound` roots: one pass over a word finds every root inside it.
struct AhoCorasick: Sendable {
    private var next: [Int32] = Array(repeating: 0, count: 26)
    private var fail: [Int32] = [0]
    /// Per state, the longest pattern ending there (via failure links): value in the high 32 bits, pattern length in
    /// the low 32, or -1 for none. One flat integer per state, so the scan reads one array slot per letter.
    private var output: [Int64] = [-1]

    init(patterns: [(pattern: [UInt8], value: Int)]) {
        for (pattern, value) in patterns where !pattern.isEmpty {
            var state = 0
            for byte in pattern {
                let slot = state * 26 + Int(byte &- 0x61)
                if next[slot] == 0 {
                    next.append(contentsOf: repeatElement(0, count: 26))
                    fail.append(0)
                    output.append(-1)
                    next[slot] = Int32(fail.count - 1)
                }
                state = Int(next[slot])
            }
            if output[state] < 0 || Int(output[state] & 0xFFFF_FFFF) < pattern.count {
                output[state] = Int64(value) << 32 | Int64(pattern.count)
            }
        }
        // Breadth-first: failure links and goto completion.
        var queue: [Int] = []
        for letter in 0..<26 where next[letter] != 0 { queue.append(Int(next[letter])) }
        var head = 0
        while head < queue.count {
            let state = queue[head]
            head += 1
            if output[state] < 0 { output[state] = output[Int(fail[state])] }
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

    /// The automaton's tables as raw views, for a scan that steps it letter by letter (valid inside `withStepper`).
    struct Stepper {
        fileprivate let next: UnsafeBufferPointer<Int32>
        fileprivate let output: UnsafeBufferPointer<Int64>

        /// The state after `letter` (0 for a … 25 for z).
        @inline(__always) func step(_ state: Int32, _ letter: UInt32) -> Int32 { next[Int(state) &* 26 &+ Int(letter)] }

        /// Whether a root ends at `state`.
        @inline(__always) func hasOutput(_ state: Int32) -> Bool { output[Int(state)] >= 0 }
    }

    func withStepper<Result>(_ body: (Stepper) -> Result) -> Result {
        next.withUnsafeBufferPointer { next in
            output.withUnsafeBufferPointer { output in body(Stepper(next: next, output: output)) }
        }
    }

    /// The root found when a scan stopped at `state` just before offset `end` (as `firstMatch` gives it);
    /// nil for state 0.
    func hit(state: Int32, end: Int32) -> (Int, Int, Int)? {
        let found = output[Int(state)]
        guard state > 0, found >= 0 else { return nil }
        return (Int(found >> 32), Int(end) - Int(found & 0xFFFF_FFFF), Int(end))
    }

    /// The first root found (value, start, end) in a word of a–z letters; nil if none or other characters.
    /// Offsets are relative to `start`.
    func firstMatch(in chars: UnsafeBufferPointer<UInt32>, _ start: Int, _ end: Int) -> (Int, Int, Int)? {
        if isEmpty { return nil }
        return withStepper { stepper in
            var state: Int32 = 0
            var index = start
            while index < end {
                let letter = chars[index] &- 0x61
                guard letter < 26 else { return nil }
                state = stepper.step(state, letter)
                if stepper.hasOutput(state) { return hit(state: state, end: Int32(index + 1 - start)) }
                index += 1
            }
            return nil
        }
    }
}
