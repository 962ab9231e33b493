import DemoAuthServer
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The BetterAuth-style routes (seed 004): sign-up, sign-in, get-session with its TTL and sliding renewal,
/// sign-out, revoking every session of a user, deleting the account, and the `{"error": ...}` texts.
@Suite("Cookie sessions (BetterAuth routes)", .logLeakCheck())
struct CookieSessionRouteTests {
    static let cookieName = "better-auth.session_token"
    static let password = "cookie-route-pass-1"

    /// Short lifetimes, driven by the test clock: 60 s sessions, renewed 10 s after the last renewal.
    static var configuration: DemoAuthServer.Configuration {
        var configuration = DemoAuthServer.Configuration()
        configuration.betterAuth = .init(sessionLifetime: .seconds(60), updateAge: .seconds(10))
        return configuration
    }

    @Test func signUpSetsAnHttpOnlySessionCookieThatGetSessionAccepts() async throws {
        let clock = TestWallClock()
        try await withCookieServer(clock: clock) { server, client in
            let reply = try await client.signUp("alice_1")
            #expect(reply.status == 200)
            let setCookie = try #require(reply.header("Set-Cookie"))
            #expect(setCookie.hasPrefix(Self.cookieName + "="))
            #expect(setCookie.contains("HttpOnly"))
            #expect(setCookie.contains("Max-Age=60"))
            #expect(setCookie.contains("SameSite=Lax"))
            #expect(!setCookie.contains("Secure"))  // plain http on loopback
            let user = try #require(try reply.json()["user"] as? [String: Any])
            #expect(user["username"] as? String == "alice_1")
            #expect(reply.body.count > 0 && !String(decoding: reply.body, as: UTF8.self).contains(reply.cookie ?? "-"))

            let session = try await client.getSession(cookie: reply.cookie)
            let object = try session.json()
            let sessionObject = try #require(object["session"] as? [String: Any])
            #expect(sessionObject["userId"] as? String == user["id"] as? String)
            #expect(sessionObject["expiresAt"] as? String == "2026-01-01T00:01:00.000Z")
            #expect(server.cookieSessionStats.signUps == 1)
            #expect(server.cookieSessionStats.sessionChecks == 1)
        }
    }

    @Test func getSessionWithoutAValidCookieAnswersNull() async throws {
        try await withCookieServer { _, client in
            for cookie in [nil, "not-a-session-cookie-x1"] {
                let reply = try await client.getSession(cookie: cookie)
                #expect(reply.status == 200)
                #expect(String(decoding: reply.body, as: UTF8.self) == "null")
            }
        }
    }

    @Test func aTakenUsernameAndWrongCredentialsAnswerTheSeedsErrorTexts() async throws {
        try await withCookieServer { server, client in
            _ = try await client.signUp("alice_2")
            let taken = try await client.signUp("ALICE_2", email: "second@example.com")
            #expect(taken.status == 422)
            #expect(taken.errorCode == "Username already exists")
            #expect(taken.header("Set-Cookie") == nil)

            let wrong = try await client.signIn("alice_2", password: "wrong-password-x2")
            #expect(wrong.status == 401)
            #expect(wrong.errorCode == "Invalid credentials")
            let unknown = try await client.signIn("nobody_here", password: Self.password)
            #expect(unknown.errorCode == "Invalid credentials")

            let right = try await client.signIn("alice_2", password: Self.password)
            #expect(right.status == 200 && right.cookie != nil)
            #expect(server.cookieSessionStats.refusals == 3)
            #expect(server.cookieSessionStats.signIns == 1)
        }
    }

    @Test(arguments: [
        ("al", "al@example.com", cookieRoutePassword, "Invalid username"),
        ("alice!", "x@example.com", cookieRoutePassword, "Invalid username"),
        ("alice_3", "alice3@example.com", "short-7", "Password too short"),
        ("alice_4", "not-an-email", cookieRoutePassword, "Invalid email"),
    ])
    func theServerChecksTheSeedsFieldRulesToo(
        username: String, email: String, password: String, error: String
    )
        async throws
    {
        try await withCookieServer { _, client in
            let reply = try await client.signUp(username, email: email, password: password)
            #expect(reply.status == 400)
            #expect(reply.errorCode == error)
        }
    }

    @Test func theSessionExpiresAfterItsLifetimeWithoutAnyCheck() async throws {
        let clock = TestWallClock()
        try await withCookieServer(clock: clock) { server, client in
            let cookie = try #require(try await client.signUp("alice_5").cookie)
            clock.advance(seconds: 60)
            let reply = try await client.getSession(cookie: cookie)
            #expect(String(decoding: reply.body, as: UTF8.self) == "null")
            let profile = try await client.send("GET", "/api/chat/profile", cookie: cookie)
            #expect(profile.status == 401)
            #expect(profile.errorCode == "Session expired")
            #expect(server.cookieSessionStats.sessionsEnded == 1)
            #expect(server.cookieSessionStats.unauthorized == 1)
        }
    }

    @Test func aCheckAfterUpdateAgeRenewsTheSessionAndSendsTheCookieAgain() async throws {
        let clock = TestWallClock()
        try await withCookieServer(clock: clock) { server, client in
            let cookie = try #require(try await client.signUp("alice_6").cookie)
            clock.advance(seconds: 5)
            let early = try await client.getSession(cookie: cookie)
            #expect(early.header("Set-Cookie") == nil)  // before updateAge: no renewal
            clock.advance(seconds: 50)  // 55 s after sign-up, 5 s before expiry
            let renewed = try await client.getSession(cookie: cookie)
            let setCookie = try #require(renewed.header("Set-Cookie"))
            #expect(renewed.cookie == cookie)
            #expect(setCookie.contains("Max-Age=60"))
            clock.advance(seconds: 30)  // past the first expiry, within the renewed one
            let still = try await client.send("GET", "/api/chat/profile", cookie: cookie)
            #expect(still.status == 200)
            #expect(server.cookieSessionStats.renewals == 2)  // the check, then the profile request 30 s later
        }
    }

    @Test func signOutEndsOnlyThatSession() async throws {
        try await withCookieServer { _, client in
            let phone = try #require(try await client.signUp("alice_7").cookie)
            let tablet = try #require(try await client.signIn("alice_7", password: Self.password).cookie)
            let out = try await client.send("POST", "/api/auth/sign-out", cookie: phone)
            #expect(out.status == 200)
            #expect(out.header("Set-Cookie")?.contains("Max-Age=0") == true)
            #expect(try await client.getSession(cookie: phone).body == Data("null".utf8))
            #expect(try await client.getSession(cookie: tablet).status == 200)
            #expect(try await client.getSession(cookie: tablet).body != Data("null".utf8))
        }
    }

    @Test func revokeSessionsEndsEverySessionOfTheUserAndNoOtherUsers() async throws {
        try await withCookieServer { server, client in
            let phone = try #require(try await client.signUp("alice_8").cookie)
            let tablet = try #require(try await client.signIn("alice_8", password: Self.password).cookie)
            let bob = try #require(try await client.signUp("bob_8").cookie)
            let revoke = try await client.send("POST", "/api/auth/revoke-sessions", cookie: tablet)
            #expect(revoke.status == 200)
            for cookie in [phone, tablet] {
                #expect(try await client.getSession(cookie: cookie).body == Data("null".utf8))
            }
            #expect(try await client.send("GET", "/api/chat/profile", cookie: bob).status == 200)
            let again = try await client.send("POST", "/api/auth/revoke-sessions", cookie: tablet)
            #expect(again.status == 401 && again.errorCode == "Session expired")
            #expect(server.cookieSessionStats.sessionsEnded == 2)
        }
    }

    @Test func deleteUserEndsItsSessionsAndItsCredentials() async throws {
        try await withCookieServer { server, client in
            let phone = try #require(try await client.signUp("alice_9").cookie)
            let tablet = try #require(try await client.signIn("alice_9", password: Self.password).cookie)
            #expect(server.cookieAccountID(username: "alice_9") != nil)
            #expect(try await client.send("POST", "/api/auth/delete-user", cookie: tablet).status == 200)
            #expect(try await client.send("GET", "/api/chat/profile", cookie: phone).status == 401)
            #expect(try await client.signIn("alice_9", password: Self.password).errorCode == "Invalid credentials")
            #expect(server.cookieAccountID(username: "alice_9") == nil)
        }
    }

    @Test func anAdministratorCanEndEveryCookieSessionOfAUser() async throws {
        try await withCookieServer { server, client in
            let cookie = try #require(try await client.signUp("alice_10").cookie)
            let id = try #require(server.cookieAccountID(username: "alice_10"))
            #expect(server.invalidateCookieSessions(userID: id) == 1)
            #expect(try await client.getSession(cookie: cookie).body == Data("null".utf8))
        }
    }

    @Test func theProfileNeedsTheCookieNotABearer() async throws {
        try await withCookieServer { _, client in
            let cookie = try #require(try await client.signUp("alice_11").cookie)
            let bearer = try await client.send(
                "GET", "/api/chat/profile", headers: ["Authorization": "Bearer " + cookie])
            #expect(bearer.status == 401)
            let withOthers = try await client.send(
                "GET", "/api/chat/profile", headers: ["Cookie": "theme=dark-mode-x11; \(Self.cookieName)=\(cookie)"])
            #expect(withOthers.status == 200)
            let object = try withOthers.json()
            #expect((object["chat_user"] as? [String: Any])?["displayName"] as? String == "alice_11")
        }
    }

    @Test func debugCookieStatsAreServed() async throws {
        try await withCookieServer { _, client in
            _ = try await client.signUp("alice_12")
            let stats = try JSONDecoder().decode(
                DemoAuthServer.CookieSessionStats.self, from: try await client.send("GET", "/debug/cookie-stats").body)
            #expect(stats.signUps == 1)
        }
    }
}

let cookieRoutePassword = CookieSessionRouteTests.password

/// A client with cookies off (nothing stored or sent by URLSession): each test says which cookie it sends.
struct CookieTestClient: Sendable {
    let baseURL: URL
    let session: URLSession

    init(baseURL: URL) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        session = URLSession(configuration: configuration)
    }

    func send(
        _ method: String, _ path: String, cookie: String? = nil, headers: [String: String] = [:],
        json: [String: String]? = nil, registersBody: Bool = true
    ) async throws -> Reply {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        var headers = headers
        if let cookie {
            headers["Cookie"] = "\(CookieSessionRouteTests.cookieName)=\(cookie)"
            TestSecrets.shared.register(cookie, as: .credential, origin: "cookie sent")
        }
        for (name, value) in headers {
            request.setValue(value, forHTTPHeaderField: name)
            TestSecrets.shared.registerHeader(name: name, value: value, origin: "CookieTestClient request")
        }
        if let json {
            let body = try JSONSerialization.data(withJSONObject: json)
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            if registersBody {
                TestSecrets.shared.registerCredentials(inRequestBody: body, origin: "CookieTestClient request")
            }
        }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        let reply = Reply(status: http.statusCode, headers: Reply.headers(of: http), body: data)
        // Cookies are secrets too: the log check searches for every session cookie the server set.
        if let value = reply.cookie, !value.isEmpty {
            TestSecrets.shared.register(value, as: .credential, origin: "Set-Cookie")
        }
        return reply
    }

    func signUp(
        _ username: String, email: String? = nil, password: String = CookieSessionRouteTests.password
    ) async throws -> Reply {
        // A password too short to search the logs for (the server's own length rule) is not registered: the log
        // check would refuse it, and it is only ever refused.
        try await send(
            "POST", "/api/auth/sign-up/email",
            json: ["username": username, "email": email ?? "\(username)@example.com", "password": password],
            registersBody: password.utf8.count >= TestSecrets.minimumLength)
    }

    func signIn(_ username: String, password: String) async throws -> Reply {
        try await send("POST", "/api/auth/sign-in/username", json: ["username": username, "password": password])
    }

    func getSession(cookie: String?) async throws -> Reply {
        try await send("GET", "/api/auth/get-session", cookie: cookie)
    }
}

extension Reply {
    /// The session cookie's value in `Set-Cookie`, if one was set.
    var cookie: String? {
        guard let field = header("Set-Cookie"), field.hasPrefix(CookieSessionRouteTests.cookieName + "=") else {
            return nil
        }
        let pair = field.split(separator: ";", maxSplits: 1)[0]
        return String(pair.dropFirst(CookieSessionRouteTests.cookieName.count + 1))
    }
}

/// Starts a server with ``CookieSessionRouteTests/configuration`` and a cookie-less client.
func withCookieServer<T>(
    clock: TestWallClock = TestWallClock(), _ body: (DemoAuthServer, CookieTestClient) async throws -> T
) async throws -> T {
    let configuration = CookieSessionRouteTests.configuration
    TestSecrets.shared.registerSecrets(of: configuration)
    TestSecrets.shared.register(CookieSessionRouteTests.password, as: .password, origin: "cookie route tests")
    let server = DemoAuthServer(configuration: configuration, now: clock.now, logger: testLogger)
    let client = CookieTestClient(baseURL: try await server.start())
    defer { client.session.finishTasksAndInvalidate() }
    do {
        let result = try await body(server, client)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}
