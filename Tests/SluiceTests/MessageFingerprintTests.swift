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
                     "Héllo wörld", "ΑΒΓ δεζ", "straße STRASSE", "İstanbul", "emoji 😀 only", "mixed ascii and ß", "\u{0301}accent"]
        // Every ASCII character, alone and in a line.
        texts += (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        texts.append(String(String.UnicodeScalarView((0..<128).compactMap { UnicodeScalar($0) })))
        for text in texts {
            #expect(MessageSignals.fingerprint(text) == Self.definition(text), "\(text.debugDescription)")
        }
        #expect(MessageSignals.fingerprint("Hello, World! 123") == MessageSignals.fingerprint("hello world"), "near-duplicates share it")
        #expect(MessageSignals.fingerprint("hello world") != MessageSignals.fingerprint("hello word"))
    }
}
