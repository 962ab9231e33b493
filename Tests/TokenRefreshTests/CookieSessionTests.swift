import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitScreens
import TokenKitTesting

@testable import TokenRefresh

/// Cookie sessions (BetterAuth): parsing, presentation, launch validation, one check for many 401s.
@Suite(.logLeakCheck()) struct CookieSessionTests {
    static let cookieName = "better-auth.session_token"
    static let base = URL(string: "https://api.example.com")!
    static let origin = HTTPOrigin(string: "https://api.example.com")!

    // MARK: Set-Cookie parsing

    @Test func aSessionCookieIsParsedWithItsAttributes() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let cookie = try SetCookie(
            parsing: "better-auth.session_token=cookie-value-x10; Max-Age=604800; Domain=example.com; Path=/api; "
                + "Secure; HttpOnly; SameSite=Lax; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
            requestHost: "api.example.com", requestIsSecure: true, now: now)
        #expect(cookie.name == Self.cookieName)
        #expect(cookie.value == "cookie-value-x10")
        #expect(cookie.expiresAt == now.addingTimeInterval(604_800))  // Max-Age wins over Expires
        #expect(cookie.domain == "example.com")
        #expect(cookie.includesSubdomains)
        #expect(cookie.path == "/api")
        #expect(cookie.isSecure && cookie.isHTTPOnly)
        #expect(cookie.sameSite == "Lax")
        #expect(!cookie.description.contains("cookie-value-x10"))
    }

    @Test func anExpiresDateIsReadWhenThereIsNoMaxAge() throws {
        let cookie = try SetCookie(
            parsing: "sid=cookie-value-x11; Expires=Wed, 21 Oct 2015 07:28:00 GMT", requestHost: "example.com",
            requestIsSecure: true, now: Date())
        #expect(cookie.expiresAt == Date(timeIntervalSince1970: 1_445_412_480))
        #expect(cookie.isExpired(at: Date()))
    }

    @Test(arguments: [
        ("huge value", "sid=" + String(repeating: "v", count: 5000), SetCookie.Refusal.tooLarge),
        ("control character", "sid=cookie\u{01}value-x12", .invalidCharacters),
        ("separator in name", "s(id=cookie-value-x12", .invalidCharacters),
        ("no pair", "just-a-value", .malformed),
        ("empty name", "=cookie-value-x12", .malformed),
        ("other domain", "sid=cookie-value-x12; Domain=evil.example.net", .foreignDomain),
        ("sibling domain", "sid=cookie-value-x12; Domain=other.example.com", .foreignDomain),
    ])
    func aHostileSetCookieIsRefusedWithItsReason(_ name: String, _ field: String, _ refusal: SetCookie.Refusal) {
        #expect(throws: refusal, "\(name)") {
            try SetCookie(parsing: field, requestHost: "api.example.com", requestIsSecure: true, now: Date())
        }
    }

    @Test(arguments: [
        ("api.example.com", "example.com", "example.com", true),
        ("api.example.com", "api.example.com", "api.example.com", true),
        ("localhost", "localhost", "localhost", false),
        ("app.linnefromice.workers.dev", "linnefromice.workers.dev", "linnefromice.workers.dev", true),
        ("shop.example.co.uk", "example.co.uk", "example.co.uk", true),
        ("127.0.0.1", "127.0.0.1", "127.0.0.1", false),
    ])
    func aDomainOfTheHostOrAParentThatIsNoPublicSuffixIsKept(
        _ host: String, _ attribute: String, _ domain: String, _ subdomains: Bool
    ) throws {
        let cookie = try SetCookie(
            parsing: "sid=cookie-value-x15; Domain=\(attribute)", requestHost: host, requestIsSecure: true, now: Date())
        #expect(cookie.domain == domain)
        #expect(cookie.includesSubdomains == subdomains)
    }

    @Test func anIPAddressHostAcceptsNoOtherDomain() {
        #expect(throws: SetCookie.Refusal.foreignDomain) {
            try SetCookie(
                parsing: "sid=cookie-value-x16; Domain=0.0.1", requestHost: "127.0.0.1", requestIsSecure: true,
                now: Date())
        }
    }

    @Test func aCookieScopeMatchesItsDomainPathAndSecureFlagOnly() {
        func request(_ scheme: String, _ authority: String, _ path: String) -> HTTPRequest {
            HTTPRequest(method: .get, scheme: scheme, authority: authority, path: path)
        }
        let scope = CookieScope(domain: "example.com", includesSubdomains: true, path: "/api", isSecure: true)
        #expect(scope.matches(request("https", "www.example.com", "/api/me?x=1")))
        #expect(scope.matches(request("https", "example.com", "/api")))
        #expect(!scope.matches(request("https", "example.com", "/apiary")))
        #expect(!scope.matches(request("https", "badexample.com", "/api")))
        #expect(!scope.matches(request("http", "www.example.com", "/api")))
        let hostOnly = CookieScope(domain: "localhost", path: "/", isSecure: true)
        #expect(hostOnly.matches(request("http", "localhost:8080", "/data")))
        #expect(!hostOnly.matches(request("http", "sub.localhost", "/data")))
    }

    @Test func aParentDomainCookieGoesToAnotherAllowedSubdomain() async throws {
        let server = Server()
        let transport = MockTransport { request, _ in
            var headers = HTTPFields()
            if request.path == "/api/auth/sign-in/username" {
                headers[.setCookie] = "\(Self.cookieName)=\(server.cookieValue); Domain=example.com; Path=/; Secure"
            }
            return (HTTPResponse(status: .ok, headerFields: headers), Data(#"{"user":{"id":"auth-user-1"}}"#.utf8))
        }
        let strategy = CookieSessionStrategy(baseURL: Self.base, transport: transport)
        let client = TokenRefreshClient(strategy: strategy)
        try await client.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: Self.credentials))
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(
                allowedOrigins: [Self.origin, HTTPOrigin(string: "https://www.example.com")!],
                credentialPresentation: strategy.presentation))
        _ = try await api.executeWithAutoRetry(
            HTTPRequest(method: .get, scheme: "https", authority: "www.example.com", path: "/data"))
        #expect(transport.requests.last?.headerFields[.cookie] == "\(Self.cookieName)=\(server.cookieValue)")
    }

    @Test func aSecureCookieOverPlainHTTPIsRefused() {
        #expect(throws: SetCookie.Refusal.secureOverInsecureTransport) {
            try SetCookie(
                parsing: "sid=cookie-value-x13; Secure", requestHost: "api.example.com", requestIsSecure: false,
                now: Date())
        }
    }

    // MARK: A cookie session end to end over a scripted server

    /// A BetterAuth-like server: sign-in sets the cookie; get-session answers while `alive`; `/data` needs it.
    final class Server: Sendable {
        let alive = Locked(true)
        let checks = Locked(0)
        let cookieValue = "server-issued-cookie-x14"
        var transport: MockTransport {
            MockTransport { request, _ in
                let cookie = request.headerFields[.cookie] ?? ""
                let hasSession = cookie.contains("\(CookieSessionTests.cookieName)=\(self.cookieValue)")
                switch request.path {
                case "/api/auth/sign-in/username":
                    var headers = HTTPFields()
                    headers[.setCookie] =
                        "\(CookieSessionTests.cookieName)=\(self.cookieValue); Max-Age=604800; Path=/; HttpOnly; Secure; SameSite=Lax"
                    return (
                        HTTPResponse(status: .ok, headerFields: headers), Data(#"{"user":{"id":"auth-user-1"}}"#.utf8)
                    )
                case "/api/auth/get-session":
                    self.checks.withLock { $0 += 1 }
                    guard hasSession, self.alive.withLock({ $0 }) else {
                        return (HTTPResponse(status: .ok), Data("null".utf8))
                    }
                    return (
                        HTTPResponse(status: .ok),
                        Data(
                            #"{"session":{"expiresAt":"2027-01-20T00:00:00.000Z","userId":"auth-user-1"},"user":{"id":"auth-user-1","username":"alice"}}"#
                                .utf8)
                    )
                default:
                    guard hasSession, self.alive.withLock({ $0 }) else {
                        return (HTTPResponse(status: .unauthorized), Data())
                    }
                    return (HTTPResponse(status: .ok), Data("data".utf8))
                }
            }
        }
    }

    func client(
        _ server: Server, transport: MockTransport, store: any TokenStore = InMemoryTokenStore()
    )
        -> (TokenRefreshClient, CookieSessionStrategy, AuthenticatedClient)
    {
        let clock = ManualClock()
        let strategy = CookieSessionStrategy(baseURL: Self.base, transport: transport, now: clock.wallClock)
        // No retries: a connectivity failure answers at once (a retry would wait on the manual clock).
        let client = TokenRefreshClient(
            strategy: strategy, store: store, configuration: .init(backoff: .init(retries: 0)), clock: clock,
            now: clock.wallClock)
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(allowedOrigins: [Self.origin], credentialPresentation: strategy.presentation))
        return (client, strategy, api)
    }

    static let data = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/data")
    static let credentials = Data(#"{"username":"alice","password":"cookie-password-x14"}"#.utf8)

    @Test func signInCapturesTheCookieAndRequestsPresentItAsACookie() async throws {
        let server = Server()
        let transport = server.transport
        let (client, strategy, api) = client(server, transport: transport)
        try await client.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: Self.credentials))
        #expect(client.currentState == .signedIn(userID: "auth-user-1"))
        var request = Self.data
        request.headerFields[.cookie] = "theme=dark-mode-x14"
        let (response, _) = try await api.executeWithAutoRetry(request)
        #expect(response.status == .ok)
        let sent = try #require(transport.requests.last)
        #expect(sent.headerFields[.authorization] == nil)
        #expect(sent.headerFields[.cookie] == "theme=dark-mode-x14; \(Self.cookieName)=\(server.cookieValue)")
    }

    @Test func aSessionInvalidatedOnTheServerIsFoundAtLaunch() async throws {
        let server = Server()
        let transport = server.transport
        let store = InMemoryTokenStore()
        let (first, strategy, _) = client(server, transport: transport, store: store)
        try await first.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: Self.credentials))
        // A restart validated at launch: still there.
        let (second, _, _) = client(server, transport: transport, store: store)
        #expect(await second.restoreSession(validatingWithProvider: true) == .signedIn(userID: "auth-user-1"))
        // Logged out on another device; the next launch finds out.
        server.alive.withLock { $0 = false }
        let (third, _, _) = client(server, transport: transport, store: store)
        let events = third.events()
        #expect(await third.restoreSession(validatingWithProvider: true) == .signedOut)
        let ended = await firstSignedOut(events)
        #expect(ended?.reason == .invalidatedOnServer)
        if case .found = await store.load(account: "default") { Issue.record("the ended session is still stored") }
    }

    @Test func aNetworkErrorAtLaunchKeepsTheSessionAsExpired() async throws {
        let server = Server()
        let store = InMemoryTokenStore()
        let (first, strategy, _) = client(server, transport: server.transport, store: store)
        try await first.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: Self.credentials))
        let offline = MockTransport { _, _ in throw URLError(.notConnectedToInternet) }
        let (second, _, _) = client(server, transport: offline, store: store)
        #expect(await second.restoreSession(validatingWithProvider: true) == .expired(lastUserID: "auth-user-1"))
        guard case .found = await store.load(account: "default") else {
            Issue.record("the session was dropped")
            return
        }
    }

    @Test func manyConcurrent401sCauseOneSessionCheckAndEndTheSessionOnce() async throws {
        let server = Server()
        let transport = server.transport
        let (client, strategy, api) = client(server, transport: transport)
        try await client.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: Self.credentials))
        let events = client.events()
        server.alive.withLock { $0 = false }
        let errors = await withTaskGroup(of: (any Error)?.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        _ = try await api.executeWithAutoRetry(Self.data)
                        return nil
                    } catch { return error }
                }
            }
            return await group.reduce(into: [(any Error)?]()) { $0.append($1) }
        }
        #expect(
            errors.allSatisfy {
                ($0 as? TokenRefreshError) == .sessionInvalidated || ($0 as? TokenRefreshError) == .signedOut
            })
        #expect(server.checks.withLock { $0 } == 1)
        #expect(client.currentState == .signedOut)
        var signedOut = 0
        var reason: AuthEvent.SignOutReason?
        var iterator = events.makeAsyncIterator()
        while let event = await iterator.next() {
            if event.kind == .signedOut {
                signedOut += 1
                reason = event.reason
            }
            if signedOut == 1 { break }
        }
        #expect(signedOut == 1)
        // Found gone after a refused request: it expired in use (as an app's 401 handler sees it), not at a launch check.
        #expect(reason == .sessionExpired)
    }

    @Test func aRefusedSignInKeepsTheServersKnownReason() async throws {
        let transport = MockTransport { _, _ in
            (HTTPResponse(status: .unprocessableContent), Data(#"{"error": "Username already exists"}"#.utf8))
        }
        let strategy = CookieSessionStrategy(baseURL: Self.base, transport: transport)
        let client = TokenRefreshClient(strategy: strategy)
        let error = await #expect(throws: TokenRefreshError.signInRejected) {
            try await client.signIn(strategy.signIn(path: "/api/auth/sign-up/email", body: Self.credentials))
        }
        #expect((error?.underlying as? AuthServerError)?.kind == .usernameTaken)
        #expect(UserMessage(for: try #require(error)).key == .usernameTaken)
    }

    @Test func aCookieIsNeverPresentedAfterARedirectLeavesTheOrigin() async throws {
        let server = Server()
        let (client, strategy, _) = client(server, transport: server.transport)
        try await client.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: Self.credentials))
        var headers = HTTPFields()
        headers[.location] = "https://cdn.example.net/file"
        let hops = MockTransport(script: [.response(status: .found, headers: headers), .response(status: .ok)])
        let api = AuthenticatedClient(
            transport: hops, tokenProvider: client,
            configuration: .init(allowedOrigins: [Self.origin], credentialPresentation: strategy.presentation))
        _ = try await api.executeWithAutoRetry(Self.data)
        #expect(hops.requests[0].headerFields[.cookie] != nil)
        #expect(hops.requests[1].headerFields[.cookie] == nil)
    }

    // MARK: Validation helpers

    @Test func theSeedsFieldRulesReturnTypedReasons() {
        #expect(CredentialRules.check(username: "al") == [.tooShort(minimum: 3)])
        #expect(CredentialRules.check(username: String(repeating: "a", count: 21)) == [.tooLong(maximum: 20)])
        #expect(CredentialRules.check(username: "alice!") == [.invalidCharacters])
        #expect(CredentialRules.check(username: "alice_smith-2").isEmpty)
        #expect(CredentialRules.check(password: String(repeating: "s", count: 7)) == [.tooShort(minimum: 8)])
        #expect(CredentialRules.check(password: "long-enough").isEmpty)
        #expect(CredentialRules.check(email: "alice@example.com").isEmpty)
        #expect(CredentialRules.check(email: "alice@example") == [.invalidFormat])
        #expect(CredentialRules.check(email: "a lice@example.com") == [.invalidFormat])
        #expect(CredentialRules.check(displayName: "  ") == [.tooShort(minimum: 1)])
        #expect(CredentialRules.check(displayName: "山田太郎").isEmpty)
        #expect(CredentialRules.check(displayName: String(repeating: "x", count: 51)) == [.tooLong(maximum: 50)])
    }
}
