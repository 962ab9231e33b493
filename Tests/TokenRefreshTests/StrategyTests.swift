import AuthToken
import Foundation
import HTTPTypes
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

@Suite(.logLeakCheck()) struct StrategyTests {
    private static let success =
        #"{"access_token":"new-access","token_type":"bearer","expires_in":3600,"refresh_token":"new-refresh","scope":"read"}"#

    private func form(_ body: Data?) -> [String: String] {
        let pairs = FormEncoding.decode(String(decoding: body ?? Data(), as: UTF8.self)) ?? []
        return Dictionary(pairs, uniquingKeysWith: { $1 })
    }

    @Test func theRefreshTokenGrantIsFormEncodedWithBasicClientAuthentication() async throws {
        let transport = fixedResponse(body: Self.success)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "my app", secret: "s3cr&t-value"), transport: transport)
        let response = try await OAuthRefreshStrategy(endpoint: endpoint, scope: "read write").refresh(
            using: "refresh/1+2")
        #expect(response.accessToken == "new-access")
        #expect(response.tokenType == "Bearer")
        #expect(response.expiresIn == 3600)
        let sent = try #require(transport.requests.first)
        #expect(sent.request.method == .post)
        #expect(sent.request.path == "/oauth/token")
        #expect(sent.request.headerFields[.contentType] == "application/x-www-form-urlencoded")
        // RFC 6749 2.3.1: ID and secret are form-encoded, then joined and base64-encoded.
        #expect(
            sent.request.headerFields[.authorization] == "Basic "
                + Data("my%20app:s3cr%26t-value".utf8).base64EncodedString())
        let body = String(decoding: sent.body ?? Data(), as: UTF8.self)
        #expect(body == "grant_type=refresh_token&refresh_token=refresh%2F1%2B2&scope=read+write")
    }

    @Test func clientAuthenticationCanGoInTheBody() async throws {
        let transport = fixedResponse(body: Self.success)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "app", secret: "body-client-secret", authentication: .body),
            transport: transport
        )
        _ = try await OAuthRefreshStrategy(endpoint: endpoint).refresh(using: "refresh-token-rt")
        let sent = try #require(transport.requests.first)
        #expect(sent.request.headerFields[.authorization] == nil)
        let fields = form(sent.body)
        #expect(fields["client_id"] == "app")
        #expect(fields["client_secret"] == "body-client-secret")
        #expect(fields["refresh_token"] == "refresh-token-rt")
    }

    @Test func theJSONEndpointPostsTheRefreshTokenWithTheAPIKey() async throws {
        let transport = fixedResponse(
            body:
                #"{"data":{"access_token":"json-access-token","refresh_token":"json-refresh-token","expires_in":"900"}}"#
        )
        let strategy = JSONEndpointRefreshStrategy(
            baseURL: apiBaseURL, apiKey: "api-key-number-1", transport: transport)
        let response = try await strategy.refresh(using: "old-refresh")
        #expect(response.accessToken == "json-access-token")
        #expect(response.refreshToken == "json-refresh-token")
        #expect(response.expiresIn == 900)
        let sent = try #require(transport.requests.first)
        #expect(sent.request.path == "/api/v1/auth/refresh")
        #expect(sent.request.headerFields[HTTPField.Name("X-API-Key")!] == "api-key-number-1")
        #expect(sent.request.headerFields[.contentType] == "application/json")
        let body = try JSONSerialization.jsonObject(with: sent.body ?? Data()) as? [String: String]
        #expect(body == ["refreshToken": "old-refresh"], "the FitIQ app's RefreshTokenRequest, default JSONEncoder")
    }

    @Test func theJSONEndpointBodyKeyCanBeSnakeCase() async throws {
        let transport = fixedResponse(body: #"{"accessToken":"camel-access-token","refreshToken":"camel-refresh"}"#)
        let strategy = JSONEndpointRefreshStrategy(
            baseURL: apiBaseURL, apiKey: "api-key-number-2", transport: transport,
            refreshTokenKey: JSONEndpointRefreshStrategy.snakeCaseRefreshTokenKey)
        let response = try await strategy.refresh(using: "old-snake-refresh")
        #expect(response.accessToken == "camel-access-token" && response.refreshToken == "camel-refresh")
        let sent = try #require(transport.requests.first)
        let body = try JSONSerialization.jsonObject(with: sent.body ?? Data()) as? [String: String]
        #expect(body == ["refresh_token": "old-snake-refresh"])
    }

    @Test func theJSONEndpointTellsARejectedRefreshTokenFromAWrongAPIKey() async throws {
        let rejected = JSONEndpointRefreshStrategy(
            baseURL: apiBaseURL, apiKey: "wrong-api-key",
            transport: fixedResponse(status: 401, body: #"{"error":"invalid token"}"#))
        await #expect(throws: TokenRefreshError.refreshTokenRejected) {
            try await rejected.refresh(using: "rejected-refresh-token")
        }
        let forbidden = JSONEndpointRefreshStrategy(
            baseURL: apiBaseURL, apiKey: "wrong-api-key", transport: fixedResponse(status: 403, body: "{}"))
        await #expect(throws: TokenRefreshError.configuration) {
            try await forbidden.refresh(using: "rejected-refresh-token")
        }
    }

    @Test func theJSONEndpointWorksAgainstTheSimulatedServer() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(configuration: .init(apiKey: "simulated-api-key"), now: clock.wallClock)
        let initial = await server.issueSession(userID: "u", receivedAt: clock.date.addingTimeInterval(-7200))
        let store = InMemoryTokenStore(sessions: [account: StoredSession(token: initial, userID: "u", generation: 1)])
        let client = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(baseURL: apiBaseURL, apiKey: "simulated-api-key", transport: server),
            store: store,
            clock: clock, now: clock.wallClock)
        let token = try await client.validToken()
        #expect(token.refreshToken != initial.refreshToken)
        #expect(await server.refreshCount == 1)
    }

    @Test func clientCredentialsNeedNoRefreshTokenAndNoPriorSession() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(
            configuration: .init(clientID: "backend", clientSecret: "backend-client-secret"), now: clock.wallClock)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "backend", secret: "backend-client-secret"), transport: server)
        let client = TokenRefreshClient(
            strategy: ClientCredentialsStrategy(endpoint: endpoint), clock: clock, now: clock.wallClock)
        let token = try await client.validToken()
        #expect(token.refreshToken == nil)
        #expect(client.currentState == .signedIn(userID: "backend"))
        clock.advance(by: .seconds(3600))
        let next = try await client.validToken()
        #expect(next != token)
        #expect(await server.tokenRequestCount == 2)
    }

    /// RFC 6749 section 2.3.1 form-encodes the ID and secret before HTTP Basic; a space goes as `%20`, which a
    /// server that percent-decodes the pair by RFC 3986 rules (keeping a `+`) reads as a space too.
    @Test func aSpaceInTheClientSecretReachesAServerThatKeepsPlusSigns() async throws {
        let clock = ManualClock()
        let secret = "backend secret+with spaces"
        TestSecrets.shared.register(secret, as: .clientSecret)
        let server = SimulatedTokenServer(
            configuration: .init(clientID: "back end", clientSecret: secret), now: clock.wallClock)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "back end", secret: secret), transport: server)
        let client = TokenRefreshClient(
            strategy: ClientCredentialsStrategy(endpoint: endpoint), clock: clock, now: clock.wallClock)
        let token = try await client.validToken()
        #expect(token.refreshToken == nil)
        #expect(await server.tokenRequestCount == 1)
    }

    @Test func aClosureStrategyHandsOutTokensFromAnSDK() async throws {
        let clock = ManualClock()
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy { refreshToken in
                #expect(refreshToken == nil)
                TestSecrets.shared.register("sdk-token-from-closure", as: .accessToken)
                return TokenResponse(accessToken: "sdk-token-from-closure", expiresIn: 60)
            }, clock: clock, now: clock.wallClock)
        #expect(try await client.validToken().accessToken == "sdk-token-from-closure")
    }

    @Test func thePasswordGrantSignsIn() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: server)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), clock: clock, now: clock.wallClock)
        await #expect(throws: TokenRefreshError.signInRejected) {
            try await client.signIn(.password(username: "alice", password: "wrong-password", at: endpoint))
        }
        #expect(client.currentState == .signedOut)
        let token = try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        #expect(client.currentState == .signedIn(userID: "alice"))
        #expect(try await client.validToken() == token)
    }

    @Test func theAuthorizationCodeExchangeSendsThePKCEVerifier() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: server)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), clock: clock, now: clock.wallClock)
        let pkce = PKCE.generate()
        let redirect = URL(string: "com.example.app:/callback")!
        let code = await server.authorizationCode(
            userID: "bob", codeChallenge: pkce.challenge, redirectURI: redirect.absoluteString)
        let wrong = PKCE.generate()
        await #expect(throws: TokenRefreshError.signInRejected) {
            try await client.signIn(.authorizationCode(code, redirectURI: redirect, pkce: wrong, at: endpoint))
        }
        let second = await server.authorizationCode(
            userID: "bob", codeChallenge: pkce.challenge, redirectURI: redirect.absoluteString)
        try await client.signIn(.authorizationCode(second, redirectURI: redirect, pkce: pkce, at: endpoint))
        #expect(client.currentState == .signedIn(userID: "bob"))
    }

    @Test func pkceMatchesTheRFC7636Example() throws {
        let pkce = try PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(throws: TokenRefreshError.invalidArgument) { try PKCE(verifier: "too-short-verifier") }
        #expect(PKCE.generate().verifier.count == 43)
    }

    @Test func theEndpointURLBecomesSchemeAuthorityAndEncodedPath() throws {
        let url = try #require(URL(string: "https://127.0.0.1:8443/a%20b/token?tenant=x"))
        let request = try HTTPRequest.post(url, headers: [:])
        #expect(request.scheme == "https")
        #expect(request.authority == "127.0.0.1:8443")
        #expect(request.path == "/a%20b/token?tenant=x")
        #expect(throws: TokenRefreshError.invalidArgument) {
            try HTTPRequest.post(URL(string: "/relative")!, headers: [:])
        }
    }
}
