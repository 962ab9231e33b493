// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
import Foundation
import Persistence
import PostgresNIO
import Testing
import TokenKitLogCheck
import TokenKitPostgres
import TokenKitTesting

private let counterToken = AuthToken(
    accessToken: "pg-lock-access-token-counter", refreshToken: "pg-lock-refresh-token-counter",
    receivedAt: Date(timeIntervalSince1970: 1_800_000_000), lifetime: 3600)

@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct AdvisoryLockTests {
    /// Runs `body` with two stores over one table, each with a pool of its own (two replicas); the second one on
    /// `secondReplicasClock` when given.
    func withReplicas(
        lockTimeout: Duration? = .seconds(30),
        secondReplicasClock: ManualClock? = nil,
        secondReplicasAttempts: (@Sendable (LockAttemptOutcome) -> Void)? = nil,
        _ body: (PostgresTokenStore, PostgresTokenStore, PostgresClient) async throws -> Void
    ) async throws {
        let table = uniqueTable()
        try await withClient { first in
            try await withClient { second in
                let configuration = PostgresTokenStore.Configuration(tableName: table, lockTimeout: lockTimeout)
                var observed = configuration
                observed.testHooks.lockAttempt = secondReplicasAttempts
                let one = PostgresTokenStore(client: first, configuration: configuration)
                let two =
                    if let secondReplicasClock {
                        PostgresTokenStore(client: second, configuration: observed, clock: secondReplicasClock)
                    } else {
                        PostgresTokenStore(client: second, configuration: observed)
                    }
                try await one.migrate()
                try await droppingTable(table, client: first) { try await body(one, two, first) }
            }
        }
    }

    @Test func theLockSerialisesReadIncrementWriteAcrossPools() async throws {
        try await withReplicas { one, two, _ in
            try await one.save(StoredSession(token: counterToken, generation: 0), account: "alice", condition: .absent)
            let perReplica = 15
            try await withThrowingTaskGroup(of: Void.self) { group in
                for store in [one, two] {
                    for _ in 0..<perReplica {
                        group.addTask {
                            try await store.withExclusiveAccess(account: "alice") {
                                guard case .found(let current) = await store.load(account: "alice") else {
                                    throw PersistenceError.readFailed
                                }
                                await Task.yield()
                                // Unconditional on purpose: only the lock keeps updates from being lost.
                                try await store.save(
                                    StoredSession(token: counterToken, generation: current.generation + 1),
                                    account: "alice", condition: .always)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(await stored(one, account: "alice")?.generation == UInt64(2 * perReplica))
        }
    }

    /// The wait is measured on the waiter's clock, which moves only between its attempts, while it pauses: it gives
    /// up when its lock timeout has passed on that clock, however long a loaded machine takes over each attempt.
    @Test(.timeLimit(.minutes(1))) func aWaiterGivesUpAfterTheLockTimeout() async throws {
        let clock = ManualClock()
        let attempts = AsyncStream<LockAttemptOutcome>.makeStream()
        try await withReplicas(
            lockTimeout: .milliseconds(300), secondReplicasClock: clock,
            secondReplicasAttempts: { attempts.continuation.yield($0) }
        ) { one, two, _ in
            let (holder, release) = await holdAlicesLock(one)
            let started = clock.now
            let ended = TestFlag()
            let waiter = Task {
                defer { ended.set() }
                return try await two.withExclusiveAccess(account: "alice") { "taken" }
            }
            var outcomes = attempts.stream.makeAsyncIterator()
            var waited = Duration.zero
            while await outcomes.next() != nil {
                // After each attempt the waiter pauses on its clock, or gives up.
                while !ended.isSet && clock.sleeperCount == 0 { await Task.yield() }
                waited = started.duration(to: clock.now)
                if ended.isSet { break }
                try #require(waited < .seconds(5), "still waiting after \(waited) of its clock")
                clock.advance(by: .milliseconds(20))  // its retry interval: its longest pause
            }
            await #expect(throws: PersistenceError.lockTimedOut) { try await waiter.value }
            #expect(waited == .milliseconds(300), "gave up after \(waited) of its clock")
            // Another account is not blocked.
            let bob = try await two.withExclusiveAccess(account: "bob") { "bob" }
            #expect(bob == "bob")
            release.yield()
            let held = try await holder.value
            #expect(held == "held")
            let taken = try await two.withExclusiveAccess(account: "alice") { "taken" }
            #expect(taken == "taken")
        }
    }

    /// A holder whose lease is live (a refresh at work, its heartbeat renewing the lease) is waited for past the
    /// lock timeout, up to the live-holder timeout: a token endpoint slower than the lock timeout fails no waiter.
    /// The holder lets go only once the waiter has kept asking for three times its lock timeout.
    @Test(.timeLimit(.minutes(1))) func aHolderAtWorkIsWaitedForPastTheLockTimeout() async throws {
        try await waiterOfAHolderAtWork(lockTimeout: .milliseconds(100)) { _, _ in }
    }

    /// A holder seen at work that stops working (its lease given back, its lock not yet: the moment a refresh ends)
    /// is waited for the lock timeout from then, not from the start of the wait: a waiter that has waited past its
    /// lock timeout for the refresh does not give up an instant before the lock is free. The test gives the lease
    /// back itself while the holder keeps the lock (the next attempt finds a holder not at work), then lets the
    /// holder go.
    @Test(.timeLimit(.minutes(1))) func aHolderThatStopsWorkingIsWaitedForTheLockTimeoutFromThen() async throws {
        try await waiterOfAHolderAtWork(lockTimeout: .milliseconds(400)) { table, admin in
            try await admin.query("UPDATE \(unescaped: table) SET lease_owner = NULL, lease_expires_at = NULL")
        }
    }

    /// A holder takes alice's lock and lease and keeps them while another replica waits, at work for three times
    /// the waiter's lock timeout; then `beforeRelease` runs (given the table and an admin client) and the waiter
    /// asks once more; the waiter must still be waiting, and gets the lock once the holder lets go.
    private func waiterOfAHolderAtWork(
        lockTimeout: Duration, beforeRelease: (String, PostgresClient) async throws -> Void
    ) async throws {
        let attempts = AsyncStream<LockAttemptOutcome>.makeStream()
        try await withReplicas(
            lockTimeout: lockTimeout, secondReplicasAttempts: { attempts.continuation.yield($0) }
        ) { one, two, admin in
            // A row, so that the holder takes the account's lease with the lock.
            try await one.save(StoredSession(token: counterToken, generation: 1), account: "alice", condition: .always)
            let (holder, release) = await holdAlicesLock(one)
            let started = ContinuousClock.now
            let ended = TestFlag()
            let waiter = Task {
                defer {
                    ended.set()
                    attempts.continuation.finish()
                }
                return try await two.withExclusiveAccess(account: "alice") { "taken" }
            }
            for await outcome in attempts.stream where outcome == .busy {
                if started.duration(to: .now) >= lockTimeout * 3 { break }
            }
            try await beforeRelease(one.configuration.tableName, admin)
            for await outcome in attempts.stream where outcome == .busy { break }
            #expect(!ended.isSet, "the waiter gave up before the holder let go")
            release.yield()
            #expect(try await holder.value == "held")
            #expect(try await waiter.value == "taken")
        }
    }

    /// Takes alice's lock (and lease, when her row exists) through `store` and keeps it until `release` yields;
    /// returns once it is held, with the holder's task (its value is "held").
    private func holdAlicesLock(
        _ store: PostgresTokenStore
    ) async -> (holder: Task<String, any Error>, release: AsyncStream<Void>.Continuation) {
        let holding = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await store.withExclusiveAccess(account: "alice") {
                holding.continuation.yield()
                for await _ in release.stream { break }
                return "held"
            }
        }
        for await _ in holding.stream { break }
        return (holder, release.continuation)
    }

    @Test func aNestedCallRunsUnderTheLockAlreadyHeld() async throws {
        try await withReplicas(lockTimeout: .milliseconds(500)) { one, _, _ in
            let value = try await one.withExclusiveAccess(account: "alice") {
                try await one.withExclusiveAccess(account: "alice") { 42 }
            }
            #expect(value == 42)
        }
    }

    @Test func aDroppedConnectionReleasesTheLock() async throws {
        let refused = Signal()
        try await withReplicas(secondReplicasAttempts: { if $0 == .busy { refused.fire() } }) { one, two, admin in
            let (holder, finish) = await holdAlicesLock(one)
            let taken = TestFlag()
            let waiter = Task {
                try await two.withExclusiveAccess(account: "alice") {
                    taken.set()
                    return "waiter"
                }
            }
            // The waiter has asked and been refused at least once.
            await refused.wait()
            #expect(!taken.isSet)
            // What a SIGKILL of the holder does to its connection: the server ends the backend holding the lock.
            let terminated = try await admin.query(
                """
                SELECT pg_terminate_backend(pid) FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND objsubid = 1
                    AND ((classid::bigint << 32) | objid::bigint) = \(one.advisoryLockKey(account: "alice"))
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """)
            var killed = 0
            for try await _ in terminated { killed += 1 }
            #expect(killed == 1)
            let waiterResult = try await waiter.value
            #expect(waiterResult == "waiter")
            finish.yield()
            let holderResult = try await holder.value
            #expect(holderResult == "held")
        }
    }
}
#endif
