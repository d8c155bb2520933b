/// Why pipeline.json could not be used; every case names the key and what is allowed.
public enum ConfigurationError: Error, CustomStringConvertible, Equatable {
    case unreadable(path: String, reason: String)
    case invalidJSON(path: String, reason: String)
    case unknownKey(path: String, allowed: [String])
    case badValue(key: String, reason: String)

    public var description: String {
        switch self {
        case let .unreadable(path, reason):
            "cannot read config file \(path): \(reason)"
        case let .invalidJSON(path, reason):
            "config file \(path) is not valid JSON: \(reason)"
        case let .unknownKey(path, allowed):
            "unknown config key \"\(path)\"; allowed here: \(allowed.joined(separator: ", "))"
        case let .badValue(key, reason):
            "bad value for config key \"\(key)\": \(reason)"
        }
    }
}
