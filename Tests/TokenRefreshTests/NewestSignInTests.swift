import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// A sign-in whose save failed keeps its session in memory only, while the store still holds the session it replaced:
/// the newest sign-in wins. A read of the store that finds the replaced session (as it was, or refreshed since by
/// another process) neither ends the new session nor brings the replaced one back.
@Suite(.logLeakCheck()) struct NewestSignInTests {
    /// A store holding alice's session, a client that restored it, and bob signed in over it with a save that failed.
    struct Setup {
        let clock = ManualClock()
        let server: SimulatedTokenServer
        let store = FlakyStore()
        let endpoint: TokenEndpoint
        let client: TokenRefreshClient
        let alice: StoredSession
        let bob: AuthToken

        init() async throws {
            server = SimulatedTokenServer(now: clock.wallClock)
            endpoint = TokenEndpoint(
                url: tokenURL, client: OAuthClient(id: "app"), transport: server, now: clock.wallClock)
            alice = StoredSession(
                token: await server.issueSession(userID: "alice"), userID: "alice", generation: 1,
                sessionID: StoredSession.newSessionID())
            try await store.save(alice, account: account, condition: .always)
            client = Self.process(endpoint: endpoint, store: store, clock: clock)
            #expect(await client.restoreSession() == .signedIn(userID: "alice"))

            bob = await server.issueSession(userID: "bob")
            await store.setFailSaves(true)
            try await client.signIn(with: bob, userID: "bob")  // kept in memory only
            await store.setFailSaves(false)
            #expect(client.currentState == .signedIn(userID: "bob"))
            #expect(await stored()?.userID == "alice", "the store still holds the session bob's sign-in replaced")
        }

        /// A client over `store`: a process of the app (memory-only sessions allowed).
        static func process(endpoint: TokenEndpoint, store: any TokenStore, clock: ManualClock) -> TokenRefreshClient {
            TokenRefreshClient(
                strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store,
                configuration: .init(persistRetryInterval: .seconds(30), allowsMemoryOnlySessions: true), clock: clock,
                now: clock.wallClock)
        }

        func stored() async -> StoredSession? {
            if case .found(let session) = await store.load(account: account) { return session }
            return nil
        }
    }

    /// What the store holds of alice's session when bob's session is refreshed.
    enum ReplacedSession: String, CaseIterable, Sendable {
        /// As it was when bob signed in.
        case asItWas
        /// Refreshed since by another process that still holds it.
        case refreshedElsewhere
    }

    /// The server refuses bob's access token (a 401): the refresh re-reads the store first, finds alice's session
    /// there, and refreshes bob's all the same; its write replaces alice's, as bob's sign-in meant to.
    @Test(arguments: ReplacedSession.allCases)
    func aRefreshThatFindsTheSessionTheSignInReplacedKeepsTheNewSession(_ replaced: ReplacedSession) async throws {
        let setup = try await Setup()
        if replaced == .refreshedElsewhere {
            let other = Setup.process(endpoint: setup.endpoint, store: setup.store, clock: setup.clock)
            #expect(await other.restoreSession() == .signedIn(userID: "alice"))
            _ = try await other.refreshToken(afterRejectionOf: setup.alice.token.accessToken)
            #expect(await setup.stored().map(\.generation) == 2)
        }
        let client = setup.client
        var refreshed: AuthToken?
        let error = await refreshError {
            refreshed = try await client.refreshToken(afterRejectionOf: setup.bob.accessToken)
        }
        #expect(error == nil, "the refresh failed")
        #expect(client.currentState == .signedIn(userID: "bob"))
        let token = try #require(refreshed)
        #expect(token.accessToken != setup.bob.accessToken)
        #expect(client.currentToken == token)
        let stored = await setup.stored()
        #expect(stored?.userID == "bob", "the store kept the replaced session: \(String(describing: stored?.userID))")
        #expect(stored?.token.refreshToken == token.refreshToken)
    }

    /// Another process refreshes alice's session; bob's session, held in memory only, is saved again after the retry
    /// interval: the save replaces alice's session at its new generation, and bob's session is kept.
    @Test func aPendingSaveOfTheNewSessionReplacesTheSessionItReplacedRefreshedElsewhere() async throws {
        let setup = try await Setup()
        let other = Setup.process(endpoint: setup.endpoint, store: setup.store, clock: setup.clock)
        #expect(await other.restoreSession() == .signedIn(userID: "alice"))
        _ = try await other.refreshToken(afterRejectionOf: setup.alice.token.accessToken)
        #expect(await setup.stored().map(\.generation) == 2)

        setup.clock.advance(by: .seconds(31))
        let client = setup.client
        #expect(await refreshError { try await client.refreshToken(afterRejectionOf: setup.bob.accessToken) } == nil)
        #expect(client.currentState == .signedIn(userID: "bob"))
        let stored = await setup.stored()
        #expect(stored?.userID == "bob", "the store kept the replaced session: \(String(describing: stored?.userID))")
        #expect(stored?.token.refreshToken == client.currentToken?.refreshToken)
    }
}
