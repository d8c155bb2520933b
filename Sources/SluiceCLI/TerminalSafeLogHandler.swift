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

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: Identifiers.terminalSafe(event.message.description))
        event.metadata = event.metadata?.mapValues(Self.safe)
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
