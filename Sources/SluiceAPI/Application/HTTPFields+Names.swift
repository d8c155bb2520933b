import HTTPTypes

/// Header names Sluice reads or writes that HTTPTypes does not name, handled by their (case-insensitive) name so
/// no name has to be force-unwrapped.
enum SluiceHeader {
    static let appToken = "X-App-Token"
    static let userId = "X-User-Id"
    static let forwardedFor = "X-Forwarded-For"
    static let requestId = "X-Request-Id"
}

extension HTTPFields {
    /// The first value of the header called `name` (any case).
    func first(named name: String) -> String? {
        let canonical = name.lowercased()
        return first { $0.name.canonicalName == canonical }?.value
    }

    /// Sets the header called `name`, replacing any value it had.
    mutating func set(_ name: String, to value: String) {
        guard let field = HTTPField.Name(name) else { return }
        self[field] = value
    }
}
