// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
import Foundation
import Logging
import Persistence
import PostgresNIO
import Synchronization
import Testing
import TokenKitLogCheck
import TokenKitPostgres
import TokenKitTesting
import TokenRefresh

/// A sign-in whose save under the refresh lease is held in the database past the operation timeout: the client is
/// told the sign-in failed and goes back to the session it had, so the save must never land afterwards.
@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct SignInSaveTimeoutTests {
    /// The save is held at the worst instant: the lease is taken, the session read, the write sent, and another
    /// session holds a lock the write needs, so the write waits in the database itself until the test lets it go,
    /// long after the client was told the sign-in failed: before it has read the row (the row's lock), or after it
    /// has read the row and checked its lease, at its `UPDATE` (a table lock that lets reads through).
    @Test(.timeLimit(.minutes(1)), arguments: DatabaseLock.Kind.allCases)
    func aSignInReportedFailedAfterItsSaveTimedOutNeverLandsLater(heldBy kind: DatabaseLock.Kind) async throws {
        try await withReplicas { replicas in
            let heldLock = DatabaseLock(kind, client: replicas.second, table: replicas.table, account: "alice")
            var configuration = PostgresTokenStore.Configuration(
                tableName: replicas.table, lockTimeout: .seconds(30), operationTimeout: .seconds(2))
            configuration.testHooks.fencedWriteAttempt = { await heldLock.takeOnce() }
            let store = PostgresTokenStore(client: replicas.first, configuration: configuration)
            let other = PostgresTokenStore(
                client: replicas.second, configuration: .init(tableName: replicas.table, lockTimeout: .seconds(30)))
            let before = StoredSession(token: oldPair, userID: "user-1", generation: 1)
            try await other.save(before, account: "alice", condition: .always)
            let server = SimulatedTokenServer(
                configuration: .init(rotatesRefreshTokens: true, detectsReuse: true), now: AuthToken.systemNow)
            let endpoint = TokenEndpoint(
                url: URL(string: "https://127.0.0.1/oauth/token")!, client: OAuthClient(id: "app"), transport: server)
            let client = TokenRefreshClient(
                strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store,
                configuration: .init(account: "alice"))

            await #expect(throws: (any Error).self, "the sign-in's save was held past the timeout") {
                try await client.signIn(with: newerPair, userID: "user-2")
            }
            #expect(heldLock.wasTaken, "the save never reached the database")
            // The client was told the sign-in failed. Now the lock goes: every write queued behind it runs before
            // the test's own lock is granted again.
            try await heldLock.releaseAndWaitForQueuedWrites()
            let saved = await stored(other, account: "alice")
            #expect(saved == before, "the sign-in reported failed landed later")
        }
    }
}

/// Another session's lock, in an open transaction, taken from a store's test hook so that the store's write waits in
/// the database itself, and held until ``releaseAndWaitForQueuedWrites()``.
final class DatabaseLock: Sendable {
    /// Where the write waits.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        /// The row's lock (`SELECT … FOR UPDATE`): the write waits to read the row.
        case row
        /// The table in `SHARE` mode: the write reads the row (`FOR UPDATE`) and waits at its `UPDATE`.
        case table
        var testDescription: String { rawValue }
    }

    let kind: Kind
    let client: PostgresClient
    let table: String
    let account: String
    private let taken = Signal()
    private let released = Signal()
    private let holder = Mutex<Task<Void, any Error>?>(nil)
    private let logger = Logger(label: "row-lock")

    init(_ kind: Kind, client: PostgresClient, table: String, account: String) {
        self.kind = kind
        self.client = client
        self.table = table
        self.account = account
    }

    /// Whether the lock was taken (by the first call of ``takeOnce()``).
    var wasTaken: Bool { holder.withLock { $0 != nil } }

    /// Takes the row's lock on the first call and returns once it is held; later calls return at once.
    func takeOnce() async {
        let task: Task<Void, any Error>? = holder.withLock { holder in
            guard holder == nil else { return nil }
            let (client, logger, lock) = (self.client, self.logger, self.lock)
            let (taken, released) = (self.taken, self.released)
            let task = Task {
                defer { taken.fire() }
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: logger)
                    try await connection.query(lock, logger: logger)
                    taken.fire()
                    await released.wait()
                    try await connection.query("COMMIT", logger: logger)
                }
            }
            holder = task
            return task
        }
        if task != nil { await taken.wait() }
    }

    /// Lets the row go, then locks it again in a transaction of its own: the writes that were waiting for the row
    /// (queued before this request) have all run, committed or rolled back, when this returns.
    func releaseAndWaitForQueuedWrites() async throws {
        released.fire()
        try await holder.withLock { $0 }?.value
        let (logger, lock) = (self.logger, self.lock)
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            try await connection.query(lock, logger: logger)
            try await connection.query("COMMIT", logger: logger)
        }
    }

    /// The statement that takes the lock.
    private var lock: PostgresQuery {
        switch kind {
        case .row: "SELECT 1 FROM \(unescaped: table) WHERE account = \(account) FOR UPDATE"
        case .table: "LOCK TABLE \(unescaped: table) IN SHARE MODE"
        }
    }
}
#endif
