import DemoAuthServer
import Foundation
import HTTPTypes
import Synchronization
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

/// The betterauth-demo app's flows, with TokenKit's cookie session against the demo server over real HTTP, the
/// server's and the client's wall clocks moved by hand (no waiting for a session to expire).
@Suite("Cookie session flows (seed 004)", .logLeakCheck(), .timeLimit(.minutes(1)))
struct CookieSessionFlowTests {
    static let password = "flow-password-004"

    /// One run: the server (60 s sessions, renewed 10 s after the last renewal) and a shared wall clock.
    final class Setup: Sendable {
        let server: DemoAuthServer
        let baseURL: URL
        let now: WallClock
        let transport: any HTTPTransport = CookieRegisteringTransport(SecretRegisteringTransport(URLSessionTransport()))

        init() async throws {
            var configuration = DemoAuthServer.Configuration()
            configuration.betterAuth = .init(sessionLifetime: .seconds(60), updateAge: .seconds(10))
            Demo.registerSecrets(of: configuration)
            TestSecrets.shared.register(CookieSessionFlowTests.password, as: .password, origin: "flow tests")
            let clock = WallClock()
            now = clock
            server = DemoAuthServer(configuration: configuration, now: clock.read, logger: Demo.traceLogger)
            baseURL = try await server.start()
        }

        var wallClock: @Sendable () -> Date { now.read }

        func advance(seconds: TimeInterval) { now.advance(seconds: seconds) }

        /// One launch of the app: a new client over `store`.
        func app(store: any TokenStore) -> App { App(setup: self, store: store) }
    }

    /// The app's auth pieces, as betterauth-demo builds them.
    struct App {
        let strategy: CookieSessionStrategy
        let auth: TokenRefreshClient
        let api: AuthenticatedClient
        let store: any TokenStore
        let baseURL: URL

        init(setup: Setup, store: any TokenStore) {
            baseURL = setup.baseURL
            self.store = store
            strategy = CookieSessionStrategy(baseURL: setup.baseURL, transport: setup.transport, now: setup.wallClock)
            auth = TokenRefreshClient(
                strategy: strategy, store: store, configuration: .init(backoff: .init(retries: 0)),
                now: setup.wallClock)
            api = AuthenticatedClient(
                transport: setup.transport, tokenProvider: auth,
                configuration: .init(
                    allowedOrigins: [HTTPOrigin(setup.baseURL)].compactMap { $0 },
                    endsSessionWhenRefreshDoesNotHelp: true,
                    credentialPresentation: strategy.presentation))
        }

        func signUp(_ username: String) async throws {
            let body = try JSONSerialization.data(withJSONObject: [
                "username": username, "email": "\(username)@example.com", "password": CookieSessionFlowTests.password,
            ])
            try await auth.signIn(strategy.signIn(path: "/api/auth/sign-up/email", body: body))
        }

        func signIn(_ username: String) async throws {
            let body = try JSONSerialization.data(withJSONObject: [
                "username": username, "password": CookieSessionFlowTests.password,
            ])
            try await auth.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: body))
        }

        func request(_ method: HTTPRequest.Method, _ path: String) -> HTTPRequest {
            HTTPRequest(
                method: method, scheme: "http", authority: "127.0.0.1:\(baseURL.port ?? 0)", path: path)
        }

        func stored() async -> StoredSession? {
            if case .found(let session) = await store.load(account: "default") { return session }
            return nil
        }
    }

    /// The first `signedOut` event of `stream`.
    static func firstSignOut(_ stream: AsyncStream<AuthEvent>) async -> AuthEvent? {
        for await event in stream where event.kind == .signedOut { return event }
        return nil
    }

    @Test func theOldIdAliasSessionIsClearedAndTheSeedsMessageShown() async throws {
        let defaults = InMemoryLegacyKeyValueSource(strings: ["auth_session": #"{"idAlias":"alice-1234"}"#])
        let store = InMemoryTokenStore()
        let migrator = SessionMigrator(layout: .idAlias(), source: defaults, store: store, account: "default")
        #expect(try await migrator.migrate() == .signInRequired)
        #expect(await defaults.values.isEmpty)
        #expect(try await migrator.migrate() == .nothingToMigrate)
        #expect(UserMessage(.reauthenticationRequiredTitle).text(in: .japanese) == "認証方式が更新されました")
        #expect(
            UserMessage(.reauthenticationRequired).text(in: .japanese)
                == "セキュリティ向上のため、ユーザー名とパスワードでの再ログインが必要です。")
    }

    @Test func signUpThenARestartIsValidatedAtLaunchAndKeepsTheRenewedCookie() async throws {
        let setup = try await Setup()
        let store = InMemoryTokenStore()
        let first = setup.app(store: store)
        try await first.signUp("flow_user_1")
        let userID = try #require(setup.server.cookieAccountID(username: "flow_user_1"))
        #expect(first.auth.currentState == .signedIn(userID: userID))
        let signedUpExpiry = try #require(await first.stored()?.token.expiresAt)

        setup.advance(seconds: 20)  // past updateAge: the launch check renews the session
        let second = setup.app(store: store)
        #expect(await second.auth.restoreSession(validatingWithProvider: true) == .signedIn(userID: userID))
        let renewedExpiry = try #require(await second.stored()?.token.expiresAt)
        #expect(renewedExpiry.timeIntervalSince(signedUpExpiry) == 20)
        #expect(setup.server.cookieSessionStats.sessionChecks == 1)
        #expect(setup.server.cookieSessionStats.renewals == 1)
        let (response, _) = try await second.api.executeWithAutoRetry(second.request(.get, "/api/chat/profile"))
        #expect(response.status == .ok)
        await setup.server.stop()
    }

    @Test func aLogoutOnAnotherDeviceIsFoundAtTheNextLaunch() async throws {
        let setup = try await Setup()
        let phoneStore = InMemoryTokenStore()
        try await setup.app(store: phoneStore).signUp("flow_user_2")
        let tablet = setup.app(store: InMemoryTokenStore())
        try await tablet.signIn("flow_user_2")
        let tabletEvents = tablet.auth.events()
        try await tablet.auth.signOutEverywhere(tablet.request(.post, "/api/auth/revoke-sessions"), through: tablet.api)
        #expect(await Self.firstSignOut(tabletEvents)?.reason == .signedOutEverywhere)

        let phone = setup.app(store: phoneStore)
        let events = phone.auth.events()
        #expect(await phone.auth.restoreSession(validatingWithProvider: true) == .signedOut)
        #expect(await Self.firstSignOut(events)?.reason == .invalidatedOnServer)
        #expect(await phone.stored() == nil)
        #expect(
            UserMessage(for: TokenRefreshError.sessionInvalidated).text(in: .japanese)
                == "セッションが期限切れです。再度ログインしてください。")
        await setup.server.stop()
    }

    @Test func aSessionPastItsLifetimeIsSignedOutAtLaunch() async throws {
        let setup = try await Setup()
        let store = InMemoryTokenStore()
        try await setup.app(store: store).signUp("flow_user_3")
        setup.advance(seconds: 61)
        let later = setup.app(store: store)
        #expect(await later.auth.restoreSession(validatingWithProvider: true) == .signedOut)
        #expect(await later.stored() == nil)
        await setup.server.stop()
    }

    @Test func aServerThatCannotBeReachedAtLaunchKeepsTheSessionAsExpired() async throws {
        let setup = try await Setup()
        let store = InMemoryTokenStore()
        try await setup.app(store: store).signUp("flow_user_4")
        let userID = try #require(setup.server.cookieAccountID(username: "flow_user_4"))
        await setup.server.stop()
        let offline = setup.app(store: store)
        #expect(await offline.auth.restoreSession(validatingWithProvider: true) == .expired(lastUserID: userID))
        #expect(await offline.stored() != nil)
    }

    @Test func concurrent401sMeetOneSessionCheckAndEndTheSessionOnce() async throws {
        let setup = try await Setup()
        let app = setup.app(store: InMemoryTokenStore())
        try await app.signUp("flow_user_5")
        let userID = try #require(setup.server.cookieAccountID(username: "flow_user_5"))
        let events = app.auth.events()
        #expect(setup.server.invalidateCookieSessions(userID: userID) == 1)
        let checksBefore = setup.server.cookieSessionStats.sessionChecks
        let errors = await withTaskGroup(of: (any Error)?.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    do {
                        _ = try await app.api.executeWithAutoRetry(app.request(.get, "/api/chat/profile"))
                        return nil
                    } catch { return error }
                }
            }
            return await group.reduce(into: [(any Error)?]()) { $0.append($1) }
        }
        // The global 401 handler's view: every failure means "session over, show login".
        #expect(errors.allSatisfy { $0.map { UserMessage(for: $0).key == .sessionExpired } ?? false })
        #expect(setup.server.cookieSessionStats.sessionChecks - checksBefore == 1)
        #expect(await Self.firstSignOut(events)?.reason == .sessionExpired)
        #expect(app.auth.currentState == .signedOut)
        await setup.server.stop()
    }
}

/// A wall clock the test moves by hand, shared by the server and the app.
final class WallClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_767_225_600))

    var read: @Sendable () -> Date { { self.current.withLock { $0 } } }

    func advance(seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// Registers session cookies for the log check: the values of `Set-Cookie` answers and of `Cookie` requests
/// (``SecretRegisteringTransport`` registers whole header values and body tokens, not a cookie's value alone).
struct CookieRegisteringTransport: HTTPTransport {
    let base: any HTTPTransport

    init(_ base: any HTTPTransport) { self.base = base }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        for crumb in (request.headerFields[.cookie] ?? "").split(separator: ";") {
            register(crumb, origin: "Cookie")
        }
        let (response, data) = try await base.send(request, body: body)
        for field in response.headerFields[values: .setCookie] {
            register(field.split(separator: ";", maxSplits: 1).first ?? "", origin: "Set-Cookie")
        }
        return (response, data)
    }

    private func register(_ pair: Substring, origin: String) {
        let parts = pair.split(separator: "=", maxSplits: 1)
        guard parts.count == 2 else { return }
        TestSecrets.shared.register(
            String(parts[1]).trimmingCharacters(in: .whitespaces), as: .credential, origin: origin)
    }
}
