import CVipsShim
import Foundation
import SluiceCore

/// Compares what two images look like, for checks such as "rotated back, it looks like the upright original".
public enum PixelComparison {
    /// Mean absolute difference per channel (0–255) after decoding both (auto-rotated) at `side`×`side`.
    public static func meanAbsoluteDifference(_ a: Data, _ b: Data, side: Int = 64) throws(ImagingError) -> Double {
        let pa = try pixels(a, side: side)
        let pb = try pixels(b, side: side)
        guard pa.count == pb.count, !pa.isEmpty else { throw ImagingError(.internalError, "pixel buffers differ in size") }
        var total = 0
        for index in pa.indices { total += abs(Int(pa[index]) - Int(pb[index])) }
        return Double(total) / Double(pa.count)
    }

    static func pixels(_ data: Data, side: Int) throws(ImagingError) -> [UInt8] {
        _ = try VipsImageProcessor(maxPixels: Int.max)
        var out: UnsafeMutableRawPointer?
        var length = 0
        let status = data.withUnsafeBytes { buffer in
            sluice_vips_rgb_pixels(buffer.baseAddress, buffer.count, Int32(side), Int32(side), &out, &length)
        }
        guard status == 0, let out else { throw ImagingError(.corrupt, "cannot decode for comparison: \(VipsImageProcessor.lastError())") }
        defer { sluice_g_free(out) }
        return [UInt8](UnsafeRawBufferPointer(start: out, count: length))
    }
}
