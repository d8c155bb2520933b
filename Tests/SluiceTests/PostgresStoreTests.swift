import Foundation
import SluiceCore
@testable import SluiceStore
import SluiceTesting
import Testing

/// What only the PostgreSQL backend has: opening by many processes at once, read-only sessions, the server's own
/// error messages. The shared contract is in `StoreContractTests`.
@Suite(.enabled(if: StoreBackend.postgresURL != nil, "SLUICE_TEST_POSTGRES_URL is not set"))
struct PostgresStoreTests {
    /// CI sets `SLUICE_REQUIRE_POSTGRES`: there the PostgreSQL tests must run, never be skipped quietly.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SLUICE_REQUIRE_POSTGRES"] == "1"))
    func postgresIsReachableWhereRequired() async throws {
        let store = try await StoreBackend.postgresStore()
        #expect(try await store.countsByStatus().isEmpty)
        await store.close()
    }

    static func location(schema: String = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")) throws -> PostgresLocation {
        var location = try PostgresLocation(url: try #require(StoreBackend.postgresURL))
        location.schema = schema
        location.maxConnections = 2
        return location
    }

    /// Daemons and API servers started together: every open succeeds and each migration is applied once.
    @Test func manyOpenersOfANewSchemaMigrateOnce() async throws {
        let location = try Self.location()
        let stores = try await withThrowingTaskGroup(of: PostgresStore.self, returning: [PostgresStore].self) { group in
            for _ in 0..<6 { group.addTask { try await PostgresStore(location, password: nil) } }
            var stores: [PostgresStore] = []
            for try await store in group { stores.append(store) }
            return stores
        }
        let versions = try await stores[0].rows("read migrations", "SELECT version FROM sluiceMigration ORDER BY version")
            .map { try $0.decode(Int.self) }
        #expect(versions == PostgresSchema.migrations.map(\.version))
        for store in stores { await store.close() }
    }

    /// A dry run never writes: a schema nobody migrated is refused, and a migrated one is read but not written.
    @Test func readOnlyStoresNeitherMigrateNorWrite() async throws {
        let location = try Self.location()
        do {
            _ = try await PostgresStore(location, password: nil, readOnly: true)
            Issue.record("a read-only store opened an unmigrated schema")
        } catch {
            #expect(error.message.contains("needs migrating"), "\(error)")
        }
        let writer = try await PostgresStore(location, password: nil)
        try await writer.recordVerdict(StoreContractTests.text("t1"), stage: "text", detail: nil)
        let reader = try await PostgresStore(location, password: nil, readOnly: true)
        #expect(try await reader.item("t1") == StoreContractTests.text("t1"))
        do {
            try await reader.recordVerdict(StoreContractTests.text("t2"), stage: "text", detail: nil)
            Issue.record("a read-only store wrote")
        } catch {
            #expect(error.message.contains("read-only transaction"), "\(error)")
        }
        await reader.close()
        await writer.close()
    }

    /// A store PostgreSQL refuses names what PostgreSQL said, not postgres-nio's generic text.
    @Test func errorsCarryTheServersMessage() async throws {
        var location = try Self.location()
        location.database = "no_such_database_here"
        do {
            _ = try await PostgresStore(location, password: nil)
            Issue.record("opened a database that does not exist")
        } catch {
            #expect(error.description.contains("no_such_database_here") && error.description.contains("does not exist"), "\(error)")
        }
    }

    /// A newer sluice migrated this schema: an older build refuses it instead of writing rows it does not understand.
    @Test func aSchemaFromANewerBuildIsRefused() async throws {
        let location = try Self.location()
        let store = try await PostgresStore(location, password: nil)
        try await store.execute("pretend a newer build", "INSERT INTO sluiceMigration (version, name) VALUES (9999, 'from the future')")
        do {
            _ = try await PostgresStore(location, password: nil)
            Issue.record("opened a schema with an unknown migration")
        } catch {
            #expect(error.message.contains("migration 9999") && error.message.contains("upgrade sluice"), "\(error)")
        }
        await store.close()
    }
}
