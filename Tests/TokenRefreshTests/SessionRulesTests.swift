import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

@Suite(.logLeakCheck()) struct SessionRulesTests {
    @Test func aStaleRejectionReturnsTheCurrentTokenWithoutANetworkCall() async throws {
        let rig = try await Rig.make()
        let current = try await rig.client.validToken()  // the session's first token expired: one refresh
        let requests = await rig.server.tokenRequestCount
        // A request that carried the session's older token was refused: it is retried with the current one.
        let retried = try await rig.client.refreshToken(afterRejectionOf: rig.initial.accessToken)
        #expect(retried == current)
        #expect(await rig.server.tokenRequestCount == requests)
    }

    /// The seed's `refreshToken(_:)` with a refresh token the session never held (another user's, saved by the app):
    /// that token's pair, one refresh for every concurrent caller, and a late caller with the consumed token gets the
    /// same pair instead of presenting it again (which the server would take for reuse). The session is untouched.
    @Test func aRefreshTokenTheSessionNeverHeldIsRefreshedOnItsOwnOnce() async throws {
        let rig = try await Rig.make(expired: false)
        let held = try await rig.client.validToken()
        let other = await rig.server.issueSession(userID: "user-2")
        let otherRefresh = try #require(other.refreshToken)
        let client = rig.client
        let answers = try await withThrowingTaskGroup(of: AuthToken.self) { group in
            for _ in 0..<5 { group.addTask { try await client.refreshToken(otherRefresh) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let first = try #require(answers.first)
        #expect(answers.allSatisfy { $0 == first })
        #expect(first.parseUserIdFromJWT() == "user-2")
        #expect(first.refreshToken != otherRefresh)
        #expect(try await client.refreshToken(otherRefresh) == first, "a late caller gets the same pair")
        #expect(await rig.server.refreshCount == 1)
        #expect(await rig.server.reuseDetections == 0)
        #expect(client.currentToken == held, "the session is untouched")
        #expect(await rig.stored()?.token == held)
    }

    @Test func aRejectionOfTheCurrentTokenRefreshesOnce() async throws {
        let rig = try await Rig.make(expired: false)
        let current = try await rig.client.validToken()
        let client = rig.client
        async let first = client.refreshToken(afterRejectionOf: current.accessToken)
        async let second = client.refreshToken(afterRejectionOf: current.accessToken)
        let (a, b) = try await (first, second)
        #expect(a != current)
        #expect(a == b)
        #expect(await rig.server.refreshCount == 1)
    }

    @Test func theSeedFormRefreshesWithTheSessionsRefreshToken() async throws {
        let rig = try await Rig.make(expired: false)
        let refreshed = try await rig.client.refreshToken(rig.initial.refreshToken!)
        #expect(refreshed != rig.initial)
        #expect(await rig.server.presentedRefreshTokens == [rig.initial.refreshToken!])
        // A refresh token that is no longer the session's is stale: no second refresh.
        let again = try await rig.client.refreshToken(rig.initial.refreshToken!)
        #expect(again == refreshed)
        #expect(await rig.server.refreshCount == 1)
    }

    @Test func theSeedFormStartsASessionFromABareRefreshToken() async throws {
        let rig = try await Rig.make(expired: false)
        let store = InMemoryTokenStore()
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: rig.endpoint), store: store, clock: rig.clock,
            now: rig.clock.wallClock)
        let token = try await client.refreshToken(rig.initial.refreshToken!)
        #expect(client.currentState == .signedIn(userID: "user-1"))
        guard case .found(let stored) = await store.load(account: account) else {
            Issue.record("no session stored")
            return
        }
        #expect(stored.token == token)
    }

    @Test func aNewerPairSavedByAnotherProcessIsAdoptedInsteadOfRefreshing() async throws {
        let rig = try await Rig.make()
        // The stored access token has expired: the session reads expired until it is renewed.
        #expect(await rig.client.restoreSession() == .expired(lastUserID: "user-1"))
        // Another process refreshed and saved a newer pair.
        let newer = await rig.server.issueSession(userID: "user-1", receivedAt: rig.clock.date)
        try await rig.store.save(
            StoredSession(token: newer, userID: "user-1", generation: 2), account: account, condition: .generation(1))
        let token = try await rig.client.validToken()
        #expect(token == newer)
        #expect(rig.client.currentState == .signedIn(userID: "user-1"))
        #expect(await rig.server.tokenRequestCount == 0)
    }

    @Test func theRotatedPairIsPersistedBeforeAnyWaiterSeesIt() async throws {
        let rig = try await Rig.make()
        let token = try await rig.client.validToken()
        let stored = try #require(await rig.stored())
        #expect(stored.token == token)
        #expect(stored.generation == 2)
        #expect(stored.token.refreshToken != rig.initial.refreshToken)
        #expect(await rig.server.isActive(refreshToken: token.refreshToken!))
    }

    @Test func noWaiterNorSnapshotSeesTheRotatedPairBeforeItIsStored() async throws {
        let store = FlakyStore()
        let gate = HoldGate()
        let rig = try await Rig.make(store: store)
        await store.setSaveGate(gate)
        let client = rig.client
        let caller = Task { try await client.validToken() }
        await gate.waitForArrivals(1)
        // The server has rotated; the write is pending: the waiter still waits, the snapshot shows the old pair.
        #expect(await rig.server.refreshCount == 1)
        #expect(client.refreshWaiterCount == 1)
        #expect(client.currentToken == rig.initial)
        gate.open()
        let token = try await caller.value
        #expect(await rig.stored()?.token == token)
        #expect(client.currentToken == token)
    }

    @Test func aResponseWithoutRefreshTokenKeepsTheOldOne() async throws {
        let rig = try await Rig.make(
            server: .init(rotatesRefreshTokens: false, omitsRefreshTokenInRefreshResponse: true))
        let token = try await rig.client.validToken()
        #expect(token.accessToken != rig.initial.accessToken)
        #expect(token.refreshToken == rig.initial.refreshToken)
        #expect(await rig.stored()?.token.refreshToken == rig.initial.refreshToken)
    }

    @Test func aResponseLostAfterTheServerRotatedIsRecoveredWithinTheGraceWindow() async throws {
        let configuration = TokenRefreshClient.Configuration(
            refreshTimeout: nil, backoff: .init(retries: 1, initialDelay: .seconds(1)))
        let rig = try await Rig.make(server: .init(graceWindow: 30), configuration: configuration)
        await rig.server.enqueue(.responseLostAfterRotation)
        let client = rig.client
        let caller = Task { try await client.validToken() }
        await rig.clock.waitForSleepers(count: 1)
        rig.clock.advance(by: .seconds(1))
        let token = try await caller.value
        #expect(await rig.server.graceRecoveries == 1)
        #expect(await rig.server.reuseDetections == 0)
        #expect(await rig.server.isActive(refreshToken: token.refreshToken!))
        #expect(await rig.stored()?.token == token)
    }

    @Test func withoutAGraceWindowALostResponseEndsTheSessionByReuseDetection() async throws {
        let configuration = TokenRefreshClient.Configuration(
            refreshTimeout: nil, backoff: .init(retries: 1, initialDelay: .seconds(1)))
        let rig = try await Rig.make(configuration: configuration)
        await rig.server.enqueue(.responseLostAfterRotation)
        let client = rig.client
        let caller = Task { try await client.validToken() }
        await rig.clock.waitForSleepers(count: 1)
        rig.clock.advance(by: .seconds(1))
        #expect(await refreshError { try await caller.value } == .refreshTokenRejected)
        #expect(await rig.server.reuseDetections == 1)
        #expect(await rig.server.isFamilyRevoked(refreshToken: rig.initial.refreshToken!))
        #expect(await rig.stored() == nil)
    }

    @Test func signOutDuringARefreshLeavesTheStoreEmpty() async throws {
        let gate = HoldGate()
        let (rig, caller) = try await Rig.withLateRefresh(behind: gate)
        let client = rig.client
        try await client.signOut()
        #expect(await refreshError { try await caller.value } == .signedOut)
        gate.open()
        await client.waitForLastRefreshTask()
        #expect(await rig.stored() == nil)
        #expect(client.currentToken == nil)
        #expect(client.currentState == .signedOut)
    }

    @Test func signOutDuringAHeldServerRefreshLeavesTheStoreEmpty() async throws {
        let rig = try await Rig.make()
        await rig.server.enqueue(.hold)
        let client = rig.client
        let caller = Task { try await client.validToken() }
        await rig.server.waitForHeldRequests(count: 1)
        try await client.signOut()
        await rig.server.releaseHeldRequests()
        await client.waitForLastRefreshTask()
        #expect(await refreshError { try await caller.value } == .signedOut)
        #expect(await rig.stored() == nil)
    }

    @Test func aRefreshThatFinishesAfterANewSessionWasStoredWritesNothing() async throws {
        let gate = HoldGate()
        let (rig, caller) = try await Rig.withLateRefresh(behind: gate)
        let client = rig.client
        let fresh = AuthToken(
            accessToken: "new-session", refreshToken: "new-refresh", receivedAt: rig.clock.date, lifetime: 3600)
        try await client.signIn(with: fresh, userID: "user-2")
        // Waiters of the old refresh asked for the old session's token: never the new session's.
        #expect(await refreshError { try await caller.value } == .sessionChanged)
        gate.open()
        await client.waitForLastRefreshTask()
        let stored = try #require(await rig.stored())
        #expect(stored.token == fresh)
        #expect(stored.userID == "user-2")
        #expect(client.currentToken == fresh)
    }

    @Test func aFailingStoreKeepsTheRotatedPairInMemoryAndRetriesTheWrite() async throws {
        let store = FlakyStore()
        let events: AsyncStream<AuthEvent>
        do {
            let rig = try await Rig.make(store: store)
            events = rig.client.events()
            await store.setFailSaves(true)
            let refreshed = try await rig.client.validToken()
            #expect(refreshed != rig.initial)
            #expect(rig.client.currentToken == refreshed)
            #expect(await rig.stored()?.token == rig.initial)

            // The rotated refresh token, kept only in memory, is the one used next.
            let again = try await rig.client.refreshToken(afterRejectionOf: refreshed.accessToken)
            #expect(await rig.server.presentedRefreshTokens.last == refreshed.refreshToken)
            #expect(await rig.server.reuseDetections == 0)

            // Once the store works again, the next call after the retry interval writes the pair.
            await store.setFailSaves(false)
            rig.clock.advance(by: .seconds(5))
            #expect(try await rig.client.validToken() == again)
            #expect(await rig.stored()?.token == again)
        }
        let kinds = await drain(events).map(\.kind)
        #expect(kinds.filter { $0 == .persistenceFailed }.count == 2)
        #expect(kinds.contains(.persistenceRecovered))
        #expect(!kinds.contains(.signedOut))
    }

    @Test func anUnavailableStoreIsNotSignedOut() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store, seedSession: false)
        await store.setUnavailable(true)
        #expect(await refreshError { try await rig.client.validToken() } == .storageUnavailable)
        #expect(rig.client.currentState == .unavailable)
    }

    @Test func theRateBreakerStopsARefreshLoopWithAClearError() async throws {
        let configuration = TokenRefreshClient.Configuration(maximumRefreshes: 5, breakerWindow: .seconds(30))
        let rig = try await Rig.make(configuration: configuration, expired: false)
        var token = try await rig.client.validToken()
        for _ in 0..<5 { token = try await rig.client.refreshToken(afterRejectionOf: token.accessToken) }
        let error = await refreshError { try await rig.client.refreshToken(afterRejectionOf: token.accessToken) }
        #expect(error == .rateLimited)
        #expect(error?.retryAfter == .seconds(30))
        #expect(await rig.server.refreshCount == 5)
        rig.clock.advance(by: .seconds(30))
        _ = try await rig.client.refreshToken(afterRejectionOf: token.accessToken)
        #expect(await rig.server.refreshCount == 6)
    }

    @Test func signOutClearsTheStoreRevokesTheRefreshTokenAndPublishesTheEvent() async throws {
        let events: AsyncStream<AuthEvent>
        do {
            var configuration = TokenRefreshClient.Configuration()
            let clock = ManualClock()
            let server = SimulatedTokenServer(now: clock.wallClock)
            let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: server)
            configuration.revocation = .rfc7009(url: revokeURL, using: endpoint)
            let client = TokenRefreshClient(
                strategy: OAuthRefreshStrategy(endpoint: endpoint), configuration: configuration, clock: clock,
                now: clock.wallClock)
            events = client.events()
            let token = try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
            try await client.signOut()
            #expect(await server.revocationCount == 1)
            #expect(await server.isFamilyRevoked(refreshToken: token.refreshToken!))
            #expect(client.currentState == .signedOut)
            #expect(await refreshError { try await client.validToken() } == .signedOut)
        }
        let signedOut = await drain(events).filter { $0.kind == .signedOut }
        #expect(signedOut.map(\.reason) == [.userAction])
    }
}
