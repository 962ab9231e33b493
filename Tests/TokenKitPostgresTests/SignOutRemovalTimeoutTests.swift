// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
import Foundation
import Persistence
import PostgresNIO
import Synchronization
import Testing
import TokenKitLogCheck
import TokenKitPostgres
import TokenKitTesting
import TokenRefresh

/// A sign-out whose removal is held up past the operation timeout: the client is told the sign-out failed, the user
/// signs in again, and the removal must never land after that and delete the new session.
@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct SignOutRemovalTimeoutTests {
    /// The removal is held at the worst instant: its transaction has begun and it has not read the row yet, so it
    /// holds nothing the new sign-in's save needs (as a removal whose statement is still on its way to the server).
    /// It waits in the database itself (on a lock of the test's own) until the test lets it go, after the client was
    /// told the sign-out failed and has signed the user in again. A removal that goes on after its task was
    /// cancelled reads the row only when the row's whole answer is in before it asks for it (PostgresNIO ends a
    /// cancelled task's unfinished row sequence with `CancellationError`, and the removal then rolls back), so the
    /// instant is played many times: an unfenced removal lands in about one in ten. (About 3 s alone; the time
    /// limit is a guard against a hang, with room for a loaded machine and the thread sanitizer.)
    @Test(.timeLimit(.minutes(5)))
    func aSignOutReportedFailedAfterItsRemovalTimedOutNeverDeletesALaterSignIn() async throws {
        try await withReplicas { replicas in
            let holdNextRemoval = Mutex<DatabaseLock?>(nil)
            var configuration = PostgresTokenStore.Configuration(
                tableName: replicas.table, lockTimeout: .seconds(30), operationTimeout: .seconds(2))
            configuration.testHooks.removalAttempt = { connection in
                guard
                    let held = holdNextRemoval.withLock({ held in
                        defer { held = nil }; return held
                    })
                else { return }
                await held.takeOnce()
                try await held.waitForIt(on: connection)
            }
            let clock = ManualClock()
            let store = PostgresTokenStore(client: replicas.first, configuration: configuration, clock: clock)
            let other = PostgresTokenStore(
                client: replicas.second, configuration: .init(tableName: replicas.table, lockTimeout: .seconds(30)))
            let client = alicesClient(over: store)

            for round in 1...80 {
                try await client.signIn(with: oldPair, userID: "user-1")
                let held = DatabaseLock(.commit, client: replicas.second, table: replicas.table, account: "alice")
                holdNextRemoval.withLock { $0 = held }
                let signedOut = TestFlag()
                let signOut = Task {
                    defer { signedOut.set() }
                    try await client.signOut()
                }
                try await held.waitUntilWaitedFor()
                // The removal waits in the database; its operation timeout passes on the store's clock.
                while !signedOut.isSet {
                    if clock.sleeperCount > 0 { clock.advance(by: .milliseconds(500)) } else { await Task.yield() }
                }
                let error = await #expect(throws: TokenRefreshError.self, "the removal was held past its time") {
                    try await signOut.value
                }
                #expect(error == .storageUnavailable)

                // The user signs in again, and the sign-in's session is stored.
                try await client.signIn(with: newerPair, userID: "user-2")
                #expect(await stored(other, account: "alice")?.userID == "user-2", "the sign-in was not stored")
                // Now the removal goes on: it has ended, committed or rolled back, when this returns.
                try await held.releaseAndWaitForQueuedWrites()
                let kept = await stored(other, account: "alice")
                try #require(
                    kept?.userID == "user-2",
                    "round \(round): the sign-out reported failed deleted the later sign-in's session")
                #expect(client.currentState == .signedIn(userID: "user-2"))
            }
        }
    }
}
#endif
