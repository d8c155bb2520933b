import Foundation
import SluiceCore

/// PDQ, the perceptual hash of facebook/ThreatExchange (`pdq/`, "PDQ hashing" 2017), written from its
/// description and reference code: luminance, two passes of a Jarosz (box) filter sized so each of 64×64 output
/// cells sees its whole block, decimation to 64×64, the 16×16 low-frequency corner of a DCT (skipping the DC
/// row and column), and one bit per coefficient above the median. Quality is the reference's heuristic: the sum
/// of quantised gradients of the 64×64 image over 90, capped at 100. Dihedral variants come from sign changes and
/// transposes of the same DCT, so rotations and flips of an image match without hashing it eight times.
/// Arithmetic is in `Float`, as in the reference, so results agree with it bit for bit on the same luminance.
public enum PDQHasher {
    static let minimumSide = 5

    /// `pixels` is `height` rows of `width` pixels with `bands` interleaved 8-bit channels (1: grey, 3: RGB;
    /// a 4th band is ignored), rows `rowBytes` apart. Nil when a side is under 5 pixels.
    public static func fingerprint(pixels: UnsafeRawBufferPointer, width: Int, height: Int, bands: Int, rowBytes: Int) -> PDQFingerprint? {
        guard width >= minimumSide, height >= minimumSide, bands >= 1, rowBytes >= width * bands,
              pixels.count >= rowBytes * (height - 1) + width * bands else { return nil }
        var luma = [Float](repeating: 0, count: width * height)
        luma.withUnsafeMutableBufferPointer { out in
            for row in 0..<height {
                let base = row * rowBytes
                let outBase = row * width
                if bands >= 3 {
                    for col in 0..<width {
                        let p = base + col * bands
                        out[outBase + col] = 0.299 * Float(pixels[p]) + 0.587 * Float(pixels[p + 1]) + 0.114 * Float(pixels[p + 2])
                    }
                } else {
                    for col in 0..<width { out[outBase + col] = Float(pixels[base + col * bands]) }
                }
            }
        }
        return fingerprint(luma: &luma, width: width, height: height)
    }

    /// From a row-major luminance buffer (overwritten: it is the filter's working space).
    public static func fingerprint(luma: inout [Float], width: Int, height: Int) -> PDQFingerprint? {
        guard width >= minimumSide, height >= minimumSide, luma.count == width * height else { return nil }
        var scratch = [Float](repeating: 0, count: luma.count)
        let alongRows = windowSize(width)
        let alongCols = windowSize(height)
        var block = [Float](repeating: 0, count: 64 * 64)
        luma.withUnsafeMutableBufferPointer { a in
            scratch.withUnsafeMutableBufferPointer { b in
                var sums = [Float](repeating: 0, count: width)
                sums.withUnsafeMutableBufferPointer { sums in
                    for _ in 0..<2 {
                        var row = 0
                        while row + 8 <= height {
                            boxRows8(a, b, first: row, width: width, window: alongRows)
                            row += 8
                        }
                        while row < height {
                            box(a, b, start: row * width, count: width, stride: 1, window: alongRows)
                            row += 1
                        }
                        boxColumns(b, a, width: width, height: height, window: alongCols, sums: sums)
                    }
                }
            }
            // Decimate: the centre of each of the 64×64 cells.
            for i in 0..<64 {
                let row = Int((Double(i) + 0.5) * Double(height) / 64)
                for j in 0..<64 {
                    let col = Int((Double(j) + 0.5) * Double(width) / 64)
                    block[i * 64 + j] = a[row * width + col]
                }
            }
        }
        let quality = quality(block)
        let dct = dct16(block)
        let variants = dihedral(dct).map(bits)
        return PDQFingerprint(hash: variants[0], quality: quality, dihedral: variants)
    }

    /// Half a 64th of the side, rounded up (two passes together cover a full cell).
    static func windowSize(_ side: Int) -> Int { (side + 128 - 1) / 128 }

    /// The reference's running-mean schedule (`box1DFloat`) over `count` positions, the window centred and
    /// shrinking at both ends: each `step(add, subtract, write, size)` adds position `add` to the running sum,
    /// subtracts position `subtract`, then writes `sum / size` at position `write` — in the reference's order, so
    /// every filter below gives its results bit for bit.
    @inline(__always)
    static func boxSchedule(count: Int, window: Int, _ step: (_ add: Int?, _ subtract: Int?, _ write: Int?, _ size: Float) -> Void) {
        let half = (window + 2) / 2
        var left = 0, right = 0, out = 0
        var size: Float = 0
        for _ in 0..<max(0, half - 1) {
            size += 1
            step(right, nil, nil, size)
            right += 1
        }
        for _ in 0..<max(0, window - half + 1) {
            size += 1
            step(right, nil, out, size)
            right += 1
            out += 1
        }
        for _ in 0..<max(0, count - window) {
            step(right, left, out, size)
            left += 1
            right += 1
            out += 1
        }
        for _ in 0..<max(0, half - 1) {
            size -= 1
            step(nil, left, out, size)
            left += 1
            out += 1
        }
    }

    /// The box filter along one line of `count` values `stride` apart from `start`.
    static func box(_ input: UnsafeMutableBufferPointer<Float>, _ output: UnsafeMutableBufferPointer<Float>,
                    start: Int, count: Int, stride: Int, window: Int) {
        var sum: Float = 0
        boxSchedule(count: count, window: window) { add, subtract, write, size in
            if let add { sum += input[start + add * stride] }
            if let subtract { sum -= input[start + subtract * stride] }
            if let write { output[start + write * stride] = sum / size }
        }
    }

    /// The same filter down every column at once, a row at a time, 8 columns per SIMD step (cache-friendly and
    /// vectorised).
    static func boxColumns(_ input: UnsafeMutableBufferPointer<Float>, _ output: UnsafeMutableBufferPointer<Float>,
                           width: Int, height: Int, window: Int, sums: UnsafeMutableBufferPointer<Float>) {
        guard let inBase = input.baseAddress, let outBase = output.baseAddress, let sumBase = sums.baseAddress else { return }
        for c in 0..<width { sums[c] = 0 }
        let vectorWidth = width - width % 8
        // One row step over every column: sums += add row, sums -= subtract row, output row = sums / size.
        boxSchedule(count: height, window: window) { add, subtract, write, size in
            let divisor = SIMD8<Float>(repeating: size)
            var c = 0
            while c < vectorWidth {
                var sum = UnsafeRawPointer(sumBase + c).loadUnaligned(as: SIMD8<Float>.self)
                if let add { sum += UnsafeRawPointer(inBase + add * width + c).loadUnaligned(as: SIMD8<Float>.self) }
                if let subtract { sum -= UnsafeRawPointer(inBase + subtract * width + c).loadUnaligned(as: SIMD8<Float>.self) }
                UnsafeMutableRawPointer(sumBase + c).storeBytes(of: sum, as: SIMD8<Float>.self)
                if let write { UnsafeMutableRawPointer(outBase + write * width + c).storeBytes(of: sum / divisor, as: SIMD8<Float>.self) }
                c += 8
            }
            while c < width {
                var sum = sumBase[c]
                if let add { sum += inBase[add * width + c] }
                if let subtract { sum -= inBase[subtract * width + c] }
                sumBase[c] = sum
                if let write { outBase[write * width + c] = sum / size }
                c += 1
            }
        }
    }

    /// The filter along 8 rows at once (rows `first…first+7`), SIMD across the rows.
    static func boxRows8(_ input: UnsafeMutableBufferPointer<Float>, _ output: UnsafeMutableBufferPointer<Float>,
                         first: Int, width: Int, window: Int) {
        @inline(__always) func column(_ j: Int) -> SIMD8<Float> {
            var v = SIMD8<Float>()
            for r in 0..<8 { v[r] = input[(first + r) * width + j] }
            return v
        }
        var sum = SIMD8<Float>()
        boxSchedule(count: width, window: window) { add, subtract, write, size in
            if let add { sum += column(add) }
            if let subtract { sum -= column(subtract) }
            if let write {
                let v = sum / SIMD8(repeating: size)
                for r in 0..<8 { output[(first + r) * width + write] = v[r] }
            }
        }
    }

    static func quality(_ block: [Float]) -> Int {
        var gradients = 0
        for i in 0..<63 {
            for j in 0..<64 {
                gradients += abs(Int((block[i * 64 + j] - block[(i + 1) * 64 + j]) * 100 / 255))
            }
        }
        for i in 0..<64 {
            for j in 0..<63 {
                gradients += abs(Int((block[i * 64 + j] - block[i * 64 + j + 1]) * 100 / 255))
            }
        }
        return min(100, gradients / 90)
    }

    /// Rows 1…16 of the 64-point DCT-II basis, scaled by √(2/64).
    static let basis: [Float] = {
        let scale = Float((2.0 / 64.0).squareRoot())
        var d = [Float](repeating: 0, count: 16 * 64)
        for i in 0..<16 {
            for j in 0..<64 {
                d[i * 64 + j] = Float(Double(scale) * cos(Double.pi / 2 / 64 * Double(i + 1) * Double(2 * j + 1)))
            }
        }
        return d
    }()

    /// B = D·A·Dᵀ, 16×16.
    static func dct16(_ a: [Float]) -> [Float] {
        let d = basis
        var t = [Float](repeating: 0, count: 16 * 64)
        for i in 0..<16 {
            for j in 0..<64 {
                var sum: Float = 0
                for k in 0..<64 { sum += d[i * 64 + k] * a[k * 64 + j] }
                t[i * 64 + j] = sum
            }
        }
        var b = [Float](repeating: 0, count: 16 * 16)
        for i in 0..<16 {
            for j in 0..<16 {
                var sum: Float = 0
                for k in 0..<64 { sum += t[i * 64 + k] * d[j * 64 + k] }
                b[i * 16 + j] = sum
            }
        }
        return b
    }

    /// The DCT of the 8 dihedral images, in the reference's order: original, rotate 90, 180, 270, flip X,
    /// flip Y, flip over +1 and −1 diagonals.
    static func dihedral(_ a: [Float]) -> [[Float]] {
        func make(transpose: Bool, negate: (Int, Int) -> Bool) -> [Float] {
            var b = [Float](repeating: 0, count: 256)
            for i in 0..<16 {
                for j in 0..<16 {
                    let value = negate(i, j) ? -a[i * 16 + j] : a[i * 16 + j]
                    if transpose { b[j * 16 + i] = value } else { b[i * 16 + j] = value }
                }
            }
            return b
        }
        return [
            a,
            make(transpose: true) { _, j in j & 1 == 0 },
            make(transpose: false) { i, j in (i + j) & 1 == 1 },
            make(transpose: true) { i, _ in i & 1 == 0 },
            make(transpose: false) { i, _ in i & 1 == 0 },
            make(transpose: false) { _, j in j & 1 == 0 },
            make(transpose: true) { _, _ in false },
            make(transpose: true) { i, j in (i + j) & 1 == 1 },
        ]
    }

    /// One bit per coefficient above the median (Torben's median, as the reference).
    static func bits(_ b: [Float]) -> PDQHash {
        let median = torben(b)
        return PDQHash(bits: b.map { $0 > median })
    }

    static func torben(_ m: [Float]) -> Float {
        let n = m.count
        var low = m[0], high = m[0]
        for value in m.dropFirst() {
            low = min(low, value)
            high = max(high, value)
        }
        var less = 0, greater = 0, equal = 0
        var guess: Float = 0, maxBelow: Float = 0, minAbove: Float = 0
        while true {
            guess = (low + high) / 2
            less = 0
            greater = 0
            equal = 0
            maxBelow = low
            minAbove = high
            for value in m {
                if value < guess {
                    less += 1
                    if value > maxBelow { maxBelow = value }
                } else if value > guess {
                    greater += 1
                    if value < minAbove { minAbove = value }
                } else {
                    equal += 1
                }
            }
            if less <= (n + 1) / 2 && greater <= (n + 1) / 2 { break }
            if less > greater { high = maxBelow } else { low = minAbove }
        }
        if less >= (n + 1) / 2 { return maxBelow }
        if less + equal >= (n + 1) / 2 { return guess }
        return minAbove
    }
}
