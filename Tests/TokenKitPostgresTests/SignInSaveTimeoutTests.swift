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
    @Test(.timeLimit(.minutes(1)), arguments: [DatabaseLock.Kind.row, .table])
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
            let client = alicesClient(over: store)

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

extension SignInSaveTimeoutTests {
    /// The sign-in's save has sent its `COMMIT`, and the answer does not come (as when the connection dies between
    /// the write and the answer): the sign-in fails within a bound of a few operation timeouts, with a detail
    /// saying the save's outcome is unknown, instead of waiting for as long as the connection takes to give up.
    /// The bound is measured on the store's clock, which the test moves only once the commit waits in the database
    /// (10 ms at a time, whenever the store waits on it), however long a loaded machine takes over each query.
    @Test(.timeLimit(.minutes(1)))
    func aSignInWhoseCommitGoesUnansweredFailsWithinItsBoundSayingTheOutcomeIsUnknown() async throws {
        try await withReplicas { replicas in
            let heldCommit = DatabaseLock(.commit, client: replicas.second, table: replicas.table, account: "alice")
            let clock = ManualClock()
            let (client, _) = try await signInHeldAtCommit(
                // No renewals (nothing else contends for the lease): the store's clock then waits only on the save.
                replicas, heldCommit, clock: clock, pausesHeartbeat: true, onOutcomeCheck: nil)
            let ended = TestFlag()
            let signIn = Task {
                defer { ended.set() }
                return try await client.signIn(with: newerPair, userID: "user-2")
            }
            try await heldCommit.waitUntilWaitedFor()
            let started = clock.now
            var waited = Duration.zero
            while true {
                while !ended.isSet && clock.sleeperCount == 0 { await Task.yield() }
                waited = started.duration(to: clock.now)
                if ended.isSet { break }
                try #require(waited < .seconds(60), "the sign-in still waits after \(waited) of the store's clock")
                clock.advance(by: .milliseconds(10))
            }
            let error = await #expect(throws: TokenRefreshError.self, "the sign-in's commit was never answered") {
                try await signIn.value
            }
            // The database never answers (the test holds the commit until the end): the store has given up, within
            // its operation timeout (2 s) for the save, once more for the commit's answer and once more to ask
            // whether the commit took effect, then within one more each for letting go of the lease and of the
            // lock: five on its clock (and one 10-ms step of the test's per wait at most).
            #expect(heldCommit.wasTaken, "the save never reached the database")
            #expect(
                waited <= .seconds(2) * 5 + .milliseconds(100), "the sign-in waited \(waited) for an unanswered commit")
            let cause = error?.underlying as? PersistenceError
            #expect(cause == .writeFailed)
            #expect(cause?.detail?.contains("outcome is unknown") == true, "\(String(describing: cause?.detail))")
            try await heldCommit.releaseAndWaitForQueuedWrites()
            try await heldCommit.removeCommitHold()
        }
    }

    /// The sign-in's save has sent its `COMMIT`, whose answer comes too late for the store, but the commit took
    /// effect: the store learns it from the database and the sign-in succeeds, rather than the client going back to
    /// the session it replaced while the new one sits in the store.
    @Test(.timeLimit(.minutes(1)))
    func aSignInWhoseCommitLandedWithoutATimelyAnswerIsReportedSignedIn() async throws {
        try await withReplicas { replicas in
            let heldCommit = DatabaseLock(.commit, client: replicas.second, table: replicas.table, account: "alice")
            let asked = TestFlag()
            let (client, other) = try await signInHeldAtCommit(replicas, heldCommit, clock: ContinuousClock()) {
                // The first time the store asks (it asks once at a time): the commit goes through now, and has taken
                // effect when the store asks.
                guard !asked.isSet else { return }
                asked.set()
                try? await heldCommit.releaseAndWaitForQueuedWrites()
            }
            try await client.signIn(with: newerPair, userID: "user-2")
            #expect(asked.isSet, "the store never asked whether the commit took effect")
            let saved = await stored(other, account: "alice")
            #expect(saved?.userID == "user-2", "the sign-in's session is not in the store")
            try await heldCommit.removeCommitHold()
        }
    }

    /// A client signing in over a store whose sign-in save, under the refresh lease, sends its `COMMIT` and then
    /// waits in the database (a deferred check takes `heldCommit`'s lock), with another replica's store that stored
    /// the session it replaces.
    private func signInHeldAtCommit(
        _ replicas: TestReplicas, _ heldCommit: DatabaseLock, clock: some Clock<Duration>,
        pausesHeartbeat: Bool = false,
        onOutcomeCheck: (@Sendable () async -> Void)?
    ) async throws -> (TokenRefreshClient, PostgresTokenStore) {
        var configuration = PostgresTokenStore.Configuration(
            tableName: replicas.table, lockTimeout: .seconds(30), operationTimeout: .seconds(2))
        configuration.testHooks.fencedWriteAttempt = { await heldCommit.takeOnce() }
        configuration.testHooks.commitOutcomeCheck = onOutcomeCheck
        configuration.testHooks.pausesHeartbeat = pausesHeartbeat
        let store = PostgresTokenStore(client: replicas.first, configuration: configuration, clock: clock)
        let other = PostgresTokenStore(
            client: replicas.second, configuration: .init(tableName: replicas.table, lockTimeout: .seconds(30)))
        try await other.save(
            StoredSession(token: oldPair, userID: "user-1", generation: 1), account: "alice", condition: .always)
        try await heldCommit.installCommitHold()
        let client = alicesClient(over: store)
        return (client, other)
    }
}

/// Alice's client over `store`, refreshing at a simulated server that rotates refresh tokens and detects reuse.
func alicesClient(over store: PostgresTokenStore) -> TokenRefreshClient {
    let server = SimulatedTokenServer(
        configuration: .init(rotatesRefreshTokens: true, detectsReuse: true), now: AuthToken.systemNow)
    let endpoint = TokenEndpoint(
        url: URL(string: "https://127.0.0.1/oauth/token")!, client: OAuthClient(id: "app"), transport: server)
    return TokenRefreshClient(
        strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, configuration: .init(account: "alice"))
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
        /// A lock of the test's own (an advisory one) that a deferred check takes when a write changes the row's
        /// payload (``installCommitHold()``): the write waits after sending its `COMMIT`, for the answer.
        case commit
        var testDescription: String { rawValue }
    }

    let kind: Kind
    let client: PostgresClient
    let table: String
    let account: String
    private let taken = Signal()
    private let released = Signal()
    private let holder = Mutex<Task<Void, any Error>?>(nil)
    /// The backend process of the session holding the lock, once it holds it.
    private let holderPID = Locked<Int32?>(nil)
    private let logger = Logger(label: "row-lock")
    /// The advisory lock's key, for ``Kind/commit``.
    private let key = Int64.random(in: 1...Int64.max)

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
            let (taken, released, holderPID) = (self.taken, self.released, self.holderPID)
            let task = Task {
                defer { taken.fire() }
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: logger)
                    try await connection.query(lock, logger: logger)
                    let rows = try await connection.query("SELECT pg_backend_pid()", logger: logger)
                    for try await pid in rows.decode(Int32.self) { holderPID.withLock { $0 = pid } }
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

    /// Waits for the lock in the transaction open on `connection` (a store's, from a test hook), until
    /// ``releaseAndWaitForQueuedWrites()``; the transaction keeps an advisory (``Kind/commit``) lock until it ends.
    func waitForIt(on connection: PostgresConnection) async throws {
        try await connection.query(lock, logger: logger)
    }

    /// Returns once another session waits in the database for this lock: it holds it then, and a store's write
    /// waits for it.
    func waitUntilWaitedFor() async throws {
        let logger = self.logger
        let giveUp = ContinuousClock.now + .seconds(60)  // a guard against a hang, not a wait
        while true {
            try #require(ContinuousClock.now < giveUp, "no write waited for the lock within 60 s")
            if let pid = holderPID.withLock({ $0 }) {
                let rows = try await client.query(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted AND \(pid) = ANY(pg_blocking_pids(pid))",
                    logger: logger)
                var waiting: Int64 = 0
                for try await count in rows.decode(Int64.self) { waiting = count }
                if waiting > 0 { return }
            }
            try await Task.sleep(for: .milliseconds(5))  // polls the database's state, not a time
        }
    }

    /// For ``Kind/commit``: makes a write that changes the row's payload take the lock at its `COMMIT`, in a
    /// deferred constraint trigger (the lease's own writes leave the payload alone and are not held).
    func installCommitHold() async throws {
        try await client.query(
            """
            CREATE FUNCTION \(unescaped: table)_hold() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_advisory_xact_lock(\(unescaped: String(key))); RETURN NULL; END $$
            """, logger: logger)
        try await client.query(
            """
            CREATE CONSTRAINT TRIGGER hold_commit AFTER UPDATE ON \(unescaped: table)
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.payload IS DISTINCT FROM OLD.payload)
            EXECUTE FUNCTION \(unescaped: table)_hold()
            """, logger: logger)
    }

    /// Removes what ``installCommitHold()`` made.
    func removeCommitHold() async throws {
        try await client.query("DROP FUNCTION IF EXISTS \(unescaped: table)_hold() CASCADE", logger: logger)
    }

    /// The statement that takes the lock.
    private var lock: PostgresQuery {
        switch kind {
        case .row: "SELECT 1 FROM \(unescaped: table) WHERE account = \(account) FOR UPDATE"
        case .table: "LOCK TABLE \(unescaped: table) IN SHARE MODE"
        case .commit: "SELECT pg_advisory_xact_lock(\(key))"
        }
    }
}
#endif
