import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

@testable import TokenRefresh

@Suite(.logLeakCheck()) struct FailureClassificationTests {
    @Test func invalidGrantSignsOutOnceAndEveryWaiterFails() async throws {
        let events: AsyncStream<AuthEvent>
        do {
            let rig = try await Rig.make()
            events = rig.client.events()
            await rig.server.enqueue(.held(.invalidGrant))
            let client = rig.client
            let errors = await withTaskGroup(of: TokenRefreshError?.self) { group in
                for _ in 0..<50 { group.addTask { await refreshError { try await client.validToken() } } }
                await yield { client.refreshWaiterCount == 50 }
                await rig.server.waitForHeldRequests(count: 1)
                await rig.server.releaseHeldRequests()
                var errors: [TokenRefreshError?] = []
                for await error in group { errors.append(error) }
                return errors
            }
            #expect(errors.count == 50)
            #expect(errors.allSatisfy { $0 == .refreshTokenRejected && $0?.isTerminal == true })
            #expect(await rig.stored() == nil)
            #expect(client.currentState == .signedOut)
            #expect(client.currentToken == nil)
            #expect(await rig.server.tokenRequestCount == 1)

            // The dead refresh token is never sent again, not even when handed in explicitly.
            let again = await refreshError { try await client.refreshToken(rig.initial.refreshToken!) }
            #expect(again == .refreshTokenRejected)
            #expect(await refreshError { try await client.validToken() } == .signedOut)
            #expect(await rig.server.tokenRequestCount == 1)
        }
        let signedOut = await drain(events).filter { $0.kind == .signedOut }
        #expect(signedOut.count == 1)
        #expect(signedOut.first?.reason == .revoked)
        #expect(signedOut.first?.userID == "user-1")
    }

    @Test func invalidGrantAdoptsAPairAnotherProcessRotatedMeanwhile() async throws {
        // Two clients share one store, as two processes share a file store.
        let rig = try await Rig.make(server: .init(detectsReuse: false))
        let other = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: rig.endpoint), store: rig.store, clock: rig.clock,
            now: rig.clock.wallClock)
        await rig.server.enqueue(.hold)
        let client = rig.client
        let first = Task { try await client.validToken() }
        await rig.server.waitForHeldRequests(count: 1)
        // The other process refreshes and stores the rotated pair while the first one's request is held.
        let rotated = try await other.validToken()
        await rig.server.releaseHeldRequests()
        // The first request carried the old refresh token: invalid_grant, then one re-read finds the new pair.
        let token = try await first.value
        #expect(token == rotated)
        #expect(client.currentState == .signedIn(userID: "user-1"))
        #expect(await rig.stored()?.token == rotated)
    }

    @Test func configurationErrorsAreDistinctAndWipeNothing() async throws {
        let events: AsyncStream<AuthEvent>
        do {
            let rig = try await Rig.make()
            events = rig.client.events()
            await rig.server.enqueue(.invalidClient)
            let error = await refreshError { try await rig.client.validToken() }
            #expect(error == .configuration)
            #expect(error?.oauthError == "invalid_client")
            #expect(error?.isTerminal == false)
            #expect(await rig.stored()?.token == rig.initial)
            #expect(rig.client.currentToken == rig.initial)
            #expect(rig.client.currentState.hasSession)
        }
        let kinds = await drain(events).map(\.kind)
        #expect(!kinds.contains(.signedOut))
        #expect(kinds.contains(.refreshFailed))
    }

    @Test func serviceUnavailableWithRetryAfterKeepsTheSessionAndHoldsBackTheNextRefresh() async throws {
        let rig = try await Rig.make()
        await rig.server.enqueue(.serviceUnavailable(retryAfter: 120))
        let error = await refreshError { try await rig.client.validToken() }
        #expect(error == .transient)
        #expect(error?.status == 503)
        #expect(error?.retryAfter == .seconds(120))
        #expect(await rig.stored()?.token == rig.initial)
        #expect(rig.client.currentState == .expired(lastUserID: "user-1"))
        #expect(rig.client.isOfflineNow == false)

        // Retry-After is honoured: no request before it has passed.
        let early = await refreshError { try await rig.client.validToken() }
        #expect(early == .transient)
        #expect(await rig.server.tokenRequestCount == 1)

        rig.clock.advance(by: .seconds(120))
        let token = try await rig.client.validToken()
        #expect(token != rig.initial)
        #expect(rig.client.currentState == .signedIn(userID: "user-1"))
        #expect(await rig.server.tokenRequestCount == 2)
    }

    @Test func transientFailuresBackOffWithJitterOnTheInjectedClock() async throws {
        let configuration = TokenRefreshClient.Configuration(
            refreshTimeout: nil, backoff: .init(retries: 2, initialDelay: .seconds(1)))
        let rig = try await Rig.make(configuration: configuration, random: { 0.5 })
        await rig.server.enqueue(.internalServerError, .tooManyRequests())
        let client = rig.client
        let caller = Task { try await client.validToken() }

        // First delay: 1 s * (0.5 + 0.5 * 0.5) = 750 ms.
        await rig.clock.waitForSleepers(count: 1)
        rig.clock.advance(by: .milliseconds(749))
        #expect(rig.clock.sleeperCount == 1)
        #expect(await rig.server.tokenRequestCount == 1)
        rig.clock.advance(by: .milliseconds(1))

        // Second delay: 2 s * 0.75 = 1.5 s.
        await yield { await rig.server.tokenRequestCount == 2 }
        await rig.clock.waitForSleepers(count: 1)
        rig.clock.advance(by: .milliseconds(1500))

        let token = try await caller.value
        #expect(token != rig.initial)
        #expect(await rig.server.tokenRequestCount == 3)
        #expect(await rig.server.refreshCount == 1)
    }

    @Test func backoffDelaysGrowAndStayWithinTheJitterBand() {
        let backoff = TokenRefreshClient.Backoff(initialDelay: .seconds(1), maximumDelay: .seconds(8))
        #expect(backoff.delay(attempt: 0, random: 0) == .milliseconds(500))
        #expect(backoff.delay(attempt: 0, random: 0.999_999) == .milliseconds(1000))
        #expect(backoff.delay(attempt: 2, random: 0.5) == .milliseconds(3000))
        #expect(backoff.delay(attempt: 10, random: 1) == .seconds(8))
    }

    @Test func anOfflineAppKeepsItsStoredSessionAndCanTellItIsOffline() async throws {
        var configuration = TokenRefreshClient.Configuration()
        configuration.backoff.retries = 0
        let rig = try await Rig.make(configuration: configuration)
        await rig.server.enqueue(.connectionError)
        let error = await refreshError { try await rig.client.validToken() }
        #expect(error == .transient)
        #expect(error?.isConnectivityFailure == true)
        #expect(rig.client.isOfflineNow)
        #expect(rig.client.currentState == .expired(lastUserID: "user-1"))
        #expect(rig.client.currentToken == rig.initial)
        #expect(await rig.stored()?.token == rig.initial)
    }

    @Test func aProactiveRefreshThatFailsTransientlyReturnsTheStillValidToken() async throws {
        var configuration = TokenRefreshClient.Configuration()
        configuration.backoff.retries = 0
        let rig = try await Rig.make(configuration: configuration, expired: false)
        // 3,500 s into a one-hour token: due for a proactive refresh, not yet expired.
        rig.clock.advance(by: .seconds(3500))
        await rig.server.enqueue(.internalServerError)
        let token = try await rig.client.validToken()
        #expect(token == rig.initial)
        #expect(await rig.server.tokenRequestCount == 1)
        #expect(rig.client.currentState == .signedIn(userID: "user-1"))
    }

    @Test func aMalformedAnswerKeepsTheSession() async throws {
        let rig = try await Rig.make()
        await rig.server.enqueue(.malformedJSON)
        let error = await refreshError { try await rig.client.validToken() }
        #expect(error == .malformedResponse)
        #expect(await rig.stored()?.token == rig.initial)
        #expect(rig.client.currentState.hasSession)
    }

    @Test func aSessionWithoutRefreshTokenEndsWhenItsTokenExpires() async throws {
        let clock = ManualClock()
        let store = InMemoryTokenStore()
        let token = AuthToken(
            accessToken: "opaque-access-token", receivedAt: clock.date.addingTimeInterval(-120), lifetime: 60)
        try await store.save(StoredSession(token: token, generation: 1), account: account, condition: .always)
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
                TokenResponse(accessToken: "never-issued-token")
            },
            store: store, clock: clock, now: clock.wallClock)
        #expect(await refreshError { try await client.validToken() } == .sessionExpired)
        #expect(client.currentState == .signedOut)
        #expect(await store.load(account: account).isAbsent)
    }
}
