import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// What an attacker (or an unlucky user) tried when the session switches users under TokenKit's feet: an SDK that
// signs another user in by itself, an app that switches users while a refresh is on the wire, and requests that
// never carried a token. The FitIQ app, its persistence and the two users' API are `FitIQApp`, `AppPersistence`
// and `TwoUserBackend` (WrongUserOrHostAttacks.swift).

@Suite(.logLeakCheck()) struct SessionSwitchAttacks {
    /// A Clerk-style app: Alice signs out and Bob signs in inside the SDK, and the app never calls `signOut()`. The
    /// API refuses Alice's token; the refresh that follows returns Bob's token, which names no user.
    @Test func bobsTokenFromTheSDKIsNeverFiledAsAlicesNorSentForHerRequest() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        sdk.signIn(.init(id: "user_alice", firstName: "Alice"))
        let tokens = TokenRefreshClient(
            strategy: sdk.strategy, configuration: .init(backoff: .init(retries: 0)), clock: clock,
            now: clock.wallClock)
        #expect(await tokens.restoreSession(validatingWithProvider: true) == .signedIn(userID: "user_alice"))
        let alicesToken = try #require(tokens.currentToken)
        // The API: Alice's session is over on the server; Bob's tokens work.
        let transport = MockTransport { request, _ in
            let bearer = request.headerFields[.authorization].map { String($0.dropFirst("Bearer ".count)) }
            let user = bearer.flatMap {
                AuthToken(accessToken: $0, refreshToken: nil, receivedAt: Date(), lifetime: 60).parseUserIdFromJWT()
            }
            guard user == "user_bob" else {
                return (
                    HTTPResponse(
                        status: .unauthorized, headerFields: [.wwwAuthenticate: #"Bearer error="invalid_token""#]),
                    Data()
                )
            }
            return (HTTPResponse(status: .ok), Data("stored for bob".utf8))
        }
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: tokens,
            configuration: .init(allowedOrigins: [HTTPOrigin(URL(string: "https://api.example.com")!)!]))

        sdk.signOut()
        sdk.signIn(.init(id: "user_bob"))
        await #expect(throws: TokenRefreshError.sessionChanged) {
            try await api.executeWithAutoRetry(
                HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/uploads"),
                body: Data("alice's steps".utf8))
        }
        let bobsToken = try #require(tokens.currentToken)
        #expect(bobsToken.accessToken != alicesToken.accessToken)
        #expect(transport.requests.filter { $0.bearerToken == bobsToken.accessToken }.isEmpty)
        #expect(tokens.currentState == .signedIn(userID: "user_bob"), "Bob's token is filed as Bob's")
        #expect(tokens.currentUser?.id == "user_bob")
        #expect(tokens.currentUser?.firstName == nil, "Alice's profile is gone")
        // A later 401 for Alice's old token is not stale: it is never answered with Bob's token.
        await #expect(throws: TokenRefreshError.sessionChanged) {
            try await tokens.refreshToken(afterRejectionOf: alicesToken.accessToken)
        }
    }

    /// The FitIQ client holds no session. Alice's 401 starts a refresh of her refresh token; while it is on the wire
    /// the app signs Bob in by its own code, and Bob's 401 asks for a refresh of his.
    @Test func bobsRefreshTokenNeverJoinsTheRefreshOfAlicesWhenNoSessionIsHeld() async throws {
        let app = FitIQApp()
        try await app.logIn("alice")
        await app.backend.expireAccess(of: "alice")
        await app.backend.hold(path: "/api/v1/auth/refresh")
        let alices = Task { try await app.send("/api/v1/profile") }
        await app.backend.waitUntilHeld()
        try app.logOut()
        try await app.logIn("bob")
        await app.backend.expireAccess(of: "bob")
        let bobs = Task { try await app.send("/api/v1/profile") }
        // Bob's call either refreshes his own token (reaching the server while Alice's refresh is held) or joins
        // Alice's refresh: wait for one of the two.
        while await app.backend.refreshes.isEmpty, app.tokenRefreshClient.refreshWaiterCount < 2 {
            await Task.yield()
        }
        await app.backend.release()
        #expect(try await bobs.value == "data of bob")
        _ = await alices.result
        #expect(await app.backend.refreshes.contains("bob"))
    }

    /// No session is held and Bob's refresh token was refreshed on its own (while Alice's refresh ran, which then
    /// failed). A caller that read Bob's old refresh token asks again: the consumed token is never presented twice
    /// (a server that detects reuse revokes Bob's whole family); Bob's newest pair is the answer.
    @Test func aConsumedRefreshTokenIsNeverPresentedAgainWhenNoSessionIsHeld() async throws {
        let backend = TwoUserBackend()
        let transport = MockTransport { request, body in await backend.handle(request, body: body) }
        // The injected clock keeps the refresh timeout from firing while Alice's refresh is held, however slowly a
        // loaded machine runs the test (a timed-out refresh is retried, which is another test's subject).
        let clock = ManualClock()
        let tokens = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: TwoUserBackend.baseURL, apiKey: TwoUserBackend.apiKey, transport: transport),
            clock: clock, now: clock.wallClock)
        let alice = await backend.login("alice")
        let bob = await backend.login("bob")
        await backend.hold(path: "/api/v1/auth/refresh")
        let alices = Task { try await tokens.refreshToken(alice.refresh) }
        await backend.waitUntilHeld()
        let bobsFirst = Task { try await tokens.refreshToken(bob.refresh) }
        while await backend.refreshes.isEmpty, tokens.refreshWaiterCount < 2 { await Task.yield() }
        await backend.revoke("alice")
        await backend.release()
        _ = await alices.result
        let first = try await bobsFirst.value
        #expect(tokens.currentToken == nil, "no session is held")

        let again = try await tokens.refreshToken(bob.refresh)
        #expect(again.accessToken == first.accessToken)
        #expect(await backend.refreshes == ["bob"], "Bob's consumed refresh token was presented once")
        #expect(transport.requests.filter { $0.path == "/api/v1/auth/refresh" }.count == 2)
    }

    /// Alice's refresh is on the wire when the app logs her out and Bob in by its own code; then it returns.
    @Test func alicesRefreshThatReturnsAfterTheAppSignedBobInNeverOverwritesBobsPair() async throws {
        let app = FitIQApp()
        try await app.logIn("alice")
        await app.backend.expireAccess(of: "alice")
        await app.backend.hold(path: "/api/v1/auth/refresh")
        let upload = Task { try await app.send("/api/v1/uploads", method: "POST", body: Data("alice's steps".utf8)) }
        await app.backend.waitUntilHeld()
        try app.logOut()
        try await app.logIn("bob")
        let bobsAccess = try app.persistence.fetchAccessToken()
        let bobsRefresh = try app.persistence.fetchRefreshToken()
        await app.backend.release()

        let outcome = await upload.result
        #expect(throws: TokenRefreshError.sessionChanged) { try outcome.get() }
        #expect(try app.persistence.fetchAccessToken() == bobsAccess, "Bob's pair is untouched")
        #expect(try app.persistence.fetchRefreshToken() == bobsRefresh, "Bob's pair is untouched")
        #expect(await app.backend.uploads.isEmpty)
    }

    /// A request the app built without a token (to a third-party host) gets a 401: the user's token is never
    /// attached to it, and nothing is refreshed.
    @Test func aRequestThatCarriedNoTokenIsNeverResentWithTheUsersToken() async throws {
        let app = FitIQApp()
        try await app.logIn("alice")
        let request = URLRequest(url: URL(string: "https://tracker.example/collect")!)
        await #expect(throws: APIError.unauthorized) {
            try await app.networkClient.executeWithAutoRetry(
                request: request, tokenRefreshClient: app.tokenRefreshClient,
                authTokenPersistence: app.persistence)
        }
        #expect(app.transport.requests.count == 1, "the 401 is passed on, not resent")
        #expect(app.transport.requests.allSatisfy { $0.bearerToken == nil })
        #expect(await app.backend.refreshes.isEmpty)
    }
}
