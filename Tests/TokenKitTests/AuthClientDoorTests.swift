import Foundation
import HTTPTypes
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// One door per kind of app: each factory reaches the app's first request in two calls, over the same types as the
/// manual composition.
@Suite(.logLeakCheck()) struct AuthClientDoorTests {
    static let api = URL(string: "https://api.example.com")!

    /// Counts the SDK's calls, and whether it was asked to skip its cache.
    actor SDKDouble {
        private(set) var calls: [Bool] = []
        func token(forceRefresh: Bool) -> String {
            calls.append(forceRefresh)
            return forceRefresh ? "sdk-token-door-2" : "sdk-token-door-1"
        }
    }

    @Test func anSDKAppSendsTheSDKsTokenAndAsksPastItsCacheAfterA401() async throws {
        let transport = MockTransport(script: [
            .response(status: .unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#]),
            .response(status: .ok, body: Data("{}".utf8)),
        ])
        let sdk = SDKDouble()
        let client = AuthClient.sdk(apiURL: Self.api, transport: transport) { try await sdk.token(forceRefresh: $0) }

        let (response, _) = try await client.get("/v1/me")

        #expect(response.status == .ok)
        #expect(transport.requests.map(\.bearerToken) == ["sdk-token-door-1", "sdk-token-door-2"])
        #expect(transport.requests.map(\.path) == ["/v1/me", "/v1/me"])
        #expect(await sdk.calls == [false, true])
    }

    @Test func aCookieAppSignsInWithJSONAndSendsTheCookieNotABearerToken() async throws {
        let setCookie = "better-auth.session_token=cookie-value-door-1; Path=/; Secure; HttpOnly; Max-Age=3600"
        let transport = MockTransport(script: [
            .response(status: .ok, headers: [.setCookie: setCookie], body: Data(#"{"user":{"id":"u-1"}}"#.utf8)),
            .response(status: .ok, body: Data("{}".utf8)),
        ])
        let client = AuthClient.cookieSession(
            baseURL: Self.api, appName: "DoorTests", store: InMemoryTokenStore(), transport: transport)

        try await client.signIn(username: "ada", password: "password-door-1")
        let (response, _) = try await client.get("/api/me")

        #expect(response.status == .ok)
        let signIn = try #require(transport.requests.first)
        #expect(signIn.path == "/api/auth/sign-in/username")
        let fields = try JSONDecoder().decode([String: String].self, from: try #require(signIn.body))
        #expect(fields.keys.sorted() == ["password", "username"])
        #expect(fields["username"] == "ada")
        let call = try #require(transport.requests.last)
        #expect(call.path == "/api/me")
        #expect(call.request.headerFields[.cookie] == "better-auth.session_token=cookie-value-door-1")
        #expect(call.request.headerFields[.authorization] == nil)
    }

    @Test func aBackendSendsEachAccountsOwnTokenToTheAPI() async throws {
        let now = Date()
        func session(_ access: String) -> StoredSession {
            StoredSession(
                token: AuthToken(
                    accessToken: access, refreshToken: access + "-refresh", receivedAt: now, lifetime: 3600),
                generation: 1)
        }
        let store = InMemoryTokenStore(sessions: [
            "user-a": session("access-token-door-a"), "user-b": session("access-token-door-b"),
        ])
        let transport = MockTransport(script: [.response(status: .ok), .response(status: .ok)])
        let accounts = AuthClient.accounts(
            tokenURL: URL(string: "https://auth.example.com/oauth/token")!, clientID: "backend", apiURL: Self.api,
            store: store, transport: transport)

        _ = try await accounts.get("/v1/reports", for: "user-b")
        _ = try await accounts.get("/v1/reports", for: "user-a")

        #expect(transport.requests.map(\.bearerToken) == ["access-token-door-b", "access-token-door-a"])
        #expect(accounts.registry.count == 2)
    }

    @Test func anAccountWithoutASessionFailsWithoutARequest() async throws {
        let transport = MockTransport()
        let accounts = AuthClient.accounts(
            tokenURL: URL(string: "https://auth.example.com/oauth/token")!, clientID: "backend", apiURL: Self.api,
            store: InMemoryTokenStore(), transport: transport)

        await #expect(throws: TokenRefreshError.signedOut) { try await accounts.get("/v1/reports", for: "nobody") }
        #expect(transport.requests.isEmpty)
    }

    @Test func aVerifyingBackendRejectsARequestWithoutATokenBeforeFetchingKeys() async {
        let authenticator = BearerAuthenticator.jwks(
            URL(string: "https://issuer.invalid/.well-known/jwks.json")!, issuer: "https://issuer.invalid",
            audience: .oneOf(["https://api.example.com"]))

        for header in [nil, "Basic YWRhOnB3", "Bearer not-a-jwt"] {
            guard case .rejected(let answer) = await authenticator.authenticate(authorization: header) else {
                Issue.record("accepted a request without a valid token")
                continue
            }
            #expect(answer.status == 401)
        }
    }
}
