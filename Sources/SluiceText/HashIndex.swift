import SluiceCore
/// Open-addressing multimap from a precomputed 64-bit hash to small integers; no per-lookup hashing cost.
struct HashIndex: Sendable {
    private var keys: [UInt64] = Array(repeating: 0, count: 16)
    private var values: [Int32] = Array(repeating: -1, count: 16)
    private var count = 0

    mutating func insert(_ hash: UInt64, value: Int) {
        if (count + 1) * 2 > keys.count { grow() }
        var slot = Int(truncatingIfNeeded: hash) & (keys.count - 1)
        while values[slot] >= 0 {
            if keys[slot] == hash && values[slot] == Int32(value) { return }
            slot = (slot + 1) & (keys.count - 1)
        }
        keys[slot] = hash
        values[slot] = Int32(value)
        count += 1
    }

    func contains(_ hash: UInt64) -> Bool {
        var slot = Int(truncatingIfNeeded: hash) & (keys.count - 1)
        while values[slot] >= 0 {
            if keys[slot] == hash { return true }
            slot = (slot + 1) & (keys.count - 1)
        }
        return false
    }

    /// Calls `body` with every value stored under `hash`.
    func forEach(_ hash: UInt64, _ body: (Int) -> Void) {
        var slot = Int(truncatingIfNeeded: hash) & (keys.count - 1)
        while values[slot] >= 0 {
            if keys[slot] == hash { body(Int(values[slot])) }
            slot = (slot + 1) & (keys.count - 1)
        }
    }

    var allKeys: [UInt64] { keys.indices.filter { values[$0] >= 0 }.map { keys[$0] } }

    private mutating func grow() {
        let oldKeys = keys
        let oldValues = values
        keys = Array(repeating: 0, count: oldKeys.count * 2)
        values = Array(repeating: -1, count: oldKeys.count * 2)
        count = 0
        for index in oldKeys.indices where oldValues[index] >= 0 { insert(oldKeys[index], value: Int(oldValues[index])) }
    }
}
