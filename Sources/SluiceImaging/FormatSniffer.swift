import Foundation
import SluiceCore

/// Identifies an upload by its magic bytes, never by its name.
public enum FormatSniffer {
    public static func sniff(_ data: Data) throws(ImagingError) -> ImageFormat {
        let head = [UInt8](data.prefix(64))
        func starts(_ bytes: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + bytes.count && Array(head[offset..<offset + bytes.count]) == bytes
        }
        if data.isEmpty { throw ImagingError(.notAnImage, "file is empty") }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts(Array("ftyp".utf8), at: 4), head.count >= 12 {
            let brand = String(decoding: head[8..<12], as: UTF8.self)
            if ["avif", "avis"].contains(brand) { return .avif }
            if ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"].contains(brand) { return .heif }
            throw ImagingError(.unsupportedFormat, "unsupported ISO media brand \"\(printable(brand))\"; accepted: JPEG, PNG, WebP, GIF, HEIF, AVIF")
        }
        if let name = untrustedFormatName(head) {
            throw ImagingError(.untrustedFormat, "\(name) files are not accepted (untrusted loader blocked); accepted: JPEG, PNG, WebP, GIF, HEIF, AVIF")
        }
        throw ImagingError(.notAnImage, "not an image: unrecognised leading bytes \(hex(head.prefix(8))); accepted: JPEG, PNG, WebP, GIF, HEIF, AVIF")
    }

    /// Formats libvips could open but Sluice refuses, named for the rejection reason.
    private static func untrustedFormatName(_ head: [UInt8]) -> String? {
        let text = String(decoding: head, as: UTF8.self).lowercased()
        if text.hasPrefix("%pdf") { return "PDF" }
        if text.contains("<svg") || text.hasPrefix("<?xml") { return "SVG/XML" }
        if head.starts(with: [0x49, 0x49, 0x2A, 0x00]) || head.starts(with: [0x4D, 0x4D, 0x00, 0x2A])
            || head.starts(with: [0x49, 0x49, 0x2B, 0x00]) || head.starts(with: [0x4D, 0x4D, 0x00, 0x2B]) { return "TIFF" }
        if head.starts(with: [0x42, 0x4D]) { return "BMP" }
        if head.starts(with: [0x00, 0x00, 0x01, 0x00]) { return "ICO" }
        if text.hasPrefix("%!ps") { return "PostScript" }
        if text.hasPrefix("simple  =") { return "FITS" }
        return nil
    }

    private static func hex<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
    }

    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
    }
}
