import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

extension Interop {
    /// Django's own session authentication (`django.contrib.sessions` + `django.contrib.auth`, not DOT) through
    /// TokenKit's cookie session: ``CookieSessionStrategy`` signs in at `/session/login` and checks the session at
    /// `/session/get-session`, and the ``AuthenticatedClient`` presents the `sessionid` cookie.
    ///
    /// Django's CSRF rules are the one thing TokenKit does not do: every unsafe request needs the `csrftoken`
    /// cookie, the same token in `X-CSRFToken`, and (Django 4+) a matching `Origin`. ``DjangoCSRFTransport`` does
    /// that below TokenKit, as an app's own transport would.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct DjangoSession {
        /// A prepared server without Django sessions, and a file store in a fresh directory (the caller removes it).
        static func freshServerAndFileStore() async throws -> (InteropServer, FileTokenStore, TemporaryDirectory) {
            let server = try await InteropServer.prepared()
            try await server.deleteDjangoSessions()
            let directory = TemporaryDirectory()
            return (server, FileTokenStore(directory: directory.storeDirectory), directory)
        }

        @Test func signInCallRestartAndServerSideDeletion() async throws {
            let (server, store, directory) = try await Self.freshServerAndFileStore()
            defer { directory.remove() }

            // Sign in through Django's login view (CSRF handled by the transport).
            let first = DjangoSessionStack(server, store: store)
            let token = try await first.signIn()
            TestSecrets.shared.register(token.accessToken, as: .credential)
            #expect(first.client.currentState == .signedIn(userID: Credentials.username))
            let stored = try #require(await storedSession(store))
            #expect(stored.token == token, "the session cookie is in the file store")
            #expect(stored.userID == Credentials.username)

            // The session-protected view, through AuthenticatedClient: a GET, and a CSRF-checked POST.
            let read = try await first.notes()
            #expect(read.status == 200)
            #expect(read.user == Credentials.username)
            #expect(read.notes == [])
            let written = try await first.addNote("written before the restart")
            #expect(written.status == 200)
            #expect(written.notes == ["written before the restart"])

            // Without the CSRF token Django refuses the same POST, session cookie or not.
            let refused = try await server.rawPost("/session/notes", cookie: "sessionid=" + token.accessToken)
            #expect(refused == 403, "Django's CsrfViewMiddleware refuses an unsafe request without the token")

            // A restart: a new client on the same store, validated with Django at launch.
            let second = DjangoSessionStack(server, store: store)
            #expect(await second.client.restoreSession(validatingWithProvider: true) == .signedIn(userID: "alice"))
            // Compared outside `#expect`, whose failure message would print the cookie.
            let sameCookie = second.client.currentToken?.accessToken == token.accessToken
            #expect(sameCookie, "the restored client presents the stored cookie")
            let afterRestart = try await second.notes()
            #expect(afterRestart.status == 200)
            #expect(afterRestart.notes == ["written before the restart"], "the same server-side session")

            var stats = try await server.stats()
            #expect(stats.sessionLogins == 1)
            #expect(stats.sessionChecksOK == 1, "one launch check")
            #expect(stats.sessionAPIOK == 3)
            #expect(stats.sessionAPIUnauthorized == 0)

            // Django deletes the session server-side: the next call's 401 leads to one session check, which ends
            // the session as expired in use (a launch check would say "invalidated on the server", below).
            let events = second.client.events()
            #expect(try await server.deleteDjangoSessions(user: Credentials.username) == 1)
            let error = await thrownError { try await second.notes() }
            #expect(error as? TokenRefreshError == .sessionInvalidated)
            let (signedOut, _) = await firstEvent(in: events) { $0.kind == .signedOut }
            #expect(signedOut?.reason == .sessionExpired)
            #expect(signedOut?.userID == Credentials.username)
            #expect(second.client.currentState == .signedOut)
            #expect(await isAbsent(store.load(account: "default")), "the store is empty")

            stats = try await server.stats()
            #expect(stats.sessionAPIUnauthorized == 1, "one 401, no retry after the check")
            #expect(stats.sessionChecksNull == 1, "one session check found it gone")
            #expect(stats.sessionAPIOK == 3)
        }

        @Test func launchValidationEndsASessionDjangoDeleted() async throws {
            let (server, store, directory) = try await Self.freshServerAndFileStore()
            defer { directory.remove() }

            let first = DjangoSessionStack(server, store: store)
            let token = try await first.signIn()
            TestSecrets.shared.register(token.accessToken, as: .credential)
            #expect(try await first.notes().status == 200)

            // Deleted while the app is not running; the next launch validates and finds it gone.
            #expect(try await server.deleteDjangoSessions(user: Credentials.username) == 1)
            let restarted = DjangoSessionStack(server, store: store)
            let events = restarted.client.events()
            #expect(await restarted.client.restoreSession(validatingWithProvider: true) == .signedOut)
            let (signedOut, _) = await firstEvent(in: events) { $0.kind == .signedOut }
            #expect(signedOut?.reason == .invalidatedOnServer)
            #expect(await isAbsent(store.load(account: "default")), "the store is empty")

            let stats = try await server.stats()
            #expect(stats.sessionChecksNull == 1)
            #expect(stats.sessionChecksOK == 0)
            #expect(stats.sessionAPIUnauthorized == 0, "no request was sent with the dead cookie")
        }

        @Test func wrongPasswordAndMissingCSRFAreRefused() async throws {
            let server = try await InteropServer.prepared()
            let stack = DjangoSessionStack(server, store: InMemoryTokenStore())

            let error = await thrownError { try await stack.signIn(password: "not-alice-interop-password") }
            #expect(error as? TokenRefreshError == .signInRejected)
            #expect(stack.client.currentState == .signedOut)

            // The login view itself is CSRF-protected: without the token it never checks the password.
            let body = #"{"username": "alice", "password": "not-alice-interop-password"}"#
            #expect(try await server.rawPost("/session/login", body: Data(body.utf8)) == 403)

            let stats = try await server.stats()
            #expect(stats.sessionLoginFailed == 1)
            #expect(stats.sessionLogins == 0)
        }
    }
}

/// A TokenKit cookie-session stack against the Django session views: strategy, refresh client, API client,
/// all over a ``DjangoCSRFTransport`` on a ``RecordingTransport``.
struct DjangoSessionStack {
    let server: InteropServer
    let transport: DjangoCSRFTransport
    let strategy: CookieSessionStrategy
    let client: TokenRefreshClient
    let api: AuthenticatedClient

    init(_ server: InteropServer, store: any TokenStore, followsRedirects: Bool = true) {
        self.server = server
        transport = DjangoCSRFTransport(RecordingTransport(server.transport), server: server)
        strategy = CookieSessionStrategy(
            baseURL: server.baseURL, cookieName: "sessionid", sessionPath: "/session/get-session",
            transport: transport)
        client = TokenRefreshClient(strategy: strategy, store: store)
        api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(
                allowedOrigins: [server.origin], followsRedirects: followsRedirects,
                credentialPresentation: strategy.presentation))
    }

    /// Signs alice in through Django's login view (JSON body); the `sessionid` cookie is captured by TokenKit.
    @discardableResult
    func signIn(password: String = Credentials.password) async throws -> AuthToken {
        let body = try JSONSerialization.data(withJSONObject: ["username": Credentials.username, "password": password])
        return try await client.signIn(strategy.signIn(path: "/session/login", body: body))
    }

    /// `GET /session/notes` through `executeWithAutoRetry`.
    func notes() async throws -> (status: Int, user: String?, notes: [String]?) {
        let (response, body) = try await api.executeWithAutoRetry(server.request(.get, "/session/notes"))
        return Self.parse(response, body)
    }

    /// `POST /session/notes {"note": note}` through `executeWithAutoRetry` (CSRF-checked by Django).
    func addNote(_ note: String) async throws -> (status: Int, user: String?, notes: [String]?) {
        var request = server.request(.post, "/session/notes")
        request.headerFields[.contentType] = "application/json"
        let body = try JSONSerialization.data(withJSONObject: ["note": note])
        let (response, data) = try await api.executeWithAutoRetry(request, body: body)
        return Self.parse(response, data)
    }

    private static func parse(_ response: HTTPResponse, _ body: Data) -> (Int, String?, [String]?) {
        let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        return (response.status.code, object?["user"] as? String, object?["notes"] as? [String])
    }
}

/// Django's CSRF protection, handled the way a non-browser client must: before the first unsafe request, get the
/// `csrftoken` cookie (`GET /session/csrf`); on every unsafe request send it back as a cookie, the same value in
/// `X-CSRFToken`, and the server's own `Origin` and `Referer`; keep the token Django rotates at login.
///
/// It sits below TokenKit, as an app's transport would: ``CookieSessionStrategy`` and ``AuthenticatedClient`` have no
/// hook for extra per-request headers, and cookies other than the session's are the app's business.
final class DjangoCSRFTransport: HTTPTransport {
    static let csrfHeader = HTTPField.Name("X-CSRFToken")!
    static let originHeader = HTTPField.Name("Origin")!
    static let refererHeader = HTTPField.Name("Referer")!

    private let base: any HTTPTransport
    private let server: InteropServer
    private let token = Locked<String?>(nil)

    init(_ base: any HTTPTransport, server: InteropServer) {
        self.base = base
        self.server = server
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var request = request
        if ![.get, .head, .options, .trace].contains(request.method) {
            let csrf = try await csrfToken()
            let cookie = "csrftoken=" + csrf
            if let cookies = request.headerFields[.cookie] {
                request.headerFields[.cookie] = cookies + "; " + cookie
            } else {
                request.headerFields[.cookie] = cookie
            }
            request.headerFields[Self.csrfHeader] = csrf
            request.headerFields[Self.originHeader] = server.baseURL.absoluteString
            request.headerFields[Self.refererHeader] = server.baseURL.absoluteString + "/"
        }
        let (response, data) = try await base.send(request, body: body)
        remember(response)
        return (response, data)
    }

    private func csrfToken() async throws -> String {
        if let current = token.withLock({ $0 }) { return current }
        let (response, _) = try await base.send(server.request(.get, "/session/csrf"), body: nil)
        remember(response)
        guard let current = token.withLock({ $0 }) else {
            throw InteropHarnessError(description: "/session/csrf set no csrftoken cookie")
        }
        return current
    }

    private func remember(_ response: HTTPResponse) {
        for field in response.headerFields[values: .setCookie] {
            guard
                let cookie = try? SetCookie(
                    parsing: field, requestHost: server.origin.host, requestIsSecure: false, now: Date()),
                cookie.name == "csrftoken", !cookie.value.isEmpty
            else { continue }
            TestSecrets.shared.register(cookie.value, as: .credential)
            token.withLock { $0 = cookie.value }
        }
    }
}

extension InteropServer {
    /// The status of an unsafe `POST` sent outside TokenKit, with `cookie` and `body` but no CSRF token.
    func rawPost(_ path: String, cookie: String? = nil, body: Data = Data("{}".utf8)) async throws -> Int {
        var request = self.request(.post, path)
        request.headerFields[.contentType] = "application/json"
        if let cookie { request.headerFields[.cookie] = cookie }
        let (response, _) = try await transport.send(request, body: body)
        return response.status.code
    }
}
