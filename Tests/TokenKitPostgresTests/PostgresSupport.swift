// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Foundation
import Logging
import NIOCore
import NIOPosix
import Persistence
import PostgresNIO
import Synchronization
import Testing
import TokenKitLogCheck
import TokenKitPostgres

/// The PostgreSQL server the tests use: `TOKENKIT_POSTGRES_URL`, for example
/// `postgres://postgres@127.0.0.1:5432/tokenkit_test` (`.ci/postgres` starts one and sets it).
enum TestDatabase {
    static let variable = "TOKENKIT_POSTGRES_URL"

    /// Whether a server is configured; the suites that need one are skipped otherwise.
    static var isConfigured: Bool { configuration != nil }

    /// Why the suites that need a server were skipped.
    static let skipMessage: Comment =
        "PostgreSQL tests skipped: set TOKENKIT_POSTGRES_URL=postgres://USER[:PASSWORD]@HOST:PORT/DATABASE (.ci/postgres does)"

    /// The client configuration parsed from the environment, or `nil`.
    static let configuration: PostgresClient.Configuration? = {
        guard let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty,
            let configuration = PostgresTokenStore.loopbackClientConfiguration(url: text)
        else { return nil }
        if let password = configuration.password {
            TestSecrets.shared.register(password, as: .password, origin: variable)
        }
        return configuration
    }()
}

/// Runs `body` with a running client (its own pool) for `configuration`, then stops the client.
func withClient<T: Sendable>(
    _ configuration: PostgresClient.Configuration? = TestDatabase.configuration,
    _ body: (PostgresClient) async throws -> T
) async throws -> T {
    let client = PostgresClient(configuration: try #require(configuration))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        return try await body(client)
    }
}

/// A table name of this test's own, dropped by ``dropTable(_:client:)``.
func uniqueTable() -> String {
    "tokenkit_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
}

func dropTable(_ table: String, client: PostgresClient) async throws {
    try await client.query("DROP TABLE IF EXISTS \(unescaped: table)")
}

/// A port on 127.0.0.1 that nothing listens on (bound once by this process, then closed).
func closedPort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    let port = try #require(channel.localAddress?.port)
    try await channel.close().get()
    return port
}

/// The session stored, or `nil`.
func stored(_ store: some TokenStore, account: String) async -> StoredSession? {
    if case .found(let session) = await store.load(account: account) { return session }
    return nil
}

/// The error a read found, or `nil`.
func unavailableError(_ read: TokenStoreRead) -> PersistenceError? {
    if case .unavailable(let error) = read { return error }
    return nil
}

/// A flag tasks share.
final class TestFlag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
#endif
