import ArgumentParser
import Foundation
import Logging
import SluiceCore
import SluiceServices

struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "Outbound webhook deliveries (the daemon sends them; see webhooks[] in pipeline.json).",
        subcommands: [List.self, Retry.self, Deliver.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Deliveries, newest first.")
        @OptionGroup var common: CommonOptions
        @Option(help: "Only this state: pending, delivered, failed.") var state: String?
        @Option(help: "At most this many.") var limit: Int = 100
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let config = try common.loadConfig().config
            let wanted: WebhookDeliveryState?
            if let state {
                guard let parsed = WebhookDeliveryState(rawValue: state) else {
                    throw ValidationError("--state \"\(state)\" is not a state; allowed: \(WebhookDeliveryState.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                wanted = parsed
            } else {
                wanted = nil
            }
            guard (1...100_000).contains(limit) else { throw ValidationError("--limit must be 1...100000") }
            try common.requireStore(config)
            let deliveries = try await Services.store(config: config).webhookDeliveries(state: wanted, limit: limit)
            if json {
                try printJSON(deliveries)
                return
            }
            var table = TextTable(headers: ["DELIVERY", "WEBHOOK", "EVENT", "STATE", "ATTEMPTS", "NEXT/DELIVERED", "LAST ERROR"])
            for delivery in deliveries {
                let when = delivery.deliveredAt ?? delivery.nextAttemptAt
                table.rows.append([delivery.id, delivery.webhook, delivery.event.rawValue, delivery.state.rawValue, "\(delivery.attempts)",
                                   when.formatted(.iso8601), String((delivery.lastError ?? "").prefix(60))])
            }
            print(table.render())
            print("\n\(deliveries.count) deliveries")
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send failed deliveries again (these ids, or every failed one with --failed).")
        @OptionGroup var common: CommonOptions
        @Argument(help: "Delivery ids.") var ids: [String] = []
        @Flag(help: "Every failed delivery.") var failed = false

        func run() async throws {
            let config = try common.loadConfig().config
            guard failed || !ids.isEmpty else { throw ValidationError("name delivery ids, or use --failed") }
            try common.requireStore(config)
            let store = try await Services.store(config: config)
            // Only failed deliveries are sent again: name the ids that were not (unknown, pending or delivered).
            let retried = try await store.retryWebhookDeliveries(ids: failed ? nil : ids, at: Date())
            print("\(retried.count) deliveries will be sent again by the daemon (or `sluice webhooks deliver`)")
            let requeued = Set(retried)
            let skipped = failed ? [] : ids.filter { !requeued.contains($0) }
            if !skipped.isEmpty {
                throw CLIError(message: "not failed deliveries, left as they are (unknown, pending or delivered): \(skipped.joined(separator: ", "))")
            }
        }
    }

    struct Deliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Queue and send what is due now, once (the daemon does this every second).")
        @OptionGroup var common: CommonOptions

        func run() async throws {
            try common.bootstrapLogging(default: .warning)
            let config = try common.loadConfig().config
            try common.requireStore(config)
            let services: Services
            do { services = try await Services.live(config: config) } catch {
                throw CLIError(message: "cannot start: \(error)")
            }
            guard let dispatcher = try services.webhookDispatcher() else { throw CLIError(message: "no webhooks are configured (webhooks[] in pipeline.json)") }
            guard let pass = await dispatcher.passIfDispatcher() else {
                print("a running daemon is dispatching the webhooks (it holds the claim); nothing done")
                return
            }
            print("queued \(pass.queued), delivered \(pass.delivered), retrying \(pass.retrying), failed \(pass.failed)")
        }
    }
}

struct EraseUserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase-user",
        abstract: "Erase a user: every file (pending, approved, thumbnails, quarantine, review, rejected) and item; tombstones stay.")

    @OptionGroup var common: CommonOptions
    @Argument(help: "The user id.") var user: String
    @Option(help: "Who asked (recorded in the tombstones; default: $USER).") var by: String?
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        let config = try common.loadConfig().config
        if let problem = Identifiers.problem(with: user, role: "user") { throw CLIError(message: problem) }
        try common.requireStore(config)
        let services: Services
        do { services = try await Services.live(config: config) } catch {
            throw CLIError(message: "cannot start: \(error)")
        }
        let who = by ?? ProcessInfo.processInfo.environment["USER"] ?? "operator"
        let summary = try await services.erasure.eraseUser(user, by: who, reason: "erased with sluice erase-user")
        if json {
            // The shape `DELETE /v1/users/{userId}` answers with.
            struct Erased: Encodable {
                var erased: [ItemID]
                var files: Int
            }
            try printJSON(Erased(erased: summary.items, files: summary.files))
            return
        }
        print("erased \(summary.items.count) items and \(summary.files) files of \(user)")
    }
}
