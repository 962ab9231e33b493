import AuthToken
import Foundation
import HTTPTypes
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

    /// CommuteTimely's `RootView`, with `handleAuthStateChange` exactly as the app writes it.
    final class RootView: Sendable {
        struct NotificationSettings: Sendable { var personalizedDailyNotificationsEnabled = true }
        struct Preferences: Sendable { var notificationSettings = NotificationSettings() }
        actor PersonalizedNotificationScheduler {
            private(set) var scheduled: [String] = []
            private(set) var cancellations = 0
            func cancelAllPersonalizedNotifications() { cancellations += 1 }
            func scheduleDailyNotifications(firstName: String) throws { scheduled.append(firstName) }
        }

        let preferences = Preferences()
        let personalizedNotificationScheduler = PersonalizedNotificationScheduler()

        // swift-format-ignore
        private func handleAuthStateChange(_ state: AuthSessionState) async {
            switch state {
            case .signedOut:
                await personalizedNotificationScheduler.cancelAllPersonalizedNotifications()
                // Update preferences
            case .signedIn(let user):
                if preferences.notificationSettings.personalizedDailyNotificationsEnabled {
                    let firstName = user.firstName ?? "Friend"
                    try? await personalizedNotificationScheduler.scheduleDailyNotifications(firstName: firstName)
                }
            }
        }

        /// The seed's `.task { for await state in authManager.authStatePublisher.values { ... } }`.
        func task(_ client: TokenRefreshClient) -> Task<Void, Never> {
            let states = client.sessionStates()
            return Task { for await state in states { await self.handleAuthStateChange(state) } }
        }
    }

    @Test func theSeedsStateHandlerGreetsTheSDKsUserByFirstName() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let client = Self.client(sdk, clock: clock)
        let root = RootView()
        let task = root.task(client)
        defer { task.cancel() }
        let scheduler = root.personalizedNotificationScheduler
        #expect(await client.restoreSession(validatingWithProvider: true) == .signedOut)
        await yield { await scheduler.cancellations == 1 }
        sdk.signIn(.init(id: "user_2ada", firstName: "Ada"))
        _ = await client.restoreSession(validatingWithProvider: true)
        await yield { await scheduler.scheduled == ["Ada"] }
        // Another user without a first name, after a sign-out through the SDK.
        sdk.signOut()
        clock.advance(by: .seconds(61))
        _ = try? await client.validToken()
        await yield { await scheduler.cancellations == 2 }
        sdk.signIn(.init(id: "user_2bob"))
        _ = try await client.validToken()
        await yield { await scheduler.scheduled == ["Ada", "Friend"] }
    }

    @Test func anAppSuppliesTheProfileFromAnIDTokenOrItsOwnUserRecord() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        // A strategy over an SDK that hands out the token only: the app supplies the profile.
        let client = TokenRefreshClient(
            strategy: SDKTokenStrategy { _ in try sdk.token() }, clock: clock, now: clock.wallClock)
        sdk.signIn(.init(id: "user_2ada", firstName: "Ada"))
        _ = try await client.validToken()
        #expect(client.currentUser?.firstName == nil)
        let idToken = Self.unsignedJWT(
            #"{"sub":"user_2ada","given_name":"Ada","family_name":"Lovelace","email":"ada@example.com"}"#)
        TestSecrets.shared.register(idToken, as: .idToken)
        let fromIDToken = try #require(AuthUser(idToken: idToken))
        #expect(await client.setProfile(fromIDToken))
        #expect(client.currentUser?.firstName == "Ada")
        #expect(client.currentUser?.lastName == "Lovelace")
        #expect(client.currentUser?.sessionID == "sess_mock_1")
        // A profile for someone else is refused; the session's user stays as it is.
        #expect(await !client.setProfile(AuthUser(id: "user_2eve", firstName: "Eve")))
        #expect(client.currentUser?.firstName == "Ada")
        // Signed out: the profile goes with the session.
        try await client.signOut()
        #expect(client.currentUser == nil)
        #expect(AuthUser(idToken: "not-a-jwt") == nil)
    }

    /// An OpenID Connect server's token response carries an `id_token`: unverified, it supplies no profile (the
    /// sign-in module verifies ID tokens before their claims reach `currentUser`).
    @Test func anUnverifiedIDTokenInATokenResponseSuppliesNoProfile() async throws {
        let idToken = Self.unsignedJWT(#"{"sub":"user-oidc-7","given_name":"Grace","family_name":"Hopper"}"#)
        TestSecrets.shared.register(idToken, as: .idToken)
        TestSecrets.shared.register("opaque-access-oidc-7a1c", as: .accessToken)
        TestSecrets.shared.register("opaque-refresh-oidc-7a1c", as: .refreshToken)
        TestSecrets.shared.register("oidc-password-7a1c", as: .password)
        let server = MockTransport { _, body in
            // The ID token comes with the sign-in only, as many servers do.
            let signIn = String(decoding: body ?? Data(), as: UTF8.self).contains("grant_type=password")
            let body =
                #"{"access_token":"opaque-access-oidc-7a1c","refresh_token":"opaque-refresh-oidc-7a1c","#
                + #""token_type":"Bearer","expires_in":3600"# + (signIn ? #","id_token":"\#(idToken)"}"# : "}")
            return (HTTPResponse(status: .ok), Data(body.utf8))
        }
        let clock = ManualClock()
        let endpoint = TokenEndpoint(
            url: URL(string: "https://auth.example.com/oauth/token")!, client: OAuthClient(id: "app"),
            transport: server, now: clock.wallClock)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), clock: clock, now: clock.wallClock)
        try await client.signIn(.password(username: "grace", password: "oidc-password-7a1c", at: endpoint))
        #expect(client.currentState == .signedIn(userID: nil))
        #expect(client.currentUser?.firstName == nil)
        #expect(client.currentUser?.lastName == nil)
        _ = try await client.refreshToken(afterRejectionOf: "opaque-access-oidc-7a1c")
        #expect(server.requests.count == 2)
        #expect(client.currentUser?.firstName == nil)
    }

    static func unsignedJWT(_ payload: String) -> String {
        JWTBuilder.token(claims: payload)
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
