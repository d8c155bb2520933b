/// A coding key for any JSON object key, used to list the keys a config object actually has.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

extension Decoder {
    /// Throws when the JSON object at this point has a key outside `allowed`, so a typo in
    /// pipeline.json stops start-up instead of being silently ignored.
    func rejectUnknownKeys(_ allowed: [String]) throws {
        let container = try container(keyedBy: AnyCodingKey.self)
        for key in container.allKeys where !allowed.contains(key.stringValue) {
            throw ConfigurationError.unknownKey(
                path: (codingPath.map(\.stringValue) + [key.stringValue]).joined(separator: "."),
                allowed: allowed)
        }
    }
}

extension KeyedDecodingContainer {
    func value<T: Decodable>(_ key: Key, default fallback: @autoclosure () -> T) throws -> T {
        try decodeIfPresent(T.self, forKey: key) ?? fallback()
    }
}
