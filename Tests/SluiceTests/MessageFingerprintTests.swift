import Foundation
import SluiceCore
import SluicePipeline
import Testing

/// The fingerprint that keys `spam.duplicates` counters (`spam.duplicates:{sender}:{fingerprint}`): counters already
/// stored for a window are found again only if every build gives the same fingerprint for the same text. It is the
/// text lowercased, its letters kept (`CharacterSet.letters`), hashed.
@Suite struct MessageFingerprintTests {
    static func definition(_ text: String) -> String {
        let letters = text.lowercased().unicodeScalars.filter { CharacterSet.letters.contains($0) }
        return ContentHash.sha256(Data(String(String.UnicodeScalarView(letters)).utf8)).prefix(24).description
    }

    @Test func everyTextGetsTheFingerprintOfItsLetters() {
        var texts = ["", "see you at the cocktail bar later #41", "BUY NOW!!! http://spam.example/x?a=1", "Hello, World! 123",
                     "hello-world", "  HeLLo\tWORLD\n", "Scunthorpe won again", "12345 !@#$%^&*()", "Zz{|}~`[\\]^_@AaZz",
                     "Héllo wörld", "ΑΒΓ δεζ", "straße STRASSE", "İstanbul", "emoji 😀 only", "mixed ascii and ß", "\u{0301}accent",
                     // Scalars whose lowercase is ASCII, several scalars, or another script's letter; titlecase digraphs,
                     // final sigma, ligatures, full-width letters, emoji sequences, scripts without case.
                     "\u{212A}elvin \u{212B}ngstr\u{00F6}m \u{2126}hm", "ẞig \u{0130}I ı", "ǅungla ǈ ǋ", "ΟΔΟΣ ΣΟΦΟΣ ς", "ﬀ ﬁ ﬃ ŉ",
                     "ＡＢＣ ｄｅｆ", "Ꭰ Ꮿ ꭰ", "👩‍👩‍👧 🇫🇷 👍🏽 thanks 🙏", "soooo good 😂😂", "한국어 日本語 عربى हिन्दी", "Ⅻ ⓐ Ⓩ",
                     "𐐀𐐨 Deseret", "e\u{0301} E\u{0301}", "\u{00C5}\u{0041}\u{030A}"]
        // Every ASCII character, alone and in a line.
        texts += (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        texts.append(String(String.UnicodeScalarView((0..<128).compactMap { UnicodeScalar($0) })))
        for text in texts {
            #expect(MessageSignals.fingerprint(text) == Self.definition(text), "\(text.debugDescription)")
        }
        #expect(MessageSignals.fingerprint("Hello, World! 123") == MessageSignals.fingerprint("hello world"), "near-duplicates share it")
    }

    /// The fingerprint takes each scalar's lowercase mapping only where `changesWhenLowercased` says it changes: for
    /// every scalar, the two agree (what `String.lowercased()` does is map each scalar on its own).
    @Test func everyScalarThatChangesWhenLowercasedIsOneWhoseMappingDiffers() {
        var disagreeing: [String] = []
        for value in UInt32(0x80)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let mapped = scalar.properties.lowercaseMapping
            if scalar.properties.changesWhenLowercased != (mapped.unicodeScalars.count != 1 || mapped.unicodeScalars.first != scalar) {
                disagreeing.append(String(value, radix: 16))
            }
            if String(scalar).lowercased() != mapped { disagreeing.append("lowercased \(String(value, radix: 16))") }
        }
        #expect(disagreeing.isEmpty, "\(disagreeing.prefix(20))")
        #expect(MessageSignals.fingerprint("hello world") != MessageSignals.fingerprint("hello word"))
    }
}
