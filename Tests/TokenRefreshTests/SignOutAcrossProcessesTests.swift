import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// Two processes sharing one file store, each played by a client over its own `FileTokenStore` on one directory: a
/// sign-out removes the session it ended (at whatever generation another process refreshed it to); when its removal is
/// made again later, never a session another process signed in since.
@Suite(.logLeakCheck()) struct SignOutAcrossProcessesTests {
    /// A directory, a clock, a token server and the processes over them.
    struct World {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sign-out-across-processes-\(UUID().uuidString)", isDirectory: true)
        let clock = ManualClock()
        let server: SimulatedTokenServer

        init() { server = SimulatedTokenServer(now: clock.wallClock) }

        /// One more process: a client over its own file store on the shared directory, whose every file-system step
        /// fails while `failing` is set.
        /// Where the processes keep their pending sign-outs.
        var signOuts: URL { directory.appendingPathComponent("sign-outs", isDirectory: true) }

        func launch(
            failing: Locked<Bool> = Locked(false), allowsMemoryOnlySessions: Bool = false
        ) -> (client: TokenRefreshClient, store: FileTokenStore) {
            var storeConfiguration = FileTokenStore.Configuration()
            storeConfiguration.faults = FileFaults { _ in failing.withLock { $0 } ? EIO : nil }
            let store = FileTokenStore(directory: directory, configuration: storeConfiguration)
            let client = OAuthClient(id: SimulatedTokenServer.Configuration().clientID)
            let endpoint = TokenEndpoint(url: tokenURL, client: client, transport: server, now: clock.wallClock)
            let process = TokenRefreshClient(
                strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store,
                configuration: .init(
                    persistRetryInterval: .seconds(30), allowsMemoryOnlySessions: allowsMemoryOnlySessions,
                    pendingSignOuts: PendingSignOuts(store: FileSignOutQueueStore(directory: signOuts))),
                clock: clock, now: clock.wallClock)
            return (process, store)
        }

        /// A new session of `userID` from the server.
        func session(of userID: String) async -> AuthToken { await server.issueSession(userID: userID) }

        /// The session stored now, or `nil`.
        func stored(in store: FileTokenStore) async -> StoredSession? {
            if case .found(let session) = await store.load(account: account) { return session }
            return nil
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    /// Process A signs alice out while its store fails, so the removal is queued; process B then signs bob in. A's
    /// removal, made again at its next call after the retry interval, is limited to alice's session: bob's stays.
    /// `memoryOnly`: A's store failed already at the sign-in, so A held alice in memory only (it knew nothing stored).
    @Test(arguments: [false, true])
    func aSignOutsRemovalMadeAgainLeavesASessionAnotherProcessSignedInSince(memoryOnly: Bool) async throws {
        let world = World()
        defer { world.remove() }
        let failing = Locked(memoryOnly)
        let (first, _) = world.launch(failing: failing, allowsMemoryOnlySessions: memoryOnly)
        let (second, secondStore) = world.launch()
        try await first.signIn(with: await world.session(of: "alice"), userID: "alice")
        #expect(first.currentState == .signedIn(userID: "alice"))

        failing.withLock { $0 = true }
        let signOut = await refreshError { try await first.signOut() }
        #expect(signOut == .storageUnavailable, "the removal failed and is queued")
        failing.withLock { $0 = false }
        try await second.signIn(with: await world.session(of: "bob"), userID: "bob")
        let bob = try #require(await world.stored(in: secondStore))

        world.clock.advance(by: .seconds(31))
        _ = try? await first.validToken()  // the call that makes the queued removal again
        let stored = await world.stored(in: secondStore)
        #expect(stored?.userID == "bob", "bob's session was removed by alice's sign-out")
        #expect(stored?.sessionID == bob.sessionID)
        #expect(try await second.validToken().accessToken == bob.token.accessToken)
    }

    /// Process B signs alice out and bob in while process A still holds alice; A's sign-out, made after that, signs the
    /// account out: it removes what the store holds when it is made, bob's session too. (Only a removal made again
    /// later, after a failure, is limited to the session it ended: see above.)
    @Test func aSignOutMadeNowRemovesWhatTheStoreHoldsNow() async throws {
        let world = World()
        defer { world.remove() }
        let (first, firstStore) = world.launch()
        let (second, _) = world.launch()
        try await first.signIn(with: await world.session(of: "alice"), userID: "alice")
        #expect(await second.restoreSession().hasSession)
        try await second.signOut()
        try await second.signIn(with: await world.session(of: "bob"), userID: "bob")

        try await first.signOut()
        #expect(await world.stored(in: firstStore) == nil, "a session outlived a sign-out made after it was stored")
        #expect(first.currentState == .signedOut)
    }

    /// Process B refreshes alice's session after process A read it; A's sign-out removes it all the same (the same
    /// session at a later generation).
    @Test func aSignOutRemovesItsSessionAnotherProcessRefreshedSince() async throws {
        let world = World()
        defer { world.remove() }
        let (first, firstStore) = world.launch()
        let (second, _) = world.launch()
        try await first.signIn(with: await world.session(of: "alice"), userID: "alice")
        let signedIn = try #require(await world.stored(in: firstStore))
        #expect(await second.restoreSession().hasSession)
        _ = try await second.refreshToken(afterRejectionOf: second.validToken().accessToken)
        #expect(await world.stored(in: firstStore).map(\.generation) ?? 0 > signedIn.generation)

        try await first.signOut()
        #expect(await world.stored(in: firstStore) == nil, "the refreshed session outlived its sign-out")
    }

    /// Process A signs alice out while its store fails, and is killed before its removal is made again; process B
    /// refreshes alice meanwhile. At A's relaunch the removal A wrote down removes alice all the same (the same
    /// session at a later generation): the signed-out session is not restored.
    @Test func aSignOutLeftUnfinishedByAKilledProcessRemovesItsSessionRefreshedSinceAtTheRelaunch() async throws {
        let world = World()
        defer { world.remove() }
        let failing = Locked(false)
        let (first, firstStore) = world.launch(failing: failing)
        let (second, _) = world.launch()
        try await first.signIn(with: await world.session(of: "alice"), userID: "alice")
        #expect(await second.restoreSession().hasSession)

        failing.withLock { $0 = true }
        #expect(await refreshError { try await first.signOut() } == .storageUnavailable)
        failing.withLock { $0 = false }
        _ = try await second.refreshToken(afterRejectionOf: second.validToken().accessToken)
        #expect(await world.stored(in: firstStore)?.generation ?? 0 > 1)

        let (relaunched, _) = world.launch()  // the first process, killed and launched again
        #expect(await relaunched.restoreSession() == .signedOut, "the signed-out session was restored")
        #expect(await world.stored(in: firstStore) == nil)
    }

    /// The machine's side: a sign-out's first removal clears what is stored; a removal that finds another session
    /// stored is over (the sign-out succeeds, nothing is queued), and one that failed is queued for the session it
    /// ended only.
    @Test func aSignOutsRemovalMadeAgainRemovesTheSessionItKnowsStoredAndNothingElse() throws {
        var machine = SessionMachineTests.machine(configuration: .init(persistRetryInterval: .seconds(5)))
        _ = machine.signingOut()
        #expect(machine.signOutWriteTurn(epoch: machine.epoch).store == .remove(.always))
        #expect(throws: Never.self) {
            try machine.signOutRemovalFinished(.conflict, epoch: machine.epoch, elapsed: .zero).get()
        }
        #expect(machine.pendingRemovals.isEmpty)
        _ = machine.signOutRemovalFinished(.unavailable, epoch: machine.epoch, elapsed: .zero)
        #expect(machine.pendingRemovals == [.sessionAtAnyGeneration(nil)])
    }
}
