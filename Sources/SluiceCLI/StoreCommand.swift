import ArgumentParser
import Foundation
import SluiceCore
import SluiceServices

struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store", abstract: "The status store: copy a SQLite store into PostgreSQL.", subcommands: [Migrate.self])

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy every item, event, report, rate limit, decision and the console's, relations' and banks' state from a SQLite store into a new PostgreSQL store, then compare each table's count.")
        @Option(help: "The SQLite store: sqlite:PATH.") var from: String
        @Option(help: "The PostgreSQL store: postgres://USER@HOST:PORT/DATABASE?sslmode=…&schema=… (must hold no items).") var to: String
        @Option(help: "Env var holding the PostgreSQL password.") var passwordEnv = "SLUICE_STORE_PASSWORD"
        @Flag(help: "Print the counts as JSON.") var json = false

        func run() async throws {
            guard case let .sqlite(path) = try StoreConfig.parse(url: from, key: "--from") else {
                throw ValidationError("--from must be a SQLite store (sqlite:PATH), not \"\(from)\"")
            }
            guard case let .postgres(location) = try StoreConfig.parse(url: to, key: "--to") else {
                throw ValidationError("--to must be a PostgreSQL store (postgres://…), not \"\(to)\"")
            }
            let source = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            guard FileManager.default.fileExists(atPath: source.path) else { throw CLIError(message: "no SQLite store at \(source.path)") }
            let password = ProcessInfo.processInfo.environment[passwordEnv].flatMap { $0.isEmpty ? nil : $0 }
            let counts = try await Services.migrateStore(from: source, to: location, password: password) { table, copied in
                if !json, copied % 10_000 == 0 { FileHandle.standardError.write(Data("  \(table): \(copied)\n".utf8)) }
            }
            if json {
                try printJSON(counts.map { ["table": $0.table, "source": "\($0.source)", "target": "\($0.target)"] })
            } else {
                var table = TextTable(headers: ["TABLE", "SQLITE", "POSTGRESQL", ""])
                for count in counts { table.rows.append([count.table, "\(count.source)", "\(count.target)", count.matches ? "ok" : "DIFFERS"]) }
                print(table.render())
            }
            let differing = counts.filter { !$0.matches }
            guard differing.isEmpty else {
                throw CLIError(message: "counts differ after the copy: " + differing.map { "\($0.table) \($0.source) → \($0.target)" }.joined(separator: ", "))
            }
            if !json { print("copied \(counts.reduce(0) { $0 + $1.target }) rows into \(location); every table's count matches") }
        }
    }
}
