import Foundation
import SluiceCore

extension ProfanityFilter {
    /// Loads the configured languages, operator wordlists and allowlists, with the configured actions.
    public static func load(_ config: TextConfig) throws(WordlistError) -> ProfanityFilter {
        let wordlist = try Wordlist.load(directory: config.wordlistsDirectory, languages: config.languages,
                                         extraWordlists: config.wordlists, extraAllowlists: config.allowlists)
        let actions = Options.standardActions.merging(config.actions) { $1 }
        return ProfanityFilter(wordlist: wordlist, options: Options(actions: actions, maxLength: config.maxLength))
    }

    /// Judges raw bytes (a queue line, a file line): invalid UTF-8 is an input error, not a crash.
    public func check(utf8 bytes: some Collection<UInt8>) throws(TextInputError) -> TextVerdict {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw TextInputError(.invalidUTF8, "text is not valid UTF-8")
        }
        return try check(text)
    }
}
