import AuthToken
import Crypto
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitScreens
import TokenKitTesting

@testable import TokenRefresh

/// Account deletion, sign-out everywhere, the user value, the observable model and Sign in with Apple.
@Suite(.logLeakCheck()) struct AccountAndUserTests {
    static let origin = HTTPOrigin(string: "https://api.example.com")!
    static let deleteMe = HTTPRequest(method: .delete, scheme: "https", authority: "api.example.com", path: "/users/me")

    /// An unsigned JWT with `claims` (claims are read, never verified, on the client).
    static func jwt(_ claims: String) -> String {
        let token = JWTBuilder.token(
            claims: claims, header: #"{"alg":"RS256","kid":"k1"}"#, signature: Data("signature".utf8))
        TestSecrets.shared.register(token, as: .idToken)
        return token
    }

    func signedIn(revocations: Locked<[String]>) async throws -> (TokenRefreshClient, MockSessionProvider) {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        sdk.signIn(.init(id: "user_2delete"))
        let client = TokenRefreshClient(
            strategy: sdk.strategy,
            configuration: .init(revocation: TokenRevocation { token in revocations.withLock { $0.append(token) } }),
            clock: clock, now: clock.wallClock)
        _ = try await client.validToken()
        return (client, sdk)
    }

    @Test func aDeletedAccountEndsTheSessionWithItsReason() async throws {
        let revocations = Locked<[String]>([])
        let (client, _) = try await signedIn(revocations: revocations)
        let events = client.events()
        let transport = MockTransport(script: [.response(status: .ok, body: Data(#"{"success":true}"#.utf8))])
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client, configuration: .init(allowedOrigins: [Self.origin]))
        let (response, _) = try await client.deleteAccount(Self.deleteMe, through: api)
        #expect(response.status == .ok)
        #expect(transport.requests.first?.method == .delete)
        #expect(client.currentState == .signedOut)
        let ended = await firstSignedOut(events)
        #expect(ended?.reason == .accountDeleted)
    }

    @Test func aRefusedDeletionKeepsTheSessionAndSaysHow() async throws {
        let (client, _) = try await signedIn(revocations: Locked([]))
        let transport = MockTransport(script: [.response(status: .internalServerError)])
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client, configuration: .init(allowedOrigins: [Self.origin]))
        let error = await refreshError { try await client.deleteAccount(Self.deleteMe, through: api) }
        #expect(error == .serverRefused)
        #expect(error?.status == 500)
        #expect(client.currentState == .signedIn(userID: "user_2delete"))
    }

    @Test func signOutEverywhereEndsTheSessionWithItsReason() async throws {
        let (client, _) = try await signedIn(revocations: Locked([]))
        let api = AuthenticatedClient(
            transport: MockTransport(script: [.response(status: .noContent)]), tokenProvider: client,
            configuration: .init(allowedOrigins: [Self.origin]))
        try await client.signOutEverywhere(
            HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/sessions/revoke-all"),
            through: api)
        #expect(client.currentState == .signedOut)
    }

    @Test func theUserComesFromTheTokensClaims() async throws {
        let token = Self.jwt(
            #"{"sub":"user_2claims","sid":"sess_42","given_name":"Ada","family_name":"Lovelace","email":"ada@example.com","picture":"https://img.example.com/ada.png","exp":4102444800}"#
        )
        let client = TokenRefreshClient(strategy: SDKTokenStrategy { _ in token })
        _ = try await client.validToken()
        let user = try #require(client.currentUser)
        #expect(user.id == "user_2claims")
        #expect(user.sessionID == "sess_42")
        #expect(user.firstName == "Ada")
        #expect(user.lastName == "Lovelace")
        #expect(user.email == "ada@example.com")
        #expect(user.imageURL == "https://img.example.com/ada.png")
        #expect(!user.description.contains("ada@example.com"))
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @MainActor
    @Test func theObservableModelFollowsTheSession() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let client = TokenRefreshClient(strategy: sdk.strategy, clock: clock, now: clock.wallClock)
        let model = AuthSessionModel(client: client)
        #expect(model.isLoading)
        sdk.signIn(.init(id: "user_2model"))
        await client.restoreSession(validatingWithProvider: true)
        while !model.isAuthenticated { await Task.yield() }
        #expect(!model.isLoading)
        #expect(model.currentUser?.id == "user_2model")
        try await client.signOut()
        while model.isAuthenticated { await Task.yield() }
        #expect(model.currentUser == nil)
        #expect(model.state == .signedOut)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @MainActor
    @Test func theObservableModelShowsAProfileSuppliedAfterSignIn() async throws {
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let client = TokenRefreshClient(
            strategy: SDKTokenStrategy { _ in try sdk.token() }, clock: clock, now: clock.wallClock)
        let model = AuthSessionModel(client: client)
        sdk.signIn(.init(id: "user_2model"))
        await client.restoreSession(validatingWithProvider: true)
        while !model.isAuthenticated { await Task.yield() }
        #expect(model.currentUser?.firstName == nil)
        #expect(await client.setProfile(AuthUser(id: "user_2model", firstName: "Ada")))
        for _ in 0..<10_000 where model.currentUser?.firstName == nil { await Task.yield() }
        #expect(model.currentUser?.firstName == "Ada")
    }

    // MARK: Sign in with Apple

    static let rawNonce = "raw-nonce-for-apple-x8"
    static var nonceHash: String {
        SHA256.hash(data: Data(rawNonce.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func appleToken(
        aud: String = "com.example.diet", iss: String = "https://appleid.apple.com", nonce: String? = nil
    )
        -> String
    {
        jwt(
            #"{"iss":"\#(iss)","aud":"\#(aud)","sub":"001234.apple","exp":4102444800,"nonce":"\#(nonce ?? nonceHash)"}"#
        )
    }

    @Test func anAppleIdentityTokenIsExchangedWithItsNonce() async throws {
        let transport = MockTransport(script: [
            .response(
                status: .ok,
                body: Data(
                    #"{"access_token":"apple-exchanged-access-x8","refresh_token":"apple-exchanged-refresh-x8","expires_in":3600}"#
                        .utf8))
        ])
        let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "diet-app"), transport: transport)
        let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint))
        let identity = Self.appleToken()
        try await client.signIn(
            .appleIdentityToken(identity, rawNonce: Self.rawNonce, clientID: "com.example.diet", at: endpoint))
        #expect(client.currentState.hasSession)
        let body = String(decoding: transport.requests.first?.body ?? Data(), as: UTF8.self)
        #expect(body.contains("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"))
        #expect(body.contains("subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aid_token"))
    }

    @Test(arguments: [
        ("wrong nonce", appleToken(nonce: String(repeating: "0", count: 64))),
        ("wrong audience", appleToken(aud: "com.example.other")),
        ("wrong issuer", appleToken(iss: "https://evil.example.com")),
        ("not a JWT", "not-a-jwt-at-all-x8"),
    ])
    func anAppleIdentityTokenThatFailsAClientCheckIsNeverSent(_ name: String, _ identity: String) async throws {
        let transport = MockTransport(script: [])
        let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "diet-app"), transport: transport)
        let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint))
        let error = await refreshError {
            try await client.signIn(
                .appleIdentityToken(identity, rawNonce: Self.rawNonce, clientID: "com.example.diet", at: endpoint))
        }
        #expect(error == .invalidArgument, "\(name)")
        #expect(transport.requestCount == 0)
        #expect(client.currentState == .signedOut)
    }
}
