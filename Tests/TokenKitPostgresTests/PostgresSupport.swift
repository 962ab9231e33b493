// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOPosix
import Persistence
import PostgresNIO
import Synchronization
import Testing
import TokenKitLogCheck
import TokenKitPostgres
import TokenKitTesting
import TokenRefresh

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

/// Runs `body` with a running client (its own pool) for the test database, sharing the server with the other tests
/// (see ``DatabaseAccess``), then stops the client.
func withClient<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
    let configuration = try #require(TestDatabase.configuration)
    return try await DatabaseAccess.shared.sharing { try await running(configuration, body) }
}

/// Runs `body` with a running client for a database that is down (a port on 127.0.0.1 that is bound and not
/// listening, held until `body` returns), then cancels the client without waiting for it to stop: a client whose
/// every connection attempt was refused takes about 15 s to stop after it is cancelled, and the test is over. It
/// takes no share of the test database either: a share held that long would keep every test that needs the server
/// to itself, and every test queued behind those, waiting.
func withUnreachableClient<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
    let port = try RefusingPort()
    defer { withExtendedLifetime(port) {} }
    let client = PostgresClient(
        configuration: .init(
            host: "127.0.0.1", port: port.number, username: "nobody", password: nil, database: "none",
            tls: .disable))
    let running = Task { await client.run() }
    defer { running.cancel() }
    return try await body(client)
}

/// A TCP port on 127.0.0.1 bound by this process and never listened on: a connection to it is refused, and no
/// other server can take the port while it is held (a port bound and closed again could be handed to the next
/// server that asks for any free port, and a client would then wait on that server's silence).
final class RefusingPort: Sendable {
    let number: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw POSIXError(.EADDRINUSE)
        }
        self.descriptor = descriptor
        self.number = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { Glibc.close(descriptor) }
}

private func running<T: Sendable>(
    _ configuration: PostgresClient.Configuration, _ body: (PostgresClient) async throws -> T
) async throws -> T {
    let client = PostgresClient(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await client.run() }
        defer { group.cancelAll() }
        do {
            return try await body(client)
        } catch let error as PSQLError {
            // PSQLError's description hides everything; a failure needs at least what the server said.
            print("database error: \(databaseErrorSummary(error))")
            throw error
        }
    }
}

/// A database error's code, SQLSTATE and the server's message (never its query, binds or detail, which may hold
/// a test's token).
func databaseErrorSummary(_ error: PSQLError) -> String {
    var parts = ["\(error.code)"]
    if let state = error.serverInfo?[.sqlState] { parts.append("SQLSTATE \(state)") }
    if let message = error.serverInfo?[.message] { parts.append(message) }
    return parts.joined(separator: ", ")
}

/// Tests that stop or restart the server have it to themselves; every other test shares it (tests of all suites
/// run in parallel). A task that holds it, shared or not, does not ask again.
actor DatabaseAccess {
    static let shared = DatabaseAccess()
    @TaskLocal static var held = false

    private var readers = 0
    private var writer = false
    private var waitingWriters: [CheckedContinuation<Void, Never>] = []
    private var waitingReaders: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` sharing the server with other tests.
    nonisolated func sharing<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if Self.held { return try await body() }
        await beginShared()
        do {
            let result = try await Self.$held.withValue(true) { try await body() }
            await endShared()
            return result
        } catch {
            await endShared()
            throw error
        }
    }

    /// Runs `body` with the server to itself (it may stop and start it).
    nonisolated func exclusively<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        precondition(!Self.held, "the server is already held by this task")
        await beginExclusive()
        do {
            let result = try await Self.$held.withValue(true) { try await body() }
            await endExclusive()
            return result
        } catch {
            await endExclusive()
            throw error
        }
    }

    private func beginShared() async {
        if !writer && waitingWriters.isEmpty {
            readers += 1
            return
        }
        await withCheckedContinuation { waitingReaders.append($0) }
    }

    private func endShared() {
        readers -= 1
        wake()
    }

    private func beginExclusive() async {
        if !writer && readers == 0 {
            writer = true
            return
        }
        await withCheckedContinuation { waitingWriters.append($0) }
    }

    private func endExclusive() {
        writer = false
        wake()
    }

    private func wake() {
        guard !writer else { return }
        if readers == 0, !waitingWriters.isEmpty {
            writer = true
            waitingWriters.removeFirst().resume()
            return
        }
        guard waitingWriters.isEmpty else { return }
        readers += waitingReaders.count
        let readers = waitingReaders
        waitingReaders = []
        for reader in readers { reader.resume() }
    }
}

/// A manual clock, a simulated token server reading it, and the server's token endpoint: what the replica tests
/// refresh against.
func simulatedEndpoint(
    _ configuration: SimulatedTokenServer.Configuration
) -> (clock: ManualClock, server: SimulatedTokenServer, endpoint: TokenEndpoint) {
    let clock = ManualClock()
    let server = SimulatedTokenServer(configuration: configuration, now: clock.wallClock)
    let endpoint = TokenEndpoint(
        url: URL(string: "https://127.0.0.1/oauth/token")!, client: OAuthClient(id: "app"), transport: server,
        now: clock.wallClock)
    return (clock, server, endpoint)
}

/// Runs `body` with two stores over `table`, each on a client of its own as two replicas have, and the first client.
func withTwoReplicaStores<T: Sendable>(
    table: String, operationTimeout: Duration? = .seconds(5),
    _ body: ([PostgresTokenStore], PostgresClient) async throws -> T
) async throws -> T {
    try await withClient { first in
        try await withClient { second in
            let configuration = PostgresTokenStore.Configuration(
                tableName: table, lockTimeout: .seconds(30), operationTimeout: operationTimeout)
            let stores = [
                PostgresTokenStore(client: first, configuration: configuration),
                PostgresTokenStore(client: second, configuration: configuration),
            ]
            return try await body(stores, first)
        }
    }
}

/// A table name of this test's own, dropped by ``dropTable(_:client:)``.
func uniqueTable() -> String {
    "tokenkit_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
}

/// Runs `body` with a store (sealing with `key`, if any) over a table of the test's own, dropped afterwards.
func withStore(
    key: SymmetricKey? = nil, _ body: (PostgresTokenStore, PostgresClient, String) async throws -> Void
) async throws {
    try await withClient { client in
        let table = uniqueTable()
        let store = PostgresTokenStore(client: client, configuration: .init(tableName: table, encryptionKey: key))
        try await droppingTable(table, client: client) { try await body(store, client, table) }
    }
}

/// Runs `body`, then drops `table` through `client`, whether `body` threw or not.
func droppingTable(_ table: String, client: PostgresClient, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch {
        try? await dropTable(table, client: client)
        throw error
    }
    try await dropTable(table, client: client)
}

func dropTable(_ table: String, client: PostgresClient) async throws {
    try await client.query("DROP TABLE IF EXISTS \(unescaped: table), \(unescaped: table)_sign_outs")
}

/// Replicas of a backend sharing one table of the test's own: each client is a replica's own pool.
struct TestReplicas: Sendable {
    let table: String
    let clients: [PostgresClient]
    var first: PostgresClient { clients[0] }
    var second: PostgresClient { clients[1] }
    var third: PostgresClient { clients[2] }
}

/// Runs `body` with `count` running clients (separate pools, as separate replicas have) and a table of its own,
/// dropped afterwards.
func withReplicas<T: Sendable>(
    _ count: Int = 2, _ body: (TestReplicas) async throws -> T
) async throws -> T {
    let table = uniqueTable()
    func nest(_ clients: [PostgresClient]) async throws -> T {
        guard clients.count == count else {
            return try await withClient { client in try await nest(clients + [client]) }
        }
        let result = try await body(TestReplicas(table: table, clients: clients))
        try await dropTable(table, client: clients[0])
        return result
    }
    return try await nest([])
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
    func clear() { value.withLock { $0 = false } }
}
#endif
