import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// The session state as a value and a stream, over an SDK that owns the session.
@Suite(.logLeakCheck()) struct SessionStateTests {
    /// Collects a state stream in the background, as a UI loop would.
    final class StateLog: Sendable {
        let states = Locked<[AuthState]>([])
        let task: Task<Void, Never>

        init(_ stream: AuthStateSequence) {
            let states = self.states
            task = Task { for await state in stream { states.withLock { $0.append(state) } } }
        }

        var all: [AuthState] { states.withLock { $0 } }

        /// Waits until `count` states arrived; no real time passes.
        func wait(for count: Int) async {
            while all.count < count { await Task.yield() }
        }
    }

    func sdkClient() -> (TokenRefreshClient, MockSessionProvider, ManualClock) {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let client = TokenRefreshClient(
            strategy: sdk.strategy, configuration: .init(backoff: .init(retries: 0)), clock: clock,
            now: clock.wallClock)
        return (client, sdk, clock)
    }

    @Test func aStoreLockedAtLaunchReadsUnavailableNeverSignedOutAndTheSessionOnceReadable() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store, expired: false)
        await store.setUnavailable(true)  // the Keychain before the first unlock
        let log = StateLog(rig.client.states())
        await log.wait(for: 1)
        #expect(await rig.client.restoreSession() == .unavailable)
        #expect(rig.client.currentState == .unavailable)
        #expect(await refreshError { try await rig.client.validToken() } == .storageUnavailable)
        #expect(rig.client.currentState == .unavailable)
        #expect(!rig.client.currentState.hasSession)
        // Protected data became available: the next read finds the session.
        await store.setUnavailable(false)
        #expect(await rig.client.restoreSession() == .signedIn(userID: "user-1"))
        while log.all.last != .signedIn(userID: "user-1") { await Task.yield() }
        #expect(log.all == [.loading, .unavailable, .signedIn(userID: "user-1")])
        #expect(await rig.server.refreshCount == 0)
    }

    @Test func aStoreUnavailableWithNothingStoredReadsUnavailableThenSignedOut() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store, seedSession: false)
        await store.setUnavailable(true)
        #expect(await rig.client.restoreSession() == .unavailable)
        await store.setUnavailable(false)
        #expect(await rig.client.restoreSession() == .signedOut)
    }

    @Test func aSignInThatFailsWhileTheStoreIsLockedReadsUnavailableNeverSignedOut() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store, expired: false)
        await store.setUnavailable(true)  // the Keychain before the first unlock, the session still in it
        await #expect(throws: TokenRefreshError.signInRejected) {
            try await rig.client.signIn(.password(username: "alice", password: "wrong-password-x3", at: rig.endpoint))
        }
        #expect(rig.client.currentState == .unavailable)
        #expect(!rig.client.currentState.hasSession)
        // Protected data became available: the stored session is still the session.
        await store.setUnavailable(false)
        #expect(await rig.client.restoreSession() == .signedIn(userID: "user-1"))
        #expect(rig.client.currentToken?.accessToken == rig.initial.accessToken)
    }

    @Test func aSignInThatFailsAfterALaunchOverALockedStoreStillReadsUnavailable() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store, expired: false)
        await store.setUnavailable(true)
        #expect(await rig.client.restoreSession() == .unavailable)
        await #expect(throws: TokenRefreshError.signInRejected) {
            try await rig.client.signIn(.password(username: "alice", password: "wrong-password-x3", at: rig.endpoint))
        }
        #expect(rig.client.currentState == .unavailable)
        await store.setUnavailable(false)
        #expect(await rig.client.restoreSession() == .signedIn(userID: "user-1"))
    }

    @Test func theStreamYieldsTheCurrentStateFirstThenEveryChange() async throws {
        let rig = try await Rig.make(expired: false)
        let log = StateLog(rig.client.states())
        await log.wait(for: 1)
        #expect(log.all == [.loading])
        #expect(await rig.client.restoreSession() == .signedIn(userID: "user-1"))
        try await rig.client.signOut()
        await log.wait(for: 3)
        #expect(log.all == [.loading, .signedIn(userID: "user-1"), .signedOut])
        // A late subscriber gets the current state first.
        var late = rig.client.states().makeAsyncIterator()
        #expect(await late.next() == .signedOut)
        log.task.cancel()
    }

    // A lost state would leave the reader waiting: the limit turns that into a failure.
    @Test(.timeLimit(.minutes(1))) func everyChangeBetweenTheFirstStateAndTheNextReadArrivesInOrder() async throws {
        let rig = try await Rig.make(expired: false)
        var states = rig.client.states().makeAsyncIterator()
        #expect(await states.next() == .loading)
        // The reader is busy with the first state while the session changes twice.
        #expect(await rig.client.restoreSession() == .signedIn(userID: "user-1"))
        try await rig.client.signOut()
        #expect(await states.next() == .signedIn(userID: "user-1"))
        #expect(await states.next() == .signedOut)
        // A change after the reader caught up arrives too.
        let second = AuthToken(
            accessToken: "second-access-token", refreshToken: "second-refresh-token", receivedAt: rig.clock.date,
            lifetime: 3600)
        _ = try await rig.client.signIn(with: second, userID: "user-2")
        var next = await states.next()
        if next == .loading { next = await states.next() }
        #expect(next == .signedIn(userID: "user-2"))
    }

    // A lost state would leave the reader waiting: the limit turns that into a failure.
    @Test(.timeLimit(.minutes(1))) func changesMadeBeforeTheFirstReadArriveAfterTheStateThatWasCurrentAtTheCall()
        async throws
    {
        let rig = try await Rig.make(expired: false)
        let sequence = rig.client.states()
        #expect(await rig.client.restoreSession() == .signedIn(userID: "user-1"))
        var states = sequence.makeAsyncIterator()
        #expect(await states.next() == .loading)
        #expect(await states.next() == .signedIn(userID: "user-1"))
        // A second loop over the same value starts from the same first state, on its own.
        var again = sequence.makeAsyncIterator()
        #expect(await again.next() == .loading)
        #expect(await again.next() == .signedIn(userID: "user-1"))
    }

    // A lost state would leave the reader waiting: the limit turns that into a failure.
    @Test(.timeLimit(.minutes(1))) func aSequenceMadeAfterTheFirstStartsAtTheStateThenAtTheChangesAfterIt()
        async throws
    {
        let rig = try await Rig.make(expired: false)
        _ = rig.client.states()  // from the first call on, the subscribers keep the recent states
        #expect(await rig.client.restoreSession() == .signedIn(userID: "user-1"))
        // Made after two states were sent since: read without the subscribers' lock where atomics allow.
        let sequence = rig.client.states()
        try await rig.client.signOut()
        let second = AuthToken(
            accessToken: "second-access-token", refreshToken: "second-refresh-token", receivedAt: rig.clock.date,
            lifetime: 3600)
        _ = try await rig.client.signIn(with: second, userID: "user-2")
        var states = sequence.makeAsyncIterator()
        #expect(await states.next() == .signedIn(userID: "user-1"))
        #expect(await states.next() == .signedOut)
        var next = await states.next()
        if next == .loading { next = await states.next() }
        #expect(next == .signedIn(userID: "user-2"))
    }

    // A lost state would leave the reader waiting: the limit turns that into a failure.
    @Test(.timeLimit(.minutes(1))) func theStatesEndWhenTheClientGoesAwayAfterDeliveringWhatWasSent() async throws {
        var client: TokenRefreshClient? = sdkClient().0
        var states = try #require(client).states().makeAsyncIterator()
        #expect(await states.next() == .loading)
        #expect(await client?.restoreSession() == .signedOut)
        client = nil
        #expect(await states.next() == .signedOut)
        #expect(await states.next() == nil)
    }

    // A lost state would leave the reader waiting: the limit turns that into a failure.
    @Test(.timeLimit(.minutes(1))) func aReaderWaitingForAChangeEndsWhenTheClientGoesAway() async throws {
        var client: TokenRefreshClient? = sdkClient().0
        var states = try #require(client).states().makeAsyncIterator()
        #expect(await states.next() == .loading)
        #expect(await client?.restoreSession() == .signedOut)
        #expect(await states.next() == .signedOut)
        let reader = Task { await states.next() }
        while try #require(client).stateSubscribers.withLock({ $0.continuations.count }) == 0 { await Task.yield() }
        client = nil
        #expect(await reader.value == nil)
    }

    // A lost state would leave the reader waiting: the limit turns that into a failure.
    @Test(.timeLimit(.minutes(1))) func aCancelledReaderEndsAndUnsubscribes() async throws {
        let rig = try await Rig.make(expired: false)
        let sequence = rig.client.states()
        let reader = Task {
            var states = sequence.makeAsyncIterator()
            var seen: [AuthState] = []
            while let state = await states.next() { seen.append(state) }
            return seen
        }
        while rig.client.stateSubscribers.withLock({ $0.continuations.count }) == 0 { await Task.yield() }
        reader.cancel()
        #expect(await reader.value == [.loading])
        #expect(rig.client.stateSubscribers.withLock { $0.continuations.count } == 0)
    }

    @Test func aRestoredSessionPublishesItselfAndAnExpiredOneReadsExpired() async throws {
        let rig = try await Rig.make(expired: true)
        let events = rig.client.events()
        #expect(await rig.client.restoreSession() == .expired(lastUserID: "user-1"))
        var iterator = events.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.kind == .sessionRestored)
        #expect(first?.userID == "user-1")
        // A refresh renews it.
        _ = try await rig.client.validToken()
        #expect(rig.client.currentState == .signedIn(userID: "user-1"))
    }

    @Test func concurrentCallersShareOneCallOfTheSDK() async throws {
        let (client, sdk, _) = sdkClient()
        sdk.signIn(.init(id: "user_2share"))
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { try await client.validToken().accessToken } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(sdk.tokenCalls == 1)
        #expect(client.currentState == .signedIn(userID: "user_2share"))
    }

    @Test func a401MakesTheSDKSkipItsCacheOnce() async throws {
        let (client, sdk, _) = sdkClient()
        sdk.signIn(.init(id: "user_2force"))
        let transport = MockTransport(script: [
            .response(status: .unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#]),
            .response(status: .ok),
        ])
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!]))
        let (response, _) = try await api.executeWithAutoRetry(
            HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/users/me"))
        #expect(response.status == .ok)
        #expect(sdk.tokenCalls == 2)
        #expect(sdk.forcedTokenCalls == 1)
        #expect(Set(transport.requests.map(\.bearerToken)).count == 2)
    }

    @Test func anSDKWithoutASessionEndsOursOnceWithItsReason() async throws {
        let (client, sdk, clock) = sdkClient()
        sdk.signIn(.init(id: "user_2gone"))
        let events = client.events()
        _ = try await client.validToken()
        sdk.signOut()
        clock.advance(by: .seconds(120))
        #expect(await refreshError { try await client.validToken() } == .signedOut)
        #expect(client.currentState == .signedOut)
        var iterator = events.makeAsyncIterator()
        var signedOut: AuthEvent?
        while let event = await iterator.next() {
            if event.kind == .signedOut {
                signedOut = event
                break
            }
        }
        #expect(signedOut?.reason == .providerSignedOut)
        #expect(signedOut?.userID == "user_2gone")
    }

    @Test func aRefreshThatDoesNotCureA401EndsTheSessionWhenTheAppAsks() async throws {
        for ends in [false, true] {
            let (client, sdk, _) = sdkClient()
            sdk.signIn(.init(id: "user_2policy"))
            let events = client.events()
            let unauthorized = MockTransport.Reply.response(
                status: .unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
            let api = AuthenticatedClient(
                transport: MockTransport(script: [unauthorized, unauthorized]), tokenProvider: client,
                configuration: .init(
                    allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!],
                    endsSessionWhenRefreshDoesNotHelp: ends))
            await #expect(throws: NetworkRetryError.unauthorizedAfterRefresh) {
                try await api.executeWithAutoRetry(
                    HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/users/me"))
            }
            #expect(client.currentState.hasSession == !ends)
            var kinds: [AuthEvent.Kind] = []
            var iterator = events.makeAsyncIterator()
            while let event = await iterator.next() {
                kinds.append(event.kind)
                if event.kind == .unauthorizedAfterRefresh { break }
            }
            #expect(kinds.contains(.unauthorizedAfterRefresh))
        }
    }

    /// The CommuteTimely `RootView` loop over the stream: launch, sign-in, offline, back online, revocation.
    @Test func theRootViewLoopSeesEachStateOfALaunchSignInOfflineAndRevocation() async throws {
        let (client, sdk, clock) = sdkClient()
        let log = StateLog(client.states())
        // Launch without a session.
        #expect(await client.restoreSession(validatingWithProvider: true) == .signedOut)
        // Sign-in through the SDK; the app asks for a token.
        sdk.signIn(.init(id: "user_2root", firstName: "Ada"))
        #expect(await client.restoreSession(validatingWithProvider: true) == .signedIn(userID: "user_2root"))
        // The token expires while the device is offline: the session is kept, as expired.
        clock.advance(by: .seconds(61))
        sdk.goOffline()
        let offline = await refreshError { try await client.validToken() }
        #expect(offline?.isConnectivityFailure == true)
        #expect(client.isOfflineNow)
        #expect(client.currentState == .expired(lastUserID: "user_2root"))
        // Back online: the app says so and the session is renewed.
        sdk.comeOnline()
        #expect(await client.networkRestored() == .signedIn(userID: "user_2root"))
        #expect(!client.isOfflineNow)
        // The server revokes the session.
        sdk.revoke()
        clock.advance(by: .seconds(61))
        #expect(await refreshError { try await client.validToken() } == .refreshTokenRejected)
        await log.wait(for: 6)
        #expect(
            log.all == [
                .loading, .signedOut, .signedIn(userID: "user_2root"), .expired(lastUserID: "user_2root"),
                .signedIn(userID: "user_2root"), .signedOut,
            ])
        log.task.cancel()
    }
}
