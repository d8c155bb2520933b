import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluicePipeline
import SluiceServices

/// PDQ hash banks: lists of known images whose matches block, send to review, or (negative banks) allow.
struct BanksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "banks", abstract: "PDQ hash banks: add, import, list, export, remove, enable, disable, confirm, explain.",
        subcommands: [Add.self, Import.self, List.self, Export.self, Remove.self, Enable.self, Disable.self, Confirm.self, Explain.self])

    /// `creating`: adding a bank may come before the daemon's first run; every other subcommand needs the store there.
    static func banks(_ common: CommonOptions, creating: Bool = false) async throws -> (HashBanks, PipelineConfig) {
        let config = try common.loadConfig().config
        if !creating { try common.requireStore(config) }
        return (HashBanks(store: try await Services.store(config: config), matcher: nil), config)
    }

    static func action(_ raw: String) throws -> BankAction {
        guard let action = BankAction(rawValue: raw) else { throw ValidationError("--action must be block, review or allow, not \"\(raw)\"") }
        return action
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a bank.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Bank name (a-z, 0-9, - and _).") var name: String
        @Option(help: "What a match does: block (no provider call), review, or allow (overrides the other banks' matches).") var action: String
        @Option(help: "Largest Hamming distance (bits of 256) that matches.") var threshold = HashBank.defaultThreshold

        func run() async throws {
            let (banks, _) = try await BanksCommand.banks(common, creating: true)
            let bank = try await banks.create(name, action: try BanksCommand.action(action), threshold: threshold)
            print("added bank \(bank.name): \(bank.action.rawValue) within \(bank.threshold)")
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add hashes to a bank from a file: one 64-hex PDQ hash a line, or ThreatExchange/HMA CSV (hash,…).",
            discussion: "Nothing is added when any line is not a hash; the bad lines are named. `-` reads stdin.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Bank name.") var name: String
        @Argument(help: "File (or - for stdin).") var file: String
        @Option(help: "A note kept with each hash (e.g. the list's source).") var note: String?

        func run() async throws {
            let (banks, _) = try await BanksCommand.banks(common, creating: true)
            let text: String
            if file == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
                    throw CLIError(message: "cannot read \(file): \((error as NSError).localizedDescription)")
                }
            }
            let result = try await banks.importList(text, to: name, note: note ?? (file == "-" ? nil : "imported from \(URL(fileURLWithPath: file).lastPathComponent)"))
            print("bank \(name): \(result.added) added, \(result.existing) already there")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every bank, its action, threshold, size and quarantined hashes.")
        @OptionGroup var common: CommonOptions
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let (banks, _) = try await BanksCommand.banks(common)
            let all = try await banks.store.banks()
            let standings = try await banks.store.bankState().standings
            if json {
                struct Line: Encodable {
                    var bank: HashBank
                    var quarantined: [String]
                    var confirmed: [String]
                }
                let lines = all.map { bank in
                    Line(bank: bank, quarantined: standings.filter { $0.bank == bank.name && $0.state == .quarantined }.map(\.hash.hex),
                         confirmed: standings.filter { $0.bank == bank.name && $0.state == .confirmed }.map(\.hash.hex))
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
                encoder.dateEncodingStrategy = .iso8601
                print(String(decoding: try encoder.encode(lines), as: UTF8.self))
                return
            }
            if all.isEmpty { print("no banks (sluice banks add NAME --action block)") }
            for bank in all {
                let quarantined = standings.filter { $0.bank == bank.name && $0.state == .quarantined }
                print("\(bank.name)\t\(bank.action.rawValue)\twithin \(bank.threshold)\t\(bank.size) hashes\t\(bank.enabled ? "enabled" : "disabled")"
                      + (quarantined.isEmpty ? "" : "\t\(quarantined.count) quarantined"))
                for standing in quarantined { print("  quarantined \(standing.hash.hex): \(standing.detail ?? "")") }
            }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a bank's hashes, one a line (the import format).")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Bank name.") var name: String
        @Flag(help: "HMA CSV rows: hash,bank,added,item,note.") var csv = false

        func run() async throws {
            let (banks, _) = try await BanksCommand.banks(common)
            let formatter = ISO8601DateFormatter()
            if csv { print("hash,bank,added,item,note") }
            for entry in try await banks.entries(name) {
                if csv {
                    let note = (entry.note ?? "").replacingOccurrences(of: "\"", with: "\"\"")
                    print("\(entry.hash.hex),\(entry.bank),\(formatter.string(from: entry.addedAt)),\(entry.itemId ?? ""),\"\(note)\"")
                } else {
                    print(entry.hash.hex)
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a bank and its hashes.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Bank name.") var name: String

        func run() async throws {
            try await BanksCommand.banks(common).0.remove(name)
            print("removed bank \(name)")
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let a bank's matches act again.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Bank name.") var name: String

        func run() async throws {
            try await BanksCommand.banks(common).0.setEnabled(name, true)
            print("bank \(name) enabled")
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop a bank matching (its hashes stay).")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Bank name.") var name: String

        func run() async throws {
            try await BanksCommand.banks(common).0.setEnabled(name, false)
            print("bank \(name) disabled")
        }
    }

    struct Confirm: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Confirm a bank hash that a flood of matches quarantined: it acts again, and floods no longer stop it.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Bank name.") var name: String
        @Argument(help: "The hash (64 hex characters).") var hash: String
        @Option(help: "Who confirms (recorded).") var by = ProcessInfo.processInfo.environment["USER"] ?? "operator"

        func run() async throws {
            guard let pdq = PDQHash(hex: hash) else { throw ValidationError("\"\(hash.prefix(80))\" is not a PDQ hash (64 hex characters)") }
            try await BanksCommand.banks(common).0.confirm(pdq, in: name, by: by)
            print("bank \(name): \(pdq.hex) confirmed by \(by)")
        }
    }

    struct Explain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Why an item matched (or would match now): bank, hash, distance.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Item id: userId/imageId.") var id: String

        func run() async throws {
            let (banks, config) = try await BanksCommand.banks(common)
            guard let item = try await banks.store.item(ItemID(id)) else { throw CLIError(message: "no item \(id)") }
            guard let pdq = item.pdq else { throw CLIError(message: "\(id) has no PDQ hash (not an image, or judged before Sluice hashed images: sluice reprocess --stages match)") }
            print("\(id): \(item.status.rawValue)\(item.reason.map { " (\($0))" } ?? "")")
            print("  pdq \(pdq.hash.hex) quality \(pdq.quality)\(pdq.quality < config.banks.minQuality ? " (under banks.minQuality \(config.banks.minQuality): matches never act)" : "")")
            if let match = item.match {
                print("  recorded match: bank \(match.bank), distance \(match.distance), hash \(match.hash.hex), \(match.action.rawValue)"
                      + (match.acted ? ", acted" : ", did not act") + (match.note.map { ": \($0)" } ?? ""))
            } else {
                print("  recorded match: none")
            }
            if let reused = item.reused { print("  classification reused from \(reused.item) (distance \(reused.distance))") }
            let matcher = BankMatcher(store: banks.store, config: config.banks, reuseWithinDistance: nil, logger: Logger(label: "sluice.banks"))
            // The stored hash only: rotations and flips are matched from the image itself on intake.
            let now = await matcher.explain(PDQFingerprint(hash: pdq.hash, quality: pdq.quality))
            if now.isEmpty { print("  banks now: no match") }
            for match in now {
                print("  banks now: \(match.bank) (\(match.action.rawValue)) distance \(match.distance), hash \(match.hash.hex)")
            }
        }
    }
}
