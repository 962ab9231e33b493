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
import TokenRefresh

// The first session's pair, its rotation, another user's signed-in pair (RefreshLeaseTests' oldPair, stalePair and
// newerPair), and the signed-in session's next pair.
private let firstPair = oldPair
private let rotatedPair = stalePair
private let signedInPair = newerPair
private let nextPair = AuthToken(
    accessToken: "pg-fence-access-token-next", refreshToken: "pg-fence-refresh-token-next",
    receivedAt: Date(timeIntervalSince1970: 1_800_000_300), lifetime: 3600)

/// A holder's rotated pair that could not be stored at once, and sessions replaced (signed in, signed out) while it
/// is still unstored: no write of the old session lands after the new one.
@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct LeaseFenceTests {
    /// How another replica replaced the session while the holder's save was pending.
    enum Replacement: String, CaseIterable, CustomTestStringConvertible {
        case signIn, signOutThenSignIn
        var testDescription: String { rawValue }
    }

    /// The first replica's store, whose saves under a lease fail (the database out of its reach) while the flag is
    /// set; the signal fires when a save gone to the background has landed or been refused.
    func holderWhoseSavesFail(_ replicas: TestReplicas, label: String) -> (PostgresTokenStore, TestFlag, Signal) {
        let writesFail = TestFlag()
        writesFail.set()
        let settled = Signal()
        // The saves fail at once (the hook), so a save gives up when its 2-s budget is spent whatever the load; the
        // holder's other operations (its reads, its lease) get those 2 s too, far above a running server's answer.
        var configuration = PostgresTokenStore.Configuration(
            tableName: replicas.table, lockTimeout: .seconds(30), operationTimeout: .seconds(2))
        configuration.testHooks.failsFencedWrite = { writesFail.isSet }
        let store = PostgresTokenStore(
            client: replicas.first, configuration: configuration,
            logger: signalingLogger(label, on: "background save was refused", "background save landed", signal: settled)
        )
        return (store, writesFail, settled)
    }

    /// The client's own later retry of a pair it holds unstored is made under the lease the refresh held, so a
    /// sign-in elsewhere (which ends that lease) makes it a conflict, never a write over the new session.
    @Test(.timeLimit(.minutes(1)))
    func aClientsLaterRetryOfItsUnstoredPairNeverLandsOverASessionSignedInElsewhere() async throws {
        try await withReplicas { replicas in
            let clock = ManualClock()
            let server = SimulatedTokenServer(
                configuration: .init(rotatesRefreshTokens: true, detectsReuse: true, graceWindow: 0),
                now: clock.wallClock)
            let endpoint = TokenEndpoint(
                url: URL(string: "https://127.0.0.1/oauth/token")!, client: OAuthClient(id: "app"),
                transport: server, now: clock.wallClock)
            let (holderStore, writesFail, settled) = holderWhoseSavesFail(replicas, label: "holder-store")
            let otherStore = PostgresTokenStore(
                client: replicas.second, configuration: .init(tableName: replicas.table, lockTimeout: .seconds(30)))
            let initial = await server.issueSession(userID: "user-1", receivedAt: clock.date.addingTimeInterval(-7200))
            // Stored through the other replica, whose operations may take longer (the first one creates the table).
            try await otherStore.save(
                StoredSession(token: initial, userID: "user-1", generation: 1), account: "alice", condition: .always)
            let holder = TokenRefreshClient(
                strategy: OAuthRefreshStrategy(endpoint: endpoint), store: holderStore,
                configuration: .init(account: "alice"), clock: clock, now: clock.wallClock)

            // The worst instant: the lease is held, the server has rotated, and the new pair's save cannot reach the
            // database. The client answers with the pair it keeps in memory.
            let refreshed = try await holder.validToken()
            #expect(await server.refreshCount == 1)
            #expect(AuthToken.fingerprint(refreshed.accessToken) != AuthToken.fingerprint(initial.accessToken))
            #expect(await stored(otherStore, account: "alice")?.generation == 1)
            // Another replica, whose client had read nothing, signs another user in (outside any lease): its session
            // is generation 1 as well.
            let signedIn = StoredSession(token: signedInPair, userID: "user-2", generation: 1)
            try await otherStore.save(signedIn, account: "alice", condition: .always)
            // The database is back for the holder; its background save finds the lease ended.
            writesFail.clear()
            await settled.wait()
            // Later, a request makes the client retry the pair it still holds unstored.
            clock.advance(by: .seconds(5))
            _ = try? await holder.validToken()
            let saved = await stored(otherStore, account: "alice")
            #expect(saved == signedIn, "the holder's old-session pair was written over the session signed in since")
            #expect(await server.reuseDetections == 0)
        }
    }

    /// A holder whose save is pending and whose body reads again after another replica replaced the session takes the
    /// lease again, for the new session: the pending save of the old session's pair must not land under it, also
    /// when a sign-out deleted the row and with it the fencing numbers (the new row counts from 0 again).
    @Test(.timeLimit(.minutes(1)), arguments: Replacement.allCases)
    func aPendingSaveOfTheOldSessionNeverLandsUnderTheLeaseTakenAgainForTheNewOne(
        replacement: Replacement
    ) async throws {
        try await withReplicas { replicas in
            let (holder, writesFail, settled) = holderWhoseSavesFail(replicas, label: "pending-holder")
            let other = PostgresTokenStore(
                client: replicas.second, configuration: .init(tableName: replicas.table, lockTimeout: .seconds(30)))
            // Stored through the other replica, whose operations may take longer (the first one creates the table).
            try await other.save(
                StoredSession(token: firstPair, userID: "user-1", generation: 1), account: "alice", condition: .always)
            let signedIn = StoredSession(token: signedInPair, userID: "user-2", generation: 1)
            let reread = try await holder.withExclusiveAccess(account: "alice") {
                // The server has rotated; the new pair's save cannot reach the database and goes on in the background.
                let saveFailure = await failure { () async throws(PersistenceError) in
                    try await holder.save(
                        StoredSession(token: rotatedPair, userID: "user-1", generation: 2), account: "alice",
                        condition: .generation(1))
                }
                #expect(saveFailure == .writeFailed)
                // Another replica, whose client had read nothing, replaces the session outside any lease.
                if replacement == .signOutThenSignIn {
                    try await other.remove(account: "alice", condition: .always)
                }
                try await other.save(signedIn, account: "alice", condition: .always)
                // The body reads again: the lease, ended by that write, is taken again for the new session.
                let read = await holder.load(account: "alice")
                // The database is back for the holder: the pending save of the old session's pair is tried again.
                writesFail.clear()
                await settled.wait()
                if case .found(let session) = read { return session.userID }
                return nil
            }
            #expect(reread == "user-2")
            let saved = await stored(other, account: "alice")
            #expect(saved == signedIn, "the old session's pending pair landed over the session that replaced it")
        }
    }

    /// A sign-out deletes the row, and the sign-in after it makes a new one whose fencing numbers start again: the
    /// next replica's lease has the number the old holder's lease had. The old holder's save is still refused.
    @Test(.timeLimit(.minutes(1)))
    func aHolderCannotWriteUnderTheNextReplicasLeaseAfterASignOutAndSignInReusedItsFencingNumber() async throws {
        try await withReplicas(3) { replicas in
            let configuration = PostgresTokenStore.Configuration(tableName: replicas.table, lockTimeout: .seconds(30))
            let holder = PostgresTokenStore(client: replicas.first, configuration: configuration)
            let other = PostgresTokenStore(client: replicas.second, configuration: configuration)
            let next = PostgresTokenStore(client: replicas.third, configuration: configuration)
            try await holder.save(
                StoredSession(token: firstPair, userID: "user-1", generation: 1), account: "alice", condition: .always)
            let signedIn = StoredSession(token: signedInPair, userID: "user-2", generation: 1)
            let taken = Signal()
            let holderWrote = Signal()
            let (holderWrite, nextTask) = try await holder.withExclusiveAccess(account: "alice") {
                let (_, holderFence) = try await leaseColumns(
                    table: replicas.table, account: "alice", client: replicas.second)
                // Another replica signs the user out (the row goes) and another user in (a new row, fence 0).
                try await other.remove(account: "alice", condition: .always)
                try await other.save(signedIn, account: "alice", condition: .always)
                // The holder's advisory lock, only a hint, goes too: the next replica takes the new session's lease.
                _ = try await terminateBackends(
                    holding: holder.advisoryLockKey(account: "alice"), admin: replicas.second)
                let task = Task {
                    try await next.withExclusiveAccess(account: "alice") {
                        taken.fire()
                        await holderWrote.wait()
                        try await next.save(
                            StoredSession(token: nextPair, userID: "user-2", generation: 2), account: "alice",
                            condition: .generation(1))
                    }
                }
                await taken.wait()
                let (_, nextFence) = try await leaseColumns(
                    table: replicas.table, account: "alice", client: replicas.second)
                #expect(nextFence == holderFence, "the new row's fencing numbers did not start again")
                let result = await failure { () async throws(PersistenceError) in
                    try await holder.save(
                        StoredSession(token: rotatedPair, userID: "user-1", generation: 2), account: "alice",
                        condition: .generation(1))
                }
                holderWrote.fire()
                return (result, task)
            }
            #expect(holderWrite == .conflict)
            try await nextTask.value
            let saved = await stored(next, account: "alice")
            #expect(saved?.token == nextPair)
            #expect(saved?.userID == "user-2")
        }
    }
}
#endif
