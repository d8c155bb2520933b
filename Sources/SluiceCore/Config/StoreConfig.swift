import Foundation

/// Where the status store lives: a SQLite file (`path`, the default for one machine) or, when `postgres` is set, a
/// PostgreSQL database shared by several daemons and API servers.
public struct StoreConfig: Sendable, Equatable {
    public var path: URL
    public var postgres: PostgresLocation?
    /// Env var holding the PostgreSQL password (never in the URL or the config file).
    public var passwordEnv: String = "SLUICE_STORE_PASSWORD"

    public init(path: URL, postgres: PostgresLocation? = nil) {
        self.path = path.standardizedFileURL
        self.postgres = postgres
    }

    /// `store.url`: `sqlite:PATH` (relative to the config file) or `postgres://user@host:port/database?options`.
    /// Returns the PostgreSQL location, or the SQLite path when the URL names one.
    public static func parse(url raw: String, key: String = "store.url") throws -> Either {
        if raw.hasPrefix("sqlite:") {
            let path = String(raw.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw ConfigurationError.badValue(key: key, reason: "sqlite: needs a path, as in sqlite:data/sluice.sqlite") }
            return .sqlite(path)
        }
        return .postgres(try PostgresLocation(url: raw, key: key))
    }

    public enum Either: Sendable, Equatable {
        case sqlite(String)
        case postgres(PostgresLocation)
    }
}

/// A PostgreSQL database, from `postgres://user@host:port/database?sslmode=…&schema=…&maxConnections=…`.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Plain TCP (loopback, or a private network you trust).
        case disable
        /// TLS when the server offers it, the certificate not checked (libpq's default).
        case prefer
        /// TLS or nothing, the certificate not checked.
        case require
        /// TLS with the certificate checked against the system's roots and the host name.
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var user: String
    public var database: String
    /// The schema (search_path) the store's tables live in; nil: the user's default (`public`).
    public var schema: String?
    public var tls: TLSMode
    /// Connections this process keeps at most.
    public var maxConnections: Int

    public init(host: String, port: Int = 5432, user: String, database: String, schema: String? = nil, tls: TLSMode = .prefer,
                maxConnections: Int = 16) {
        self.host = host
        self.port = port
        self.user = user
        self.database = database
        self.schema = schema
        self.tls = tls
        self.maxConnections = maxConnections
    }

    public init(url raw: String, key: String = "store.url") throws {
        func bad(_ reason: String) -> ConfigurationError { .badValue(key: key, reason: reason) }
        guard let components = URLComponents(string: raw), let scheme = components.scheme else {
            throw bad("\"\(raw)\" is not a URL; use sqlite:PATH or postgres://user@host:port/database")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw bad("unknown scheme \"\(scheme):\"; use sqlite:PATH or postgres://user@host:port/database")
        }
        guard components.password == nil else {
            throw bad("holds a password; put it in the environment variable named by store.passwordEnv instead")
        }
        guard let host = components.host, !host.isEmpty else { throw bad("\"\(raw)\" names no host") }
        guard let user = components.user, !user.isEmpty else { throw bad("\"\(raw)\" names no user (postgres://USER@host/database)") }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else { throw bad("\"\(raw)\" names no database (postgres://user@host/DATABASE)") }
        self.init(host: host, port: components.port ?? 5432, user: user, database: database)
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw bad("sslmode \"\(value)\" is not one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                tls = mode
            case "schema":
                guard !value.isEmpty, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
                    throw bad("schema \"\(value)\" must be letters, digits and _")
                }
                schema = value
            case "maxConnections":
                guard let count = Int(value), (1...500).contains(count) else { throw bad("maxConnections \"\(value)\" must be 1…500") }
                maxConnections = count
            default:
                throw bad("unknown option \"\(item.name)\" (known: sslmode, schema, maxConnections)")
            }
        }
    }

    /// The `store.url` naming this location (never a password): `PostgresLocation(url: location.url) == location`.
    public var url: String {
        var components = URLComponents()
        components.scheme = "postgres"
        components.user = user
        components.host = host
        components.port = port
        components.path = "/" + database
        components.queryItems = [URLQueryItem(name: "sslmode", value: tls.rawValue)]
            + (schema.map { [URLQueryItem(name: "schema", value: $0)] } ?? [])
            + [URLQueryItem(name: "maxConnections", value: "\(maxConnections)")]
        return components.string ?? description
    }

    /// The URL without secrets, for logs and errors.
    public var description: String {
        "postgres://\(user)@\(host):\(port)/\(database)" + (schema.map { " (schema \($0))" } ?? "")
    }
}
