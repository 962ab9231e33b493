// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Persistence
import PostgresNIO
import Synchronization
import Testing
import TokenKitLogCheck
import TokenKitPostgres
import TokenKitTesting

/// The test kit's store contract, checked against PostgreSQL: two handles are two replicas (each its own pool).
@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct PostgresConformanceTests {
    enum Disruption: String, CaseIterable, CustomTestStringConvertible {
        case none, everyConnectionTerminated, databaseRestart
        var testDescription: String { rawValue }
    }

    @Test(.timeLimit(.minutes(2)), arguments: Disruption.allCases)
    func postgresTokenStoreKeepsTheStoreContract(disruption: Disruption) async throws {
        switch disruption {
        case .none:
            try await check(disruption)
        case .everyConnectionTerminated:
            // Ending every backend would break the other suites' tests running meanwhile.
            try await DatabaseAccess.shared.exclusively { try await check(disruption) }
        case .databaseRestart:
            guard DatabaseServer.restartScript != nil else {
                Issue.record("skipped: TOKENKIT_POSTGRES_RESTART is not set (.ci/postgres --run sets it)")
                return
            }
            try await DatabaseAccess.shared.exclusively { try await check(disruption) }
        }
    }

    func check(_ disruption: Disruption) async throws {
        let table = uniqueTable()
        try await withClient { first in
            try await withClient { second in
                try await withClient { admin in
                    let opened = Mutex(0)
                    let configuration = PostgresTokenStore.Configuration(tableName: table)
                    let disrupt: (@Sendable () async throws -> Void)?
                    switch disruption {
                    case .none:
                        disrupt = nil
                    case .everyConnectionTerminated:
                        disrupt = {
                            try await admin.query(
                                """
                                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                WHERE pid <> pg_backend_pid() AND datname = current_database()
                                """)
                        }
                    case .databaseRestart:
                        disrupt = { try await DatabaseServer.run("restart") }
                    }
                    let conformance = TokenStoreConformance(disrupt: disrupt) {
                        let index = opened.withLock { count in
                            defer { count += 1 }
                            return count
                        }
                        return PostgresTokenStore(
                            client: index.isMultiple(of: 2) ? first : second, configuration: configuration)
                    }
                    try await conformance.check()
                    try await dropTable(table, client: admin)
                }
            }
        }
    }
}
#endif
