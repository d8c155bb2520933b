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
            throw ConfigurationError.unknownKey(path: PipelineConfig.keyPath(codingPath + [key]), allowed: allowed)
        }
    }
}

extension KeyedDecodingContainer {
    /// The value at `key`, or `fallback` when the key is absent; a value of the wrong kind names its key.
    func value<T: Decodable>(_ key: Key, default fallback: @autoclosure () -> T) throws -> T {
        try optional(T.self, forKey: key) ?? fallback()
    }

    /// `decodeIfPresent`, naming the key when the value is of the wrong kind.
    func optional<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try naming(key, T.self) { try decodeIfPresent(type, forKey: key) }
    }

    /// `decode`, naming the key when the value is missing or of the wrong kind.
    func required<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try naming(key, T.self) { try decode(type, forKey: key) }
    }

    /// Runs one decode, turning what it throws into a `ConfigurationError` naming the key: JSONDecoder's own parse
    /// errors carry none (a number that does not fit, 80.5 or 1e20 for an integer, would reach the top as "not
    /// valid JSON"), and its `DecodingError`s are named by their own path when they have one.
    private func naming<R>(_ key: Key, _ expected: Any.Type, _ body: () throws -> R) throws -> R {
        do {
            return try body()
        } catch let error as ConfigurationError {
            throw error
        } catch let error as DecodingError where !(error.isDataCorruption && PipelineConfig.keyPath(of: error).isEmpty) {
            let path = PipelineConfig.keyPath(of: error)
            throw ConfigurationError.badValue(key: path.isEmpty ? PipelineConfig.keyPath(codingPath + [key]) : path,
                                              reason: PipelineConfig.reason(of: error))
        } catch {
            // A parse error of JSONDecoder's own, or a data-corrupted error without a path: the value at this key.
            throw ConfigurationError.badValue(key: PipelineConfig.keyPath(codingPath + [key]), reason: "expected \(PipelineConfig.typeName(expected))")
        }
    }
}

extension DecodingError {
    var isDataCorruption: Bool {
        if case .dataCorrupted = self { return true }
        return false
    }
}
