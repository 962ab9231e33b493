import Foundation
import HTTPTypes
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

/// The one-screen setup: each kind of app gets to its first authenticated request in two calls, over the same
/// types as the full composition.
@Suite(.logLeakCheck()) struct AuthClientTests {
    /// Token requests go to the simulated server; API requests are answered 200 with the bearer token they
    /// carried, counted, or 401 without one.
    actor Router: HTTPTransport {
        let server: SimulatedTokenServer
        private(set) var apiAuthorizations: [String] = []

        init(server: SimulatedTokenServer) { self.server = server }

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            if request.authority == "auth.example.com" || request.path?.hasPrefix("/api/v1/auth/") == true {
                return try await server.send(request, body: body)
            }
            guard let authorization = request.headerFields[.authorization] else {
                return (HTTPResponse(status: .unauthorized), Data())
            }
            apiAuthorizations.append(authorization)
            return (HTTPResponse(status: .ok), Data(#"{"id":"alice"}"#.utf8))
        }
    }

    @Test func anOAuthAppSignsInAndCallsTheAPIInTwoCalls() async throws {
        let clock = ManualClock()
        let router = Router(server: SimulatedTokenServer(now: clock.wallClock))
        let client = AuthClient.oauth(
            tokenURL: URL(string: "https://auth.example.com/oauth/token")!, clientID: "app",
            apiURL: URL(string: "https://api.example.com")!, appName: "AuthClientTests",
            store: InMemoryTokenStore(), transport: router)
        try await client.signIn(username: "alice", password: "correct horse")
        let (response, body) = try await client.get("/v1/me")
        #expect(response.status == .ok)
        #expect(String(decoding: body, as: UTF8.self) == #"{"id":"alice"}"#)
        let token = try #require(client.tokens.currentToken)
        #expect(await router.apiAuthorizations == ["Bearer \(token.accessToken)"])
        #expect(client.tokens.currentState == .signedIn(userID: "alice"))
    }

    @Test func serverTimeOnLearnsTheServersClockFromTheTokenEndpoint() async throws {
        let clock = ManualClock()
        let router = Router(
            server: SimulatedTokenServer(configuration: .init(omitsLifetime: true), now: clock.wallClock))
        let serverClock = ServerClock(deviceNow: { clock.date.addingTimeInterval(3600) })
        let client = AuthClient.oauth(
            tokenURL: URL(string: "https://auth.example.com/oauth/token")!, clientID: "app",
            apiURL: URL(string: "https://api.example.com")!, appName: "AuthClientTests",
            store: InMemoryTokenStore(), transport: router, configuration: .init(serverClock: serverClock),
            serverTime: true)
        try await client.signIn(username: "alice", password: "correct horse")
        #expect(abs(serverClock.offset + 3600) <= 1, "offset \(serverClock.offset)")
        #expect(client.tokens.configuration.serverClock === serverClock)
        // The token's only expiry is its exp, an hour from now by the server's clock: fresh, not expired.
        #expect(client.tokens.currentState == .signedIn(userID: "alice"))
        #expect(client.tokens.freshToken() != nil)
        let offset = try #require(client.tokens.sessionJournal().last?.serverTimeOffset)
        #expect(abs(offset + 3600) <= 1)
    }

    @Test func serverTimeIsOffUnlessAskedFor() {
        let made = { (serverTime: Bool) in
            AuthClient.oauth(
                tokenURL: URL(string: "https://auth.example.com/oauth/token")!, clientID: "app",
                apiURL: URL(string: "https://api.example.com")!, appName: "AuthClientTests",
                store: InMemoryTokenStore(), transport: MockTransport(script: []), serverTime: serverTime)
        }
        #expect(made(false).tokens.configuration.serverClock == nil)
        #expect(made(true).tokens.configuration.serverClock != nil)
        #expect(made(false).tokens.sessionJournal().allSatisfy { $0.serverTimeOffset == nil })
    }

    @Test func aFitIQAppSignsInWithJSONAndRefreshesAtTheJSONEndpoint() async throws {
        let mock = MockTransport { request, _ in
            switch request.path {
            case "/api/v1/auth/login":
                let json =
                    #"{"data":{"accessToken":"fitiq-access-login-5e2a","refreshToken":"fitiq-refresh-login-5e2a","expiresIn":3600}}"#
                return (HTTPResponse(status: .ok), Data(json.utf8))
            case "/api/v1/auth/refresh":
                let json = #"{"access_token":"fitiq-access-renewed-5e2a","refresh_token":"fitiq-refresh-renewed-5e2a"}"#
                return (HTTPResponse(status: .ok), Data(json.utf8))
            default:
                let bearer = request.headerFields[.authorization]
                let fresh = bearer == "Bearer fitiq-access-renewed-5e2a"
                return (HTTPResponse(status: fresh ? .ok : .unauthorized), Data())
            }
        }
        let client = AuthClient.fitIQ(
            baseURL: URL(string: "https://fitiq.example.com")!, apiKey: "api-key-fitiq-3b1c",
            appName: "AuthClientTests", store: InMemoryTokenStore(), transport: mock)
        try await client.signIn(username: "ada@example.com", password: "fitiq-password-77d0")
        let (response, _) = try await client.get("/api/v1/progress")
        #expect(response.status == .ok)

        let requests = mock.requests
        #expect(
            requests.map { $0.path ?? "" } == [
                "/api/v1/auth/login", "/api/v1/progress", "/api/v1/auth/refresh", "/api/v1/progress",
            ])
        let login = try #require(requests.first)
        #expect(login.headerFields[HTTPField.Name("X-API-Key")!] == "api-key-fitiq-3b1c")
        let credentials = try JSONDecoder().decode([String: String].self, from: try #require(login.body))
        #expect(credentials == ["email": "ada@example.com", "password": "fitiq-password-77d0"])
        let refresh = try JSONDecoder().decode([String: String].self, from: try #require(requests[2].body))
        #expect(refresh == ["refreshToken": "fitiq-refresh-login-5e2a"])
    }

    /// FitIQ's login endpoint answers a wrong password with `401 {"error": "invalid_credentials"}`: a rejected
    /// sign-in that reads as one, like the OAuth path's `invalid_grant`.
    @Test func aWrongFitIQPasswordIsARejectedSignInThatReadsAsOne() async throws {
        let mock = MockTransport { _, _ in
            let json = #"{"error":"invalid_credentials","message":"Invalid email or password"}"#
            return (HTTPResponse(status: .unauthorized), Data(json.utf8))
        }
        let client = AuthClient.fitIQ(
            baseURL: URL(string: "https://fitiq.example.com")!, apiKey: "api-key-fitiq-3b1c",
            appName: "AuthClientTests", store: InMemoryTokenStore(), transport: mock)
        let error = await #expect(throws: TokenRefreshError.self) {
            try await client.signIn(username: "ada@example.com", password: "wrong-fitiq-password-19e4")
        }
        let rejected = try #require(error)
        #expect(rejected == .signInRejected)
        #expect(rejected.status == 401)
        #expect(rejected.oauthError == "invalid_credentials")
        #expect(rejected.localizedDescription == TokenRefreshError.signInRejected.localizedDescription)
        #expect(UserMessage(for: rejected).key == .invalidCredentials)
        #expect(client.tokens.currentState == .signedOut)
    }

    @Test func aClientCredentialsBackendNeedsNoSignIn() async throws {
        let mock = MockTransport { request, _ in
            if request.path == "/oauth/token" {
                let json = #"{"access_token":"service-access-cc-0a9f","token_type":"Bearer","expires_in":3600}"#
                return (HTTPResponse(status: .ok), Data(json.utf8))
            }
            let authorized = request.headerFields[.authorization] == "Bearer service-access-cc-0a9f"
            return (HTTPResponse(status: authorized ? .ok : .unauthorized), Data())
        }
        let client = AuthClient.clientCredentials(
            tokenURL: URL(string: "https://auth.example.com/oauth/token")!, clientID: "reports",
            clientSecret: "service-secret-cc-0a9f", apiURL: URL(string: "https://api.example.com/v2/")!,
            transport: mock)
        let (response, _) = try await client.get("reports")
        #expect(response.status == .ok)
        #expect(mock.requests.map { $0.path ?? "" } == ["/oauth/token", "/v2/reports"])
        await #expect(throws: TokenRefreshError.invalidArgument) {
            try await client.signIn(username: "nobody", password: "no-password-here-1")
        }
    }

    @Test func theDefaultStoreFollowsXDGOnLinuxAndApplicationSupportOnApplePlatforms() {
        let xdg = FileTokenStore.defaultDirectory(
            appName: "MyApp", environment: ["XDG_DATA_HOME": "/srv/data", "HOME": "/home/ada"])
        let home = FileTokenStore.defaultDirectory(appName: "MyApp", environment: ["HOME": "/home/ada"])
        let relative = FileTokenStore.defaultDirectory(
            appName: "a/b", environment: ["XDG_DATA_HOME": "data", "HOME": "/home/ada"])
        #if canImport(Darwin)
            #expect(xdg.path.hasSuffix("Application Support/MyApp/Sessions"))
            #expect(home == xdg)
            #expect(relative.path.hasSuffix("Application Support/a_b/Sessions"))
        #else
            #expect(xdg.path == "/srv/data/MyApp/sessions")
            #expect(home.path == "/home/ada/.local/share/MyApp/sessions")
            #expect(relative.path == "/home/ada/.local/share/a_b/sessions")
        #endif
        #expect(FileTokenStore(appName: "MyApp").directory.lastPathComponent.lowercased() == "sessions")
    }
}
