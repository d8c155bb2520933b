import ArgumentParser
import Foundation
import SluiceAPI
import SluiceCore
import SluiceServices

/// Reviewer accounts for the review console (`sluice serve` at /console/).
struct UsersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Review console accounts: add, list, disable, enable, reset-password.",
        subcommands: [Add.self, List.self, Disable.self, Enable.self, ResetPassword.self])

    /// The password from stdin (`--password-stdin`, first line) or a prompt without echo.
    static func password(fromStdin: Bool, prompt: String) throws -> String {
        if fromStdin {
            guard let line = readLine(strippingNewline: true) else { throw CLIError(message: "--password-stdin: nothing on stdin") }
            return line
        }
        guard isatty(STDIN_FILENO) == 1 else { throw CLIError(message: "no terminal to ask for the password: use --password-stdin") }
        guard let first = getpass(prompt).map({ String(cString: $0) }), let second = getpass("Again: ").map({ String(cString: $0) }) else {
            throw CLIError(message: "cannot read the password")
        }
        guard first == second else { throw CLIError(message: "the passwords differ") }
        return first
    }

    /// `creating`: adding the first reviewer may come before the daemon's first run; the other subcommands change
    /// accounts that must already be in the store.
    static func accounts(_ common: CommonOptions, creating: Bool = false) async throws -> ReviewerAccounts {
        let config = try common.loadConfig().config
        if !creating { try common.requireStore(config) }
        return ReviewerAccounts(store: try await Services.store(config: config))
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a reviewer or admin.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "The name they sign in with.") var name: String
        @Option(help: "reviewer or admin.") var role: String = "reviewer"
        @Flag(help: "Read the password from the first line of stdin instead of a prompt.") var passwordStdin = false

        func run() async throws {
            guard let role = Reviewer.Role(rawValue: role) else { throw ValidationError("--role must be reviewer or admin, not \"\(role)\"") }
            if let problem = Reviewer.problem(with: name) { throw ValidationError(problem) }
            let accounts = try await UsersCommand.accounts(common, creating: true)
            let password = try UsersCommand.password(fromStdin: passwordStdin, prompt: "Password for \(name): ")
            do {
                let reviewer = try await accounts.add(name, role: role, password: password)
                print("added \(reviewer.role.rawValue) \(reviewer.name)")
            } catch let failure as ReviewerAccounts.Failure {
                throw CLIError(message: failure.message)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every account.")
        @OptionGroup var common: CommonOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let config = try common.loadConfig().config
            try common.requireStore(config)
            let reviewers = try await Services.store(config: config).reviewers()
            if json {
                struct Row: Encodable {
                    var name: String
                    var role: String
                    var disabled: Bool
                    var createdAt: String
                }
                try printJSON(reviewers.map { Row(name: $0.name, role: $0.role.rawValue, disabled: $0.disabled, createdAt: $0.createdAt.formatted(.iso8601)) })
                return
            }
            var table = TextTable(headers: ["NAME", "ROLE", "STATE", "CREATED"])
            for reviewer in reviewers {
                table.rows.append([reviewer.name, reviewer.role.rawValue, reviewer.disabled ? "disabled" : "active", reviewer.createdAt.formatted(.iso8601)])
            }
            print(table.render())
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop an account from signing in (its sessions end at their next request).")
        @OptionGroup var common: CommonOptions
        @Argument var name: String

        func run() async throws {
            do { try await UsersCommand.accounts(common).setDisabled(name, true) } catch let failure as ReviewerAccounts.Failure {
                throw CLIError(message: failure.message)
            }
            print("disabled \(name)")
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let a disabled account sign in again.")
        @OptionGroup var common: CommonOptions
        @Argument var name: String

        func run() async throws {
            do { try await UsersCommand.accounts(common).setDisabled(name, false) } catch let failure as ReviewerAccounts.Failure {
                throw CLIError(message: failure.message)
            }
            print("enabled \(name)")
        }
    }

    struct ResetPassword: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "reset-password", abstract: "Set a new password (signs the account out everywhere).")
        @OptionGroup var common: CommonOptions
        @Argument var name: String
        @Flag(help: "Read the password from the first line of stdin instead of a prompt.") var passwordStdin = false

        func run() async throws {
            let accounts = try await UsersCommand.accounts(common)
            let password = try UsersCommand.password(fromStdin: passwordStdin, prompt: "New password for \(name): ")
            do { try await accounts.resetPassword(name, to: password) } catch let failure as ReviewerAccounts.Failure {
                throw CLIError(message: failure.message)
            }
            print("password of \(name) reset")
        }
    }
}
