import Foundation
import Hummingbird
import SluiceCore
import SluicePipeline

/// PDQ hash banks for backends (app tokens): `GET /v1/banks` lists them; `POST /v1/banks/{name}/hashes
/// {hashes: [hex…], note?}` adds hashes to an existing bank (created with `sluice banks add`).
struct BankRoutes {
    let services: APIServices

    static let maxHashes = 100_000

    func collection() -> RouteCollection<APIContext> {
        let routes = RouteCollection(context: APIContext.self)
        routes.get("/v1/banks", use: list)
        routes.post("/v1/banks/:name/hashes", use: add)
        return routes
    }

    struct BankList: Encodable {
        var banks: [BankSummary]
    }

    struct BankSummary: Encodable {
        var name: String
        var action: String
        var threshold: Int
        var enabled: Bool
        var size: Int
    }

    struct Addition: Decodable {
        var hashes: [String]
        var note: String?
    }

    struct Added: Encodable {
        var bank: String
        var added: Int
        var existing: Int
    }

    func list(_ request: Request, context: APIContext) async throws -> Response {
        _ = try ItemRoutes.backendItself(context, for: "read hash banks")
        let banks = try await services.store.banks().map {
            BankSummary(name: $0.name, action: $0.action.rawValue, threshold: $0.threshold, enabled: $0.enabled, size: $0.size)
        }
        return try context.json(BankList(banks: banks))
    }

    func add(_ request: Request, context: APIContext) async throws -> Response {
        let by = try ItemRoutes.backendItself(context, for: "add hashes to banks")
        let name = try context.pathParameter("name")
        guard HashBank.isValidName(name) else {
            throw APIError(.invalidArgument, "bank name \(Identifiers.printable(name)) is not valid: it must be \(HashBank.nameRule)")
        }
        let body = try await request.body.collect(upTo: Self.maxHashes * 70 + 64 * 1024)
        let addition: Addition
        do {
            addition = try JSONDecoder().decode(Addition.self, from: body)
        } catch {
            throw APIError(.invalidArgument, "body must be {\"hashes\": [64 hex characters, …], \"note\"?: string}")
        }
        guard !addition.hashes.isEmpty, addition.hashes.count <= Self.maxHashes else {
            throw APIError(.invalidArgument, "hashes must hold 1...\(Self.maxHashes) PDQ hashes, not \(addition.hashes.count)")
        }
        try APIValidation.refuseNUL(addition.note, "note")
        if let note = addition.note, note.unicodeScalars.count > 1000 {
            throw APIError(.invalidArgument, "note is \(note.unicodeScalars.count) characters, over 1000")
        }
        var hashes: [PDQHash] = []
        hashes.reserveCapacity(addition.hashes.count)
        for (index, text) in addition.hashes.enumerated() {
            guard let hash = PDQHash(hex: text) else {
                throw APIError(.invalidArgument, "hashes[\(index)] \(Identifiers.printable(text)) is not a PDQ hash (64 hex characters)")
            }
            hashes.append(hash)
        }
        let banks = HashBanks(store: services.store, matcher: services.images.matcher)
        do {
            let result = try await banks.add(hashes, to: name, note: addition.note ?? "added through the API by \(by)")
            return try context.json(Added(bank: name, added: result.added, existing: result.existing))
        } catch let error as BankError {
            throw APIError(error.kind == .notFound ? .notFound : .invalidArgument, error.message)
        }
    }
}
