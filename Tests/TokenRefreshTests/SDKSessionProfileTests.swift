import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

/// Apps whose SDK owns the session (Clerk): the user's profile comes from the SDK, not from the token's claims
/// (Clerk's default session token has none), and the launch check asks the SDK even while the cached token is
/// fresh. Through the public API only.
@Suite(.logLeakCheck()) struct SDKSessionProfileTests {
    static func client(
        _ sdk: MockSessionProvider, store: any TokenStore = InMemoryTokenStore(), clock: ManualClock
    ) -> TokenRefreshClient {
        TokenRefreshClient(
            strategy: sdk.strategy, store: store, configuration: .init(backoff: .init(retries: 0)), clock: clock,
            now: clock.wallClock)
    }

    @Test func theMockUsersProfileReachesCurrentUser() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        sdk.signIn(.init(id: "user_2ada", firstName: "Ada", lastName: "Lovelace", email: "ada@example.com"))
        let client = Self.client(sdk, clock: clock)
        #expect(await client.restoreSession(validatingWithProvider: true) == .signedIn(userID: "user_2ada"))
        let user = try #require(client.currentUser)
        #expect(user.id == "user_2ada")
        #expect(user.firstName == "Ada")
        #expect(user.lastName == "Lovelace")
        #expect(user.email == "ada@example.com")
        // The session ID still comes from the token's `sid`.
        #expect(user.sessionID == "sess_mock_1")
    }

    @Test func aSignOutDoneInTheSDKIsSeenAtLaunchWhileTheCachedTokenIsFresh() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let store = InMemoryTokenStore()
        sdk.signIn(.init(id: "user_2ada", firstName: "Ada"))
        let first = Self.client(sdk, store: store, clock: clock)
        _ = try await first.validToken()
        // The user signs out through the SDK's own UI; the token TokenKit stored is still fresh.
        sdk.signOut()
        clock.advance(by: .seconds(5))
        var events = AsyncStream<AuthEvent> { $0.finish() }
        do {
            let relaunched = Self.client(sdk, store: store, clock: clock)
            events = relaunched.events()
            #expect(await relaunched.restoreSession(validatingWithProvider: true) == .signedOut)
            #expect(relaunched.currentUser == nil)
        }
        #expect(sdk.tokenCalls == 2)
        if case .found = await store.load(account: "default") { Issue.record("the ended session is still stored") }
        // The stream ends with the client.
        let reasons = await drain(events).compactMap { $0.kind == .signedOut ? $0.reason : nil }
        #expect(reasons == [.providerSignedOut])
    }

    @Test func theLaunchCheckAsksTheSDKWithoutSkippingItsCache() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let store = InMemoryTokenStore()
        sdk.signIn(.init(id: "user_2ada", firstName: "Ada"))
        _ = try await Self.client(sdk, store: store, clock: clock).validToken()
        let relaunched = Self.client(sdk, store: store, clock: clock)
        #expect(await relaunched.restoreSession(validatingWithProvider: true) == .signedIn(userID: "user_2ada"))
        // Asked once more, from the SDK's cache (no forced refresh, no new token minted).
        #expect(sdk.tokenCalls == 2)
        #expect(sdk.forcedTokenCalls == 0)
        #expect(sdk.issuedTokens == 1)
        #expect(relaunched.currentUser?.firstName == "Ada")
    }

    @Test func aFreshSessionStaysSignedInWhenTheSDKCannotBeReachedAtLaunch() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let store = InMemoryTokenStore()
        sdk.signIn(.init(id: "user_2ada"))
        _ = try await Self.client(sdk, store: store, clock: clock).validToken()
        sdk.goOffline()
        let relaunched = Self.client(sdk, store: store, clock: clock)
        #expect(await relaunched.restoreSession(validatingWithProvider: true) == .signedIn(userID: "user_2ada"))
        // Once the token has expired, the same launch reads expired (kept, offline).
        clock.advance(by: .seconds(120))
        let later = Self.client(sdk, store: store, clock: clock)
        #expect(await later.restoreSession(validatingWithProvider: true) == .expired(lastUserID: "user_2ada"))
    }
}
