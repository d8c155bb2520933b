import CExif
import Foundation
import SluiceCore

/// Reads the audit facts (GPS present, make, model, orientation) from a raw EXIF block with libexif.
public enum ExifReader {
    public static func findings(fromExifBlock raw: UnsafeRawBufferPointer) -> ExifFindings {
        // libexif wants the APP1 "Exif\0\0" header; PNG eXIf and some WebP blocks are bare TIFF.
        var bytes = [UInt8](raw)
        if !bytes.starts(with: exifHeader) { bytes = exifHeader + bytes }
        return bytes.withUnsafeBufferPointer { block in findings(exifWithHeader: block) }
    }

    private static let exifHeader: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]

    /// Whether an XMP packet gives a location: one of the EXIF schema's GPS coordinates (`GPSLatitude`,
    /// `GPSLongitude`, `GPSAltitude`) as an attribute or an element, under any prefix or as a default-namespace
    /// element. Names are told by the bytes around them (`:` or `<` before; `=`, `>`, `/` or white space after), not
    /// by parsing the XML, and values are not read, so an empty or odd value still counts: the point is to report
    /// what the upload carried.
    public static func xmpHasGPS(_ packet: UnsafeRawBufferPointer) -> Bool {
        let names: [[UInt8]] = [Array("GPSLatitude".utf8), Array("GPSLongitude".utf8), Array("GPSAltitude".utf8)]
        func ends(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: "=") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/") || byte == 0x20 || byte == 0x09
                || byte == 0x0A || byte == 0x0D
        }
        guard packet.count > 12 else { return false }
        for start in 1..<packet.count where packet[start - 1] == UInt8(ascii: ":") || packet[start - 1] == UInt8(ascii: "<") {
            for name in names where start + name.count < packet.count && ends(packet[start + name.count]) {
                if zip(name, packet[start..<(start + name.count)]).allSatisfy({ $0 == $1 }) { return true }
            }
        }
        return false
    }

    private static func findings(exifWithHeader block: UnsafeBufferPointer<UInt8>) -> ExifFindings {
        guard let base = block.baseAddress, block.count > 14, let exif = exif_data_new() else { return .none }
        defer { exif_data_unref(exif) }
        // Keep odd or unknown entries: the point is to report what was in the file, not to tidy it.
        exif_data_unset_option(exif, EXIF_DATA_OPTION_IGNORE_UNKNOWN_TAGS)
        exif_data_unset_option(exif, EXIF_DATA_OPTION_FOLLOW_SPECIFICATION)
        exif_data_load_data(exif, base, UInt32(clamping: block.count))
        let order = exif_data_get_byte_order(exif)
        let ifds = exif.pointee.ifd
        let ifd0 = ifds.0
        let gps = ifds.3

        var findings = ExifFindings()
        if let gps, gps.pointee.count > 0 { findings.hadGPS = true }
        // libexif drops GPS directories whose values it dislikes; the raw directory still counts.
        if !findings.hadGPS, TIFFDirectory.gpsEntryCount(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(block)[6...])) > 0 {
            findings.hadGPS = true
        }
        if let ifd0 {
            findings.make = string(ifd0, EXIF_TAG_MAKE)
            findings.model = string(ifd0, EXIF_TAG_MODEL)
            if let entry = exif_content_get_entry(ifd0, EXIF_TAG_ORIENTATION), entry.pointee.format == EXIF_FORMAT_SHORT,
               entry.pointee.components >= 1, entry.pointee.size >= 2, let data = entry.pointee.data {
                let value = Int(exif_get_short(data, order))
                findings.orientation = (1...8).contains(value) ? value : nil
            }
        }
        return findings
    }

    private static func string(_ content: UnsafeMutablePointer<ExifContent>, _ tag: ExifTag) -> String? {
        guard let entry = exif_content_get_entry(content, tag), entry.pointee.format == EXIF_FORMAT_ASCII,
              let data = entry.pointee.data, entry.pointee.size > 0 else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: Int(min(entry.pointee.size, 256)))
        let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines.union(.controlCharacters))
        return text.isEmpty ? nil : text
    }
}

/// Just enough TIFF to find IFD0's GPSInfo pointer, count the GPS directory's entries, and tell a
/// structurally broken EXIF block (directories pointing outside it) from a merely odd one.
enum TIFFDirectory {
    /// Why the block is malformed, or nil when its header and IFD0 fit inside it.
    static func problem(_ tiff: [UInt8]) -> String? {
        // Stubs and non-TIFF payloads are ignored by every reader (and stripped anyway); only a directory
        // that points outside its own block is treated as hostile.
        guard tiff.count >= 2 else { return nil }
        let little: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return nil
        }
        guard tiff.count >= 8 else { return "TIFF header cut short at \(tiff.count) bytes" }
        func u16(_ at: Int) -> Int { little ? Int(tiff[at]) | Int(tiff[at + 1]) << 8 : Int(tiff[at]) << 8 | Int(tiff[at + 1]) }
        let ifd0 = little ? u16(4) | u16(6) << 16 : u16(4) << 16 | u16(6)
        guard ifd0 >= 8, ifd0 + 2 <= tiff.count else { return "IFD0 offset \(ifd0) points outside the \(tiff.count)-byte block" }
        let count = u16(ifd0)
        guard ifd0 + 2 + count * 12 <= tiff.count else { return "IFD0 declares \(count) entries, more than the block holds" }
        return nil
    }

    static func gpsEntryCount(_ tiff: UnsafeRawBufferPointer) -> Int {
        guard tiff.count >= 8 else { return 0 }
        let little: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return 0
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= tiff.count else { return nil }
            return little ? Int(tiff[at]) | Int(tiff[at + 1]) << 8 : Int(tiff[at]) << 8 | Int(tiff[at + 1])
        }
        func u32(_ at: Int) -> Int? {
            guard let a = u16(at), let b = u16(at + 2) else { return nil }
            return little ? a | b << 16 : a << 16 | b
        }
        guard let ifd0 = u32(4), let count = u16(ifd0), count < 1000 else { return 0 }
        for index in 0..<count {
            let entry = ifd0 + 2 + index * 12
            guard let tag = u16(entry), let type = u16(entry + 2) else { return 0 }
            // GPSInfo is a LONG (4) or IFD (13) offset.
            if tag == 0x8825, type == 4 || type == 13, let offset = u32(entry + 8), let entries = u16(offset) {
                return entries < 1000 ? entries : 0
            }
        }
        return 0
    }
}
