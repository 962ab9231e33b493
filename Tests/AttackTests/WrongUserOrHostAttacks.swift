import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenRefresh

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// What an attacker tried to make TokenKit send a token to the wrong user or the wrong host: two users on one
// device, paths that rewrite the authority, encoded paths, redirects and dumps. Everything goes through the
// public API, with the FitIQ and Lume apps' call shapes where they have one.

/// The two users' API with opaque tokens: a FitIQ-style refresh endpoint (`POST /api/v1/auth/refresh`, rotating),
/// a profile (`GET /api/v1/profile`, answers "data of <user>") and uploads (`POST /api/v1/uploads`, answers
/// "stored for <user>"). A request can be held on the wire until the test releases it.
actor TwoUserBackend {
    struct Pair: Sendable {
        let access: String
        let refresh: String
    }

    static let apiKey = "two-user-api-key-value"
    static let baseURL = URL(string: "https://api.fitiq.test")!

    private var serial = 0
    private var accessOwner: [String: String] = [:]
    private var refreshOwner: [String: String] = [:]
    /// Uploads stored, as "user: body".
    private(set) var uploads: [String] = []
    /// Refreshes done, by user.
    private(set) var refreshes: [String] = []
    private var holdNext: String?
    /// Where the held request waits; a new closed one after each release.
    private var gate = HoldGate()

    init() {
        TestSecrets.shared.register(Self.apiKey, as: .credential)
    }

    func login(_ user: String) -> Pair {
        serial += 1
        let pair = Pair(access: "opaque-\(user)-access-\(serial)", refresh: "opaque-\(user)-refresh-\(serial)")
        TestSecrets.shared.register(pair.access, as: .accessToken)
        TestSecrets.shared.register(pair.refresh, as: .refreshToken)
        accessOwner[pair.access] = user
        refreshOwner[pair.refresh] = user
        return pair
    }

    /// Every access token of `user` stops working (it expired); the refresh token still works.
    func expireAccess(of user: String) { accessOwner = accessOwner.filter { $0.value != user } }

    /// Every token of `user` stops working (signed out on the server).
    func revoke(_ user: String) {
        accessOwner = accessOwner.filter { $0.value != user }
        refreshOwner = refreshOwner.filter { $0.value != user }
    }

    func owner(ofRefreshToken token: String?) -> String? { token.flatMap { refreshOwner[$0] } }
    func owner(ofAccessToken token: String?) -> String? { token.flatMap { accessOwner[$0] } }

    /// The next request to `path` waits until ``release()``.
    func hold(path: String) { holdNext = path }

    func waitUntilHeld() async {
        await gate.waitForArrivals(1)
    }

    func release() {
        let held = gate
        gate = HoldGate()
        held.open()
    }

    func handle(_ request: HTTPRequest, body: Data?) async -> (HTTPResponse, Data) {
        let path = request.path ?? "/"
        if path == holdNext {
            holdNext = nil
            await gate.wait()
        }
        if path == "/api/v1/auth/refresh" { return refresh(request, body: body) }
        let bearer = request.headerFields[.authorization].flatMap { value -> String? in
            value.hasPrefix("Bearer ") ? String(value.dropFirst(7)) : nil
        }
        guard let bearer, let user = accessOwner[bearer] else {
            return (
                HTTPResponse(
                    status: .unauthorized, headerFields: [.wwwAuthenticate: #"Bearer error="invalid_token""#]),
                Data()
            )
        }
        switch path {
        case "/api/v1/profile": return (HTTPResponse(status: .ok), Data("data of \(user)".utf8))
        case "/api/v1/uploads":
            uploads.append("\(user): " + String(decoding: body ?? Data(), as: UTF8.self))
            return (HTTPResponse(status: .ok), Data("stored for \(user)".utf8))
        default: return (HTTPResponse(status: .notFound), Data())
        }
    }

    private func refresh(_ request: HTTPRequest, body: Data?) -> (HTTPResponse, Data) {
        guard request.headerFields[HTTPField.Name("X-API-Key")!] == Self.apiKey else {
            return (HTTPResponse(status: .forbidden), Data())
        }
        guard let object = try? JSONSerialization.jsonObject(with: body ?? Data()) as? [String: Any],
            let presented = object["refreshToken"] as? String, let user = refreshOwner.removeValue(forKey: presented)
        else { return (HTTPResponse(status: .unauthorized), Data(#"{"error":"invalid refresh token"}"#.utf8)) }
        refreshes.append(user)
        let pair = login(user)
        let json = #"{"access_token":"\#(pair.access)","refresh_token":"\#(pair.refresh)","expires_in":3600}"#
        return (HTTPResponse(status: .ok), Data(json.utf8))
    }
}

/// FitIQ's Keychain adapter with its seven methods, in memory. `@unchecked Sendable`: `values` is only touched
/// while holding `lock`.
final class AppPersistence: AuthTokenPersistenceProtocol, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: String] = [:]

    func save(accessToken: String, refreshToken: String) throws {
        lock.withLock {
            values["accessToken"] = accessToken
            values["refreshToken"] = refreshToken
        }
    }
    func fetchAccessToken() throws -> String? { lock.withLock { values["accessToken"] } }
    func fetchRefreshToken() throws -> String? { lock.withLock { values["refreshToken"] } }
    func deleteTokens() throws {
        lock.withLock {
            values["accessToken"] = nil
            values["refreshToken"] = nil
        }
    }
    func saveUserProfileID(_ userID: UUID) throws { lock.withLock { values["userProfileID"] = userID.uuidString } }
    func fetchUserProfileID() throws -> UUID? { lock.withLock { values["userProfileID"].flatMap(UUID.init) } }
    func deleteUserProfileID() throws { lock.withLock { values["userProfileID"] = nil } }
}

/// The FitIQ app after the migration, with FitIQCore's call shapes.
struct FitIQApp {
    let backend = TwoUserBackend()
    let persistence = AppPersistence()
    let transport: MockTransport
    let networkClient: any NetworkClientProtocol
    let tokenRefreshClient: TokenRefreshClient

    init() {
        let backend = self.backend
        transport = MockTransport { request, body in await backend.handle(request, body: body) }
        networkClient = HTTPTransportNetworkClient(transport: transport)
        // No refresh timeout: the tests hold a refresh at the backend for as long as a loaded machine takes to run
        // their other steps, and a timed-out refresh is retried (another test's subject), which would add requests.
        tokenRefreshClient = TokenRefreshClient(
            networkClient: networkClient, baseURL: TwoUserBackend.baseURL, apiKey: TwoUserBackend.apiKey,
            configuration: .init(refreshTimeout: nil))
    }

    /// The app's own login code: the pair goes into its persistence.
    func logIn(_ user: String) async throws {
        let pair = await backend.login(user)
        try persistence.save(accessToken: pair.access, refreshToken: pair.refresh)
    }

    /// The app's own logout code.
    func logOut() throws { try persistence.deleteTokens() }

    func send(_ path: String, method: String = "GET", body: Data? = nil) async throws -> String {
        var request = URLRequest(url: TwoUserBackend.baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.httpBody = body
        if let accessToken = try persistence.fetchAccessToken() {
            request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
        }
        let (data, _) = try await networkClient.executeWithAutoRetry(
            request: request,
            tokenRefreshClient: tokenRefreshClient,
            authTokenPersistence: persistence
        )
        return String(decoding: data, as: UTF8.self)
    }
}

/// A `TokenRefreshClient` and an `AuthenticatedClient` over a `TwoUserBackend`, with the two users' sign-in and
/// Alice's upload as the tests below write them.
struct TwoUserRig {
    let backend = TwoUserBackend()
    let transport: MockTransport
    let tokens: TokenRefreshClient
    let api: AuthenticatedClient

    init() {
        let backend = self.backend
        transport = MockTransport { request, body in await backend.handle(request, body: body) }
        // No refresh timeout: a refresh is held at the backend while another user signs in, however slowly a loaded
        // machine runs that.
        tokens = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: TwoUserBackend.baseURL, apiKey: TwoUserBackend.apiKey, transport: transport),
            configuration: .init(refreshTimeout: nil))
        api = AuthenticatedClient(
            transport: transport, tokenProvider: tokens,
            configuration: .init(allowedOrigins: [HTTPOrigin(TwoUserBackend.baseURL)!]))
    }

    /// Logs `user` in at the backend and signs the pair into `client` (this rig's own client by default).
    @discardableResult
    func signIn(_ user: String, into client: TokenRefreshClient? = nil) async throws -> TwoUserBackend.Pair {
        let pair = await backend.login(user)
        try await (client ?? tokens).signIn(
            with: AuthToken(
                accessToken: pair.access, refreshToken: pair.refresh, receivedAt: AuthToken.systemNow(),
                lifetime: 3600),
            userID: user)
        return pair
    }

    /// Alice's upload through `api` (this rig's own by default).
    func upload(through api: AuthenticatedClient? = nil) async throws -> (HTTPResponse, Data) {
        try await (api ?? self.api).executeWithAutoRetry(
            HTTPRequest(method: .post, scheme: "https", authority: "api.fitiq.test", path: "/api/v1/uploads"),
            body: Data("alice's steps".utf8))
    }
}

/// A token provider that always hands out the same token.
private struct FixedTokenProvider: TokenProvider {
    let token: AuthToken
    func validToken() async throws -> AuthToken { token }
    func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken { token }
}

@Suite(.logLeakCheck()) struct WrongUserOrHostAttacks {
    // MARK: - Another user's session

    /// The app logs Alice in by itself, TokenKit refreshes her once, the app logs Alice out and Bob in by itself,
    /// then asks for a refresh with Bob's refresh token (the apps' stateless `refreshToken(_:)`).
    @Test func aRefreshTokenOfAnotherUserIsNeverAnsweredWithTheHeldSession() async throws {
        let app = FitIQApp()
        try await app.logIn("alice")
        await app.backend.expireAccess(of: "alice")
        #expect(try await app.send("/api/v1/profile") == "data of alice")
        #expect(await app.backend.refreshes == ["alice"])

        try app.logOut()
        try await app.logIn("bob")
        let bobsRefreshToken = try #require(try app.persistence.fetchRefreshToken())
        let newToken: AuthToken = try await app.tokenRefreshClient.refreshToken(bobsRefreshToken)
        #expect(await app.backend.owner(ofAccessToken: newToken.accessToken) == "bob")
        #expect(await app.backend.owner(ofRefreshToken: newToken.refreshToken) == "bob")
        #expect(await app.backend.refreshes == ["alice", "bob"])
    }

    /// The same, through the analysis's `executeWithAutoRetry`: Bob's expired token must be refreshed as Bob's,
    /// and Alice's pair must never be written into Bob's persistence.
    @Test func bobsExpiredTokenIsNeverAnsweredWithAlicesPairAfterTheAppSwitchedUsers() async throws {
        let app = FitIQApp()
        try await app.logIn("alice")
        await app.backend.expireAccess(of: "alice")
        #expect(try await app.send("/api/v1/profile") == "data of alice")

        try app.logOut()
        try await app.logIn("bob")
        await app.backend.expireAccess(of: "bob")
        #expect(try await app.send("/api/v1/profile") == "data of bob")
        #expect(await app.backend.owner(ofRefreshToken: try app.persistence.fetchRefreshToken()) == "bob")
        #expect(await app.backend.owner(ofAccessToken: try app.persistence.fetchAccessToken()) == "bob")
        // Bob's next requests go on as Bob, with one refresh for him.
        #expect(try await app.send("/api/v1/profile") == "data of bob")
        #expect(await app.backend.refreshes == ["alice", "bob"])
    }

    /// Alice's upload is on the wire; the app signs her out (the server revokes her tokens) and signs Bob in.
    @Test func aRequestStartedForAliceIsNeverReplayedWithBobsToken() async throws {
        let rig = TwoUserRig()
        let (backend, transport, tokens) = (rig.backend, rig.transport, rig.tokens)
        try await rig.signIn("alice")

        await backend.hold(path: "/api/v1/uploads")
        let upload = Task { try await rig.upload() }
        await backend.waitUntilHeld()
        try await tokens.signOut()
        await backend.revoke("alice")
        let bob = try await rig.signIn("bob")
        await backend.release()

        let outcome = await upload.result
        #expect(await backend.uploads.isEmpty, "nothing of Alice's was stored in anyone's account")
        #expect(throws: TokenRefreshError.sessionChanged) { try outcome.get() }
        #expect(transport.requests.filter { $0.bearerToken == bob.access }.isEmpty)
        #expect(tokens.currentToken?.accessToken == bob.access, "Bob's session is untouched")
    }

    /// The same through the FitIQ-compatible `executeWithAutoRetry`, when the app switches users by itself.
    @Test func aRequestStartedForAliceIsNeverReplayedWithBobsTokenThroughTheFitIQRetry() async throws {
        let app = FitIQApp()
        try await app.logIn("alice")
        await app.backend.hold(path: "/api/v1/uploads")
        let upload = Task { try await app.send("/api/v1/uploads", method: "POST", body: Data("alice's steps".utf8)) }
        await app.backend.waitUntilHeld()
        try app.logOut()
        await app.backend.revoke("alice")
        try await app.logIn("bob")
        let bobsAccess = try app.persistence.fetchAccessToken()
        await app.backend.release()

        let outcome = await upload.result
        #expect(await app.backend.uploads.isEmpty, "nothing of Alice's was stored in anyone's account")
        #expect(throws: TokenRefreshError.sessionChanged) { try outcome.get() }
        #expect(try app.persistence.fetchAccessToken() == bobsAccess, "Bob's pair is untouched")
    }

    /// Alice's request was refused and her refresh is on the wire when the app signs Bob in: the refresh must not
    /// be answered with Bob's token.
    @Test func aRefreshStartedForAliceIsNotAnsweredWithBobsSignIn() async throws {
        let rig = TwoUserRig()
        let (backend, transport) = (rig.backend, rig.transport)
        try await rig.signIn("alice")
        await backend.expireAccess(of: "alice")

        await backend.hold(path: "/api/v1/auth/refresh")
        let upload = Task { try await rig.upload() }
        await backend.waitUntilHeld()
        let bob = try await rig.signIn("bob")
        await backend.release()

        let outcome = await upload.result
        #expect(await backend.uploads.isEmpty, "nothing of Alice's was stored in anyone's account")
        #expect(throws: TokenRefreshError.sessionChanged) { try outcome.get() }
        #expect(transport.requests.filter { $0.bearerToken == bob.access }.isEmpty)
    }

    /// Two processes share one store: the other one signs Bob in while this one still holds Alice. Alice's refused
    /// request must not be answered with Bob's pair, which this process finds in the store before refreshing.
    @Test func aRefreshForAliceIsNotAnsweredWithBobsPairFromAnotherProcess() async throws {
        let rig = TwoUserRig()
        let (backend, transport) = (rig.backend, rig.transport)
        let store = InMemoryTokenStore()
        func process() -> TokenRefreshClient {
            TokenRefreshClient(
                strategy: JSONEndpointRefreshStrategy(
                    baseURL: TwoUserBackend.baseURL, apiKey: TwoUserBackend.apiKey, transport: transport),
                store: store)
        }
        let this = process()
        let other = process()
        try await rig.signIn("alice", into: this)
        let bob = try await rig.signIn("bob", into: other)
        await backend.expireAccess(of: "alice")

        let api = AuthenticatedClient(
            transport: transport, tokenProvider: this,
            configuration: .init(allowedOrigins: [HTTPOrigin(TwoUserBackend.baseURL)!]))
        await #expect(throws: TokenRefreshError.sessionChanged) { try await rig.upload(through: api) }
        #expect(await backend.uploads.isEmpty, "nothing of Alice's was stored in anyone's account")
        #expect(transport.requests.filter { $0.bearerToken == bob.access }.isEmpty)
    }

    // MARK: - Another host

    /// An `AuthenticatedClient` for `origin` over `transport`, handing out `accessToken` (registered as a secret).
    static func api(over transport: any HTTPTransport, accessToken: String, origin: String) -> AuthenticatedClient {
        TestSecrets.shared.register(accessToken, as: .accessToken)
        return AuthenticatedClient(
            transport: transport,
            tokenProvider: FixedTokenProvider(
                token: AuthToken(accessToken: accessToken, receivedAt: AuthToken.systemNow(), lifetime: 3600)),
            configuration: .init(allowedOrigins: [HTTPOrigin(string: origin)!]))
    }

    static let authorityRewritingPaths = ["@evil.example/x", ".evil.example/x", "@127.0.0.1:18082/x", "x", ""]

    /// The path is pasted after the authority by naive URL building: `https://api.example.com@evil.example/x`.
    @Test(arguments: authorityRewritingPaths)
    func aPathThatRewritesTheAuthorityIsRefusedBeforeSending(path: String) async throws {
        let transport = MockTransport(script: [.response(status: .ok)])
        let api = Self.api(over: transport, accessToken: "path-attack-access", origin: "https://api.example.com")
        await #expect(throws: NetworkRetryError.invalidRequest) {
            try await api.executeWithAutoRetry(
                HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: path))
        }
        #expect(transport.requests.isEmpty)
    }

    /// `*` is a request target for `OPTIONS` only.
    @Test func anAsteriskPathIsSentOnlyForOptions() async throws {
        let transport = MockTransport(script: [.response(status: .ok)])
        let api = Self.api(over: transport, accessToken: "asterisk-access", origin: "https://api.example.com")
        await #expect(throws: NetworkRetryError.invalidRequest) {
            try await api.executeWithAutoRetry(
                HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "*"))
        }
        _ = try await api.executeWithAutoRetry(
            HTTPRequest(method: .options, scheme: "https", authority: "api.example.com", path: "*"))
        #expect(transport.requests.count == 1)
    }

    /// Over a real transport, `@127.0.0.1:<other port>/x` after an allowed loopback origin reached the other port
    /// with the Bearer token, through ``AuthenticatedClient`` and through the transport alone.
    @Test func aPathThatRewritesTheAuthorityNeverReachesAnotherPort() async throws {
        let allowed = try LoopbackServer { _, _ in .init(status: 200) }
        let other = try LoopbackServer { _, _ in .init(status: 200, body: Data("other port".utf8)) }
        defer {
            allowed.stop()
            other.stop()
        }
        let transport = URLSessionTransport()
        let api = Self.api(
            over: transport, accessToken: "port-attack-access", origin: "http://127.0.0.1:\(allowed.port)")
        let request = HTTPRequest(
            method: .get, scheme: "http", authority: "127.0.0.1:\(allowed.port)", path: "@127.0.0.1:\(other.port)/x")
        await #expect(throws: NetworkRetryError.invalidRequest) { try await api.executeWithAutoRetry(request) }
        var direct = request
        direct.headerFields[.authorization] = "Bearer port-attack-access"
        await #expect(throws: NetworkRetryError.invalidRequest) { try await transport.send(direct, body: nil) }
        #expect(other.received.count == 0, "nothing reached the port that was not allowed")
        #expect(allowed.received.count == 0)
    }

    /// An encoded user name in the path of a FitIQ request must not be decoded into another endpoint.
    @Test func anEncodedPathIsNotDecodedIntoAnotherEndpoint() async throws {
        let transport = MockTransport(script: [.response(status: .ok)])
        let client = HTTPTransportNetworkClient(transport: transport)
        let encodedName = "..%2F..%2Fadmin%2Fdelete%3Fconfirm=1"
        let url = try #require(URL(string: "https://api.fitiq.test/api/v1/users/\(encodedName)?view=full%26more"))
        var request = URLRequest(url: url)
        request.setValue("Bearer encoded-path-access", forHTTPHeaderField: "Authorization")
        TestSecrets.shared.register("encoded-path-access", as: .accessToken)
        _ = try await client.executeRequest(request: request)
        #expect(transport.requests.first?.path == "/api/v1/users/\(encodedName)?view=full%26more")
    }

    // MARK: - Redirects

    /// A redirect to another origin must not carry the app's API key (nor any credential).
    @Test func aRedirectToAnotherOriginCarriesNoAPIKey() async throws {
        let transport = MockTransport(script: [
            .response(status: .found, headers: [.location: "https://cdn.evil.example/file"]),
            .response(status: .ok),
        ])
        let api = Self.api(over: transport, accessToken: "redirect-access", origin: "https://api.example.com")
        TestSecrets.shared.register("redirect-api-key-value", as: .credential)
        var request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/file")
        request.headerFields[HTTPField.Name("X-API-Key")!] = "redirect-api-key-value"
        _ = try await api.executeWithAutoRetry(request)
        let foreign = try #require(transport.requests.last)
        #expect(foreign.request.authority == "cdn.evil.example")
        #expect(foreign.request.headerFields[HTTPField.Name("X-API-Key")!] == nil)
        #expect(foreign.request.headerFields[.authorization] == nil)
    }

    /// A 307 to another origin must not replay a password body there.
    @Test(arguments: [HTTPResponse.Status.temporaryRedirect, .permanentRedirect])
    func aPasswordBodyIsNeverReplayedToAnotherOrigin(status: HTTPResponse.Status) async throws {
        let transport = MockTransport(script: [
            .response(status: status, headers: [.location: "https://evil.example/collect"]),
            .response(status: .ok),
        ])
        let api = Self.api(over: transport, accessToken: "replay-access", origin: "https://api.example.com")
        TestSecrets.shared.register("replayed password", as: .password)
        let body = Data(#"{"username":"alice","password":"replayed password"}"#.utf8)
        let (response, _) = try await api.executeWithAutoRetry(
            HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/api/auth/sign-in"),
            body: body)
        #expect(response.status == status, "the redirect is handed back, not followed")
        #expect(transport.requests.allSatisfy { $0.request.authority == "api.example.com" })
        #expect(transport.requests.count == 1)
    }

    // MARK: - Dumps

    /// `dump()` of every public type that holds a secret shows none of them.
    @Test func dumpingTypesThatHoldSecretsShowsNoSecret() async throws {
        let secrets = [
            "dump-access-value", "dump-refresh-value", "dump-api-key-value", "dump-client-secret-value",
            "dump-header-secret-value", "dump-cookie-secret-value", "dump-password-value",
        ]
        TestSecrets.shared.register("dump-access-value", as: .accessToken)
        TestSecrets.shared.register("dump-refresh-value", as: .refreshToken)
        TestSecrets.shared.register("dump-api-key-value", as: .credential)
        TestSecrets.shared.register("dump-client-secret-value", as: .clientSecret)
        TestSecrets.shared.register("dump-header-secret-value", as: .credential)
        TestSecrets.shared.register("dump-cookie-secret-value", as: .credential)
        TestSecrets.shared.register("dump-password-value", as: .password)
        let pkce = PKCE.generate()
        let transport = MockTransport()
        let url = URL(string: "https://api.example.com/oauth/token")!
        let endpoint = TokenEndpoint(
            url: url, client: OAuthClient(id: "app", secret: "dump-client-secret-value"), transport: transport,
            additionalHeaders: [HTTPField.Name("X-Tenant-Key")!: "dump-header-secret-value"])
        let json = JSONEndpointRefreshStrategy(
            baseURL: URL(string: "https://api.example.com")!, apiKey: "dump-api-key-value", transport: transport)
        let cookie = try SetCookie(
            parsing: "session=dump-cookie-secret-value; Path=/; Secure; HttpOnly", requestHost: "api.example.com",
            requestIsSecure: true, now: Date())
        let token = AuthToken(
            accessToken: "dump-access-value", refreshToken: "dump-refresh-value", receivedAt: AuthToken.systemNow(),
            lifetime: 60)
        let values: [Any] = [
            pkce, cookie, json, endpoint, OAuthRefreshStrategy(endpoint: endpoint),
            ClientCredentialsStrategy(endpoint: endpoint), endpoint.client,
            SignInGrant.password(username: "alice", password: "dump-password-value", at: endpoint),
            TokenRevocation.rfc7009(url: url, using: endpoint), token,
            StoredSession(token: token, userID: "alice", generation: 1),
            TokenResponse(accessToken: "dump-access-value", refreshToken: "dump-refresh-value"),
            CredentialPresentation.cookie(named: "session"),
            SimulatedTokenServer.Configuration(
                clientSecret: "dump-client-secret-value", apiKey: "dump-api-key-value",
                users: ["alice": "dump-password-value"]),
        ]
        let recorder = MockTransport(script: [.response(status: .ok)])
        var request = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/x")
        request.headerFields[.authorization] = "Bearer dump-access-value"
        request.headerFields[HTTPField.Name("X-API-Key")!] = "dump-api-key-value"
        _ = try await recorder.send(request, body: Data("password=dump-password-value".utf8))
        for value in values + [recorder, try #require(recorder.requests.first)] {
            var dumped = ""
            dump(value, to: &dumped)
            for secret in secrets + [pkce.verifier] {
                #expect(!dumped.contains(secret), "dump of \(type(of: value)) shows a secret")
            }
        }
    }
}
