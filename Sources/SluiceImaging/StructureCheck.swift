import CVipsShim
import Foundation
import SluiceCore

/// Container-level checks done on the raw bytes before any decoder runs: segments and chunks must fit the
/// file, the file must not end early, metadata must stay under a size limit (decompressed), and GIF frames
/// must lie inside their canvas. These catch metadata bombs and truncations that decoders shrug off.
public enum StructureCheck {
    public static func check(_ data: Data, format: ImageFormat, maxMetadataBytes: Int) throws(ImagingError) {
        let bytes = [UInt8](data)
        switch format {
        case .jpeg: try checkJPEG(bytes, maxMetadataBytes: maxMetadataBytes)
        case .png: try checkPNG(bytes, maxMetadataBytes: maxMetadataBytes)
        case .gif: try checkGIF(bytes)
        case .webp, .heif, .avif: break
        }
    }

    private static func u16be(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
    private static func u32be(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }

    // MARK: JPEG

    private static func checkJPEG(_ b: [UInt8], maxMetadataBytes: Int) throws(ImagingError) {
        var index = 2
        var icc = 0
        var metadata = 0
        while index + 4 <= b.count {
            guard b[index] == 0xFF else { return } // decoders resync on junk; the decoder decides
            let marker = b[index + 1]
            if marker == 0xFF { index += 1; continue }
            if marker == 0xD8 || (0xD0...0xD7).contains(marker) || marker == 0x01 { index += 2; continue }
            if marker == 0xDA || marker == 0xD9 { break }
            let length = u16be(b, index + 2)
            guard length >= 2, index + 2 + length <= b.count else {
                throw ImagingError(.truncated, "JPEG is truncated: segment 0x\(String(marker, radix: 16)) at byte \(index) runs past the end of the file")
            }
            let payload = Array(b[(index + 4)..<(index + 2 + length)])
            if (0xE0...0xEF).contains(marker) || marker == 0xFE { metadata += payload.count }
            if marker == 0xE2, payload.starts(with: Array("ICC_PROFILE".utf8)) { icc += payload.count }
            if marker == 0xE1, payload.starts(with: [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]) {
                if let problem = TIFFDirectory.problem(Array(payload.dropFirst(6))) {
                    throw ImagingError(.corrupt, "JPEG has a malformed EXIF block: \(problem)")
                }
            }
            index += 2 + length
        }
        if icc > maxMetadataBytes {
            throw ImagingError(.tooLarge, "JPEG carries a \(icc)-byte ICC profile, over the \(maxMetadataBytes)-byte metadata limit (limits.maxMetadataBytes)")
        }
        if metadata > maxMetadataBytes * 4 {
            throw ImagingError(.tooLarge, "JPEG carries \(metadata) bytes of metadata segments, over \(maxMetadataBytes * 4) (4 × limits.maxMetadataBytes)")
        }
    }

    // MARK: PNG

    private static func checkPNG(_ b: [UInt8], maxMetadataBytes: Int) throws(ImagingError) {
        var index = 8
        var text = 0
        var sawEnd = false
        while index + 8 <= b.count {
            let length = u32be(b, index)
            let type = String(decoding: b[(index + 4)..<(index + 8)], as: UTF8.self)
            guard length <= b.count, index + 12 + length <= b.count else {
                throw ImagingError(.truncated, "PNG is truncated: chunk \(printable(type)) at byte \(index) runs past the end of the file")
            }
            let data = Array(b[(index + 8)..<(index + 8 + length)])
            switch type {
            case "tEXt":
                text += data.count
            case "zTXt":
                if let nul = data.firstIndex(of: 0), nul + 2 <= data.count {
                    text += try inflated(Array(data[(nul + 2)...]), what: "zTXt text", limit: maxMetadataBytes)
                }
            case "iTXt":
                if let nul = data.firstIndex(of: 0), nul + 2 < data.count, data[nul + 1] == 1 {
                    let rest = Array(data[(nul + 3)...])
                    // language tag and translated keyword, each NUL-terminated, precede the text
                    if let a = rest.firstIndex(of: 0), let c = rest[(a + 1)...].firstIndex(of: 0) {
                        text += try inflated(Array(rest[(c + 1)...]), what: "iTXt text", limit: maxMetadataBytes)
                    }
                } else {
                    text += data.count
                }
            case "iCCP":
                if let nul = data.firstIndex(of: 0), nul + 2 <= data.count {
                    _ = try inflated(Array(data[(nul + 2)...]), what: "ICC profile", limit: maxMetadataBytes)
                }
            case "IEND":
                sawEnd = true
            default:
                break
            }
            if text > maxMetadataBytes {
                throw ImagingError(.tooLarge, "PNG text chunks hold more than \(maxMetadataBytes) bytes once decompressed (decompression bomb; limits.maxMetadataBytes)")
            }
            if sawEnd { return }
            index += 12 + length
        }
        throw ImagingError(.truncated, "PNG is truncated: the file ends before its IEND chunk")
    }

    private static func inflated(_ stream: [UInt8], what: String, limit: Int) throws(ImagingError) -> Int {
        let size = stream.withUnsafeBytes { sluice_inflated_size($0.baseAddress, $0.count, limit) }
        if size < 0 { throw ImagingError(.corrupt, "PNG \(what) is not a valid zlib stream") }
        if size > limit {
            throw ImagingError(.tooLarge, "PNG \(what) decompresses to more than \(limit) bytes (decompression bomb; limits.maxMetadataBytes)")
        }
        return size
    }

    // MARK: GIF

    private static func checkGIF(_ b: [UInt8]) throws(ImagingError) {
        guard b.count >= 13 else { throw ImagingError(.truncated, "GIF is truncated: no logical screen descriptor") }
        let width = Int(b[6]) | Int(b[7]) << 8
        let height = Int(b[8]) | Int(b[9]) << 8
        var index = 13
        if b[10] & 0x80 != 0 { index += 3 << (Int(b[10] & 0x07) + 1) }
        func skipSubBlocks() throws(ImagingError) {
            while true {
                guard index < b.count else { throw ImagingError(.truncated, "GIF is truncated: data ends inside a block") }
                let size = Int(b[index])
                index += 1 + size
                if size == 0 { return }
            }
        }
        var frame = 0
        while index < b.count {
            switch b[index] {
            case 0x3B:
                return
            case 0x21:
                index += 2
                try skipSubBlocks()
            case 0x2C:
                guard index + 10 <= b.count else { throw ImagingError(.truncated, "GIF is truncated: image descriptor cut short") }
                let left = Int(b[index + 1]) | Int(b[index + 2]) << 8
                let top = Int(b[index + 3]) | Int(b[index + 4]) << 8
                let w = Int(b[index + 5]) | Int(b[index + 6]) << 8
                let h = Int(b[index + 7]) | Int(b[index + 8]) << 8
                if left + w > width || top + h > height {
                    throw ImagingError(.corrupt, "GIF frame \(frame) (\(w)×\(h) at \(left),\(top)) extends beyond its \(width)×\(height) canvas")
                }
                let flags = b[index + 9]
                index += 10
                if flags & 0x80 != 0 { index += 3 << (Int(flags & 0x07) + 1) }
                index += 1 // LZW minimum code size
                try skipSubBlocks()
                frame += 1
            default:
                throw ImagingError(.corrupt, "GIF has an unknown block 0x\(String(b[index], radix: 16)) at byte \(index)")
            }
        }
        throw ImagingError(.truncated, "GIF is truncated: no trailer")
    }

    private static func printable(_ text: String) -> String {
        "\"" + String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }) + "\""
    }
}
