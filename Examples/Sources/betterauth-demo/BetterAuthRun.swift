import Crypto
import DemoAppSupport
import DemoAuthServer
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Synchronization
import TokenKit

/// One run of `betterauth-demo`, step by step. Every verdict is about what TokenKit controls: the migration
/// outcome, the state and events of the auth client, what is stored, what was presented, and how many session
/// checks it made.
struct BetterAuthRun {
    let demo: BetterAuthDemo
    let backend: DemoBackend
    let directory: URL
    let report: DemoReport
    let transport: AppTransport
    let key = SymmetricKey(size: .bits256)
    let username: String
    let email: String
    let language: UserMessage.Language

    init(demo: BetterAuthDemo, backend: DemoBackend, directory: URL, report: DemoReport) {
        self.demo = demo
        self.backend = backend
        self.directory = directory
        self.report = report
        transport = AppTransport(DemoTransport.urlSession(timeout: demo.serverOptions.timeout))
        let suffix = UUID().uuidString.prefix(6).lowercased()
        username = demo.username ?? "alice_\(suffix)"
        email = "\(username)@example.com"
        language = demo.language == "en" ? .english : .japanese
    }

    /// A new launch of the app on this device (a new process: a new client over the same sealed file store).
    private func launchApp(_ name: String = "phone") -> ChatApp {
        ChatApp(
            name: name, baseURL: backend.baseURL, transport: transport,
            store: sealedFileStore(in: directory.appending(path: name), key: key), report: report)
    }

    func run() async throws {
        report.step("server", backend.summary)
        let start = try await cookieStats()
        try await migrate()
        validateFields()
        let app = try await signUp()
        try await refusals(app)
        try await restart(after: app)
        try await offlineLaunch()
        try await logoutFromAnotherDevice()
        let unauthorizedFailures = try await unauthorizedEndsTheSession()
        let end = try await cookieStats()
        func delta(_ key: String) -> String { "\(end[key, default: 0] - start[key, default: 0])" }
        report.summary([
            ("HTTP requests", "\(transport.requests)"),
            ("requests with the session cookie", "\(transport.presented.cookie)"),
            ("requests with Authorization", "\(transport.presented.authorization)"),
            ("session checks (server)", delta("session_checks")),
            ("sliding renewals (server)", delta("renewals")),
            ("401 answers (a wrong password, the ended session)", "\(transport.unauthorized)"),
            ("requests ended by the 401 handler", "\(unauthorizedFailures)"),
        ])
    }

    /// 1. The old version kept an `idAlias` session in UserDefaults: it is cleared and the user asked to sign in.
    private func migrate() async throws {
        let defaults = InMemoryLegacyKeyValueSource(strings: [
            "auth_session": #"{"idAlias":"\#(username)","displayName":"Alice"}"#
        ])
        let app = launchApp()
        func migrator() -> SessionMigrator {
            SessionMigrator(layout: .idAlias(), source: defaults, store: app.store, account: "default")
        }
        let outcome = try await migrator().migrate()
        let left = await defaults.values.count
        let again = try await migrator().migrate()
        if outcome == .signInRequired {
            report.step("alert", UserMessage(.reauthenticationRequiredTitle).text(in: language))
            report.step("alert", UserMessage(.reauthenticationRequired).text(in: language))
        }
        let title = UserMessage(.reauthenticationRequiredTitle).text(in: .japanese)
        report.expect(
            outcome == .signInRequired && left == 0 && again == .nothingToMigrate && title == "認証方式が更新されました",
            "migrate", "old idAlias session: \(outcome), \(left) old keys left, next launch: \(again)",
            proves: "the old session is cleared once and the seed's re-login message is shown from package resources")
    }

    /// 2. The sign-up form checks the seed's rules before any request.
    private func validateFields() {
        let short = CredentialRules.check(username: "al")
        let symbols = CredentialRules.check(username: "alice!")
        let weak = CredentialRules.check(password: "1234567")
        let mail = CredentialRules.check(email: "alice@example")
        for problem in short + symbols + weak + mail {
            report.step("form", UserMessage(for: problem).text(in: language))
        }
        let good =
            CredentialRules.check(username: username).isEmpty && CredentialRules.check(password: demo.password).isEmpty
            && CredentialRules.check(email: email).isEmpty
        report.expect(
            short == [.tooShort(minimum: 3)] && symbols == [.invalidCharacters] && weak == [.tooShort(minimum: 8)]
                && mail == [.invalidFormat] && good,
            "validate",
            "\"al\", \"alice!\", a 7-character password and \"alice@example\" refused; \(username) accepted",
            proves: "client-side checks give typed reasons and localized text before a round trip")
    }

    /// 3. Sign-up: the HttpOnly cookie is captured, stored sealed, and presented as `Cookie`, never as a Bearer.
    private func signUp() async throws -> ChatApp {
        let app = launchApp()
        try await report.waiting(for: "sign-up", timeout: demo.serverOptions.timeout) {
            try await app.signUp(username: username, email: email, password: demo.password)
        }
        let before = transport.presented
        let session = try await app.profile()
        let after = transport.presented
        let stored = await app.hasStoredSession()
        let signedIn = app.auth.currentState == .signedIn(userID: session.authUserId)
        report.expect(
            signedIn && stored && after.cookie > before.cookie && after.authorization == before.authorization
                && session.username == username,
            "sign-up",
            "\(username) signed up: \(app.auth.currentState), session \(stored ? "stored (sealed file)" : "NOT stored"), "
                + "GET /api/chat/profile -> \(session.user.displayName) (\(session.authUserId))",
            proves: "the session cookie is captured from Set-Cookie and presented as Cookie, not Authorization")
        return app
    }

    /// 4. Refusals the user can read: a taken username, a wrong password.
    private func refusals(_ app: ChatApp) async throws {
        var messages: [UserMessage] = []
        for attempt in 0..<2 {
            do {
                if attempt == 0 {
                    try await app.signUp(username: username, email: "other-\(email)", password: demo.password)
                } else {
                    try await app.signIn(username: username, password: "wrong-password-004")
                }
            } catch {
                let message = transport.takeServerError()?.message ?? UserMessage(for: error)
                messages.append(message)
                report.step("refused", message.text(in: language))
            }
        }
        let kept = app.auth.currentState != .signedOut
        report.expect(
            messages.map(\.key) == [.usernameTaken, .invalidCredentials] && kept, "refusals",
            "sign-up with a taken username and sign-in with a wrong password refused; session "
                + (kept ? "kept" : "LOST"),
            proves: "{\"error\": ...} answers become the seed's messages, and a refused sign-in keeps the session")
    }

    /// 5. A restart: the stored cookie is checked at launch (get-session), and the server's renewal is kept.
    private func restart(after first: ChatApp) async throws {
        let expiryBefore = await first.storedExpiry()
        let checksBefore = try await cookieStats()["session_checks", default: 0]
        // Let updateAge pass, so the launch check renews the session (a sliding expiry).
        try await Task.sleep(for: .seconds(demo.updateAge) + .milliseconds(100))
        let app = launchApp()
        let state = try await report.waiting(for: "get-session at launch", timeout: demo.serverOptions.timeout) {
            await app.launch()
        }
        let checks = try await cookieStats()["session_checks", default: 0] - checksBefore
        let expiryAfter = await app.storedExpiry()
        let renewed = expiryBefore.flatMap { before in expiryAfter.map { $0 > before } } ?? false
        let profile = try? await app.profile()
        report.expect(
            state.isSignedIn && checks == 1 && renewed && profile != nil, "restart",
            "new launch: \(state) after \(checks) get-session, cookie expiry "
                + (renewed ? "moved later (renewed by the server)" : "NOT renewed"),
            proves: "the session is validated with the server at launch and a renewed Set-Cookie is captured")
    }

    /// 5b. A launch while the server cannot be reached: the session is kept (expired, offline), a request reads as
    /// the seed's network error (a refused connection is "ネットワークエラーが発生しました"; only "not connected to the
    /// internet" is "インターネット接続を確認してください"), and the next launch with the server back is signed in again.
    private func offlineLaunch() async throws {
        guard backend.server != nil else {
            report.step("offline", "skipped: the demo can only stop a server it started itself")
            return
        }
        await backend.stop()
        let app = launchApp()
        let state = await app.launch()
        var message: UserMessage?
        do {
            _ = try await app.profile()
        } catch {
            message = UserMessage(for: error)
        }
        if let message { report.step("error", message.text(in: language)) }
        let kept = await app.hasStoredSession()
        try await backend.restart()
        let back = await launchApp().launch()
        report.expect(
            state.isExpired && (message?.key == .networkError || message?.key == .offline) && kept && back.isSignedIn,
            "offline",
            "server stopped: launch \(state), request refused, session \(kept ? "kept" : "LOST"); "
                + "server back: next launch \(back)",
            proves: "a launch that cannot reach the server keeps the session, and a network error reads as one")
    }

    /// 6. Another device signs in and logs out everywhere; this device finds out at its next launch.
    private func logoutFromAnotherDevice() async throws {
        let tablet = launchApp("tablet")
        try await tablet.signIn(username: username, password: demo.password)
        try await tablet.auth.signOutEverywhere(tablet.request(.post, "/api/auth/revoke-sessions"), through: tablet.api)
        report.step(
            "tablet", "signed in as \(username) and logged out on every device (POST /api/auth/revoke-sessions)")
        let app = launchApp()
        let state = await app.launch()
        let ended = await app.events.wait(for: .signedOut, count: 1)
        let reason = app.events.all(.signedOut).first?.reason
        let stored = await app.hasStoredSession()
        if state == .signedOut {
            report.step("login", UserMessage(for: TokenRefreshError.sessionInvalidated).text(in: language))
        }
        report.expect(
            state == .signedOut && ended && reason == .invalidatedOnServer && !stored, "other device",
            "next launch: \(state), reason \(reason.map { "\($0)" } ?? "none"), stored session "
                + (stored ? "STILL THERE" : "removed"),
            proves: "a logout on another device is found by the launch check and ends the session once")
    }

    /// 7. Signed in again, the account is deleted on the other device while this one runs: concurrent requests
    /// meet 401s, one session check confirms, and the global 401 handler signs out once and shows login.
    /// Returns how many requests the handler ended.
    private func unauthorizedEndsTheSession() async throws -> Int {
        let app = launchApp()
        _ = await app.launch()
        try await app.signIn(username: username, password: demo.password)
        let tablet = launchApp("tablet")
        try await tablet.signIn(username: username, password: demo.password)
        try await tablet.auth.deleteAccount(tablet.request(.post, "/api/auth/delete-user"), through: tablet.api)
        report.step("tablet", "deleted the account (POST /api/auth/delete-user)")
        let checksBefore = try await cookieStats()["session_checks", default: 0]
        let unauthorizedBefore = transport.unauthorized
        let handler = GlobalUnauthorizedHandler(language: language, report: report)
        let failures = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    do {
                        _ = try await app.profile()
                        return false
                    } catch {
                        return await handler.handle(error, app: app)
                    }
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        let ended = await app.events.wait(for: .signedOut, count: 1)
        let signOuts = app.events.all(.signedOut)
        let checks = try await cookieStats()["session_checks", default: 0] - checksBefore
        let stored = await app.hasStoredSession()
        report.expect(
            failures == 5 && ended && signOuts.count == 1 && signOuts.first?.reason == .sessionExpired
                && checks == 1 && !stored && app.auth.currentState == .signedOut && handler.handled == 5,
            "401",
            "5 requests, \(transport.unauthorized - unauthorizedBefore) answered 401, \(checks) get-session, "
                + "\(signOuts.count) sign-out (\(signOuts.first?.reason.map { "\($0)" } ?? "none")), "
                + "\(handler.handled) handled by the global 401 handler, login shown once",
            proves: "a 401 on a cookie session is settled by one check for every caller and ends the session once")
        return failures
    }

    /// `GET /debug/cookie-stats` of the demo server.
    private func cookieStats() async throws -> [String: Int] {
        let request = HTTPRequest(method: .get, url: backend.baseURL.appending(path: "debug/cookie-stats"))
        let (response, data) = try await DemoTransport.urlSession(timeout: demo.serverOptions.timeout)
            .send(request, body: nil)
        guard response.status == .ok, let stats = try? JSONDecoder().decode([String: Int].self, from: data) else {
            throw DemoFailure(
                "GET /debug/cookie-stats answered HTTP \(response.status.code): not a cookie-session server")
        }
        return stats
    }
}

/// Seed 004's global 401 handler: an error that means the session is over shows the login screen with the
/// "session expired" message (once per sign-out); anything else is reported as it is.
final class GlobalUnauthorizedHandler: Sendable {
    let language: UserMessage.Language
    let report: DemoReport
    private let shown = Mutex(0)

    init(language: UserMessage.Language, report: DemoReport) {
        self.language = language
        self.report = report
    }

    /// How many failed requests it handled as "session over".
    var handled: Int { shown.withLock { $0 } }

    /// Handles a failed request; `true` when the session was over (login shown).
    func handle(_ error: any Error, app: ChatApp) async -> Bool {
        guard UserMessage(for: error).key == .sessionExpired else {
            report.step("error", DemoFailure.describe(error))
            return false
        }
        // The library has signed out already (one check for every caller); make sure, as the seed's handler does.
        if app.auth.currentState != .signedOut { try? await app.auth.signOut(reason: .unauthorized) }
        let first = shown.withLock { count in
            count += 1
            return count == 1
        }
        if first { report.step("login", UserMessage(.sessionExpired).text(in: language)) }
        return true
    }
}

extension AuthState {
    var isSignedIn: Bool {
        if case .signedIn = self { return true }
        return false
    }

    var isExpired: Bool {
        if case .expired = self { return true }
        return false
    }
}
