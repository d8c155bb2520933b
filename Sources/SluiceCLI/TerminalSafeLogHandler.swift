import Logging
import SluiceCore

/// The CLI's log handler: the stream handler, with control characters in the message and metadata escaped
/// (`Identifiers.terminalSafe`), so an upload's file name or a message's text cannot write escape sequences to the
/// operator's terminal or forge a log line with a line break.
struct TerminalSafeLogHandler: LogHandler {
    private var inner: StreamLogHandler

    init(_ inner: StreamLogHandler) { self.inner = inner }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    /// Kept here, not in the stream handler, and escaped with the event's own metadata when a line is written: the
    /// stream handler renders its metadata into text on every change, and the HTTP server sets a request id on its
    /// logger for every request (~1% of a `validate_text`), though at the server's usual level nothing is written.
    var metadata: Logger.Metadata = [:]

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: Identifiers.terminalSafe(event.message.description))
        var merged = metadata
        if let own = event.metadata { merged.merge(own) { _, explicit in explicit } }
        event.metadata = merged.isEmpty ? nil : merged.mapValues(Self.safe)
        inner.log(event: event)
    }

    private static func safe(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case let .string(text): .string(Identifiers.terminalSafe(text))
        case let .stringConvertible(convertible): .string(Identifiers.terminalSafe(convertible.description))
        case let .array(values): .array(values.map(safe))
        case let .dictionary(values): .dictionary(values.mapValues(safe))
        }
    }
}
