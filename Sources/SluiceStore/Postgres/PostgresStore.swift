import Foundation
import Logging
import NIOSSL
import PostgresNIO
import SluiceCore

/// The status store in PostgreSQL through postgres-nio: the backend for several daemons and API servers on several
/// machines. Same contract as `SQLiteStore` (`StoreContractTests` runs against both). PostgresNIO stays inside this
/// module; callers see `StatusStore`.
///
/// Conventions of the schema (`PostgresSchema`): identifiers are written unquoted in camelCase, so PostgreSQL folds
/// them to lower case on both sides; the `item` table's dates are whole milliseconds since 1970 (`BIGINT`), because
/// items travel as JSON (`PostgresItemCodec`); every other date is a `TIMESTAMPTZ` bound as a `Date`.
public struct PostgresStore: StatusStore {
    let client: PostgresClient
    let logger: Logger
    /// The client's connection pool runs for as long as the store is open; `close()` ends it.
    private let running: Task<Void, Never>

    /// Connects, then applies the migrations this process knows under an advisory lock (many processes may start
    /// at once; one migrates, the others wait and find nothing left to do). `readOnly` (dry runs): every session is
    /// read-only in PostgreSQL itself, and the store must already be migrated.
    public init(_ location: PostgresLocation, password: String?, readOnly: Bool = false,
                logger: Logger = Logger(label: "sluice.store")) async throws(StoreError) {
        // One connection first: the pool retries a refused connection with backoff for as long as a query waits,
        // so a wrong host, database or password would otherwise surface only as a timeout.
        try await Self.probe(location, password: password, logger: logger)
        let client = PostgresClient(configuration: Self.configuration(location, password: password, readOnly: readOnly),
                                    backgroundLogger: logger)
        self.client = client
        self.logger = logger
        running = Task { await client.run() }
        do {
            if readOnly {
                try await PostgresSchema.requireMigrated(self)
            } else {
                try await PostgresSchema.migrate(self, schema: location.schema)
            }
        } catch {
            running.cancel()
            throw error
        }
    }

    /// Closes every connection. The store must not be used afterwards.
    public func close() async {
        running.cancel()
        await running.value
    }

    /// Connects once and disconnects, so a store that cannot be reached says why at once.
    private static func probe(_ location: PostgresLocation, password: String?, logger: Logger) async throws(StoreError) {
        let operation = "connect to \(location)"
        do {
            let tls: PostgresConnection.Configuration.TLS
            switch tlsSettings(location.tls) {
            case nil: tls = .disable
            case let (settings, required)?:
                let context = try NIOSSLContext(configuration: settings)
                tls = required ? .require(context) : .prefer(context)
            }
            var configuration = PostgresConnection.Configuration(host: location.host, port: location.port, username: location.user,
                                                                 password: password, database: location.database, tls: tls)
            configuration.options.connectTimeout = .seconds(10)
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try await connection.close()
        } catch {
            throw storeError(operation, error)
        }
    }

    /// What a TLS mode asks of a connection, as libpq's sslmode: nil for plain TCP; otherwise the TLS settings
    /// (`prefer` and `require` encrypt without checking the server's certificate, `verify-full` checks it and the
    /// host name) and whether TLS is required.
    static func tlsSettings(_ mode: PostgresLocation.TLSMode) -> (settings: TLSConfiguration, required: Bool)? {
        var settings = TLSConfiguration.makeClientConfiguration()
        switch mode {
        case .disable: return nil
        case .prefer, .require:
            settings.certificateVerification = .none
            return (settings, mode == .require)
        case .verifyFull: return (settings, true)
        }
    }

    static func configuration(_ location: PostgresLocation, password: String?, readOnly: Bool) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch tlsSettings(location.tls) {
        case nil: tls = .disable
        case let (settings, required)?: tls = required ? .require(settings) : .prefer(settings)
        }
        var configuration = PostgresClient.Configuration(host: location.host, port: location.port, username: location.user,
                                                         password: password, database: location.database, tls: tls)
        configuration.options.maximumConnections = location.maxConnections
        configuration.options.connectTimeout = .seconds(10)
        // Every session sees UTC and, when the URL names one, its own schema (one database, several stores).
        var parameters = [("TimeZone", "UTC"), ("application_name", "sluice")]
        if let schema = location.schema { parameters.append(("search_path", schema)) }
        if readOnly { parameters.append(("default_transaction_read_only", "on")) }
        configuration.options.additionalStartupParameters = parameters
        return configuration
    }

    // MARK: - Plumbing

    /// The rows of one query.
    func rows(_ operation: String, _ query: PostgresQuery) async throws(StoreError) -> [PostgresRow] {
        do {
            return try await client.query(query, logger: logger).collect()
        } catch {
            throw Self.storeError(operation, error)
        }
    }

    /// One statement whose rows (if any) are not needed.
    func execute(_ operation: String, _ query: PostgresQuery) async throws(StoreError) {
        _ = try await rows(operation, query)
    }

    /// `body` in one transaction on one connection: committed when it returns, rolled back when it throws. When
    /// PostgreSQL ends it as a deadlock victim or a serialization failure (two daemons' transactions locking the same
    /// rows in different orders: a thread answer being cached while a batch blocks one of its messages), the
    /// transaction has had no effect and runs again after a short random pause (at most `transactionAttempts` runs
    /// in all; not once the caller is cancelled); so a body may only change the database, nothing outside it.
    func transaction<T: Sendable>(_ operation: String,
                                  _ body: (PostgresConnection) async throws -> T) async throws(StoreError) -> T {
        var attempt = 1
        while true {
            do {
                return try await client.withConnection { connection in
                    try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
                }
            } catch {
                guard attempt < Self.transactionAttempts, !Task.isCancelled, let state = Self.sqlState(error),
                      Self.retriedStates.contains(state) else {
                    throw Self.storeError(operation, error)
                }
                logger.notice("PostgreSQL ended a transaction to break a conflict; running it again",
                              metadata: ["operation": "\(operation)", "sqlState": "\(state)", "attempt": "\(attempt)"])
                attempt += 1
                try? await Task.sleep(for: .milliseconds(Int.random(in: 2...20) * attempt))
            }
        }
    }

    /// SQLSTATEs after which a transaction is run again: `40P01` deadlock detected, `40001` serialization failure.
    static let retriedStates: Set<String> = ["40P01", "40001"]
    /// Runs of one transaction at most (the first and three more).
    static let transactionAttempts = 4

    /// The error a transaction's wrapper carries (what its body threw, else what BEGIN or COMMIT did); any other
    /// error as it is.
    static func unwrapped(_ error: any Error) -> any Error {
        guard let transaction = error as? PostgresTransactionError,
              let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError else { return error }
        return unwrapped(inner)
    }

    /// A `StoreError` naming what PostgreSQL said (postgres-nio's own description hides the server's message).
    static func storeError(_ operation: String, _ error: any Error) -> StoreError {
        let error = unwrapped(error)
        if let error = error as? StoreError { return error }
        if let error = error as? PSQLError {
            if let server = error.serverInfo {
                let state = server[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                let detail = server[.detail].map { ": \($0)" } ?? ""
                return StoreError(operation: operation, message: "PostgreSQL: \(server[.message] ?? "error")\(detail)\(state)")
            }
            return StoreError(operation: operation, message: "PostgreSQL: \(error.code)\(error.underlying.map { " (\($0))" } ?? "")")
        }
        return StoreError(operation: operation, underlying: error)
    }

    /// The SQLSTATE of the server error behind `error`, also when a transaction wraps it (`23505` unique violation,
    /// `40001` serialization failure, …).
    static func sqlState(_ error: any Error) -> String? {
        (unwrapped(error) as? PSQLError)?.serverInfo?[.sqlState]
    }
}

extension PostgresConnection {
    /// The rows of one query inside a transaction.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await self.query(query, logger: logger).collect()
    }

    /// One statement inside a transaction.
    func run(_ query: PostgresQuery, logger: Logger) async throws {
        _ = try await self.query(query, logger: logger).collect()
    }
}
