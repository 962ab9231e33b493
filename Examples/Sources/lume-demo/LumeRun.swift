import DemoAppSupport
import DemoAuthServer
import Foundation
import Synchronization
import TokenKit

/// One run of `lume-demo`, step by step.
struct LumeRun {
    let demo: LumeDemo
    let backend: DemoBackend
    let report: DemoReport
    let transport: CountingTransport
    let keychain = SimulatedKeychain()
    let app: LumeDependencies
    let events: EventLog

    init(demo: LumeDemo, backend: DemoBackend, report: DemoReport) {
        self.demo = demo
        self.backend = backend
        self.report = report
        transport = CountingTransport(DemoTransport.urlSession(timeout: demo.serverOptions.timeout))
        app = LumeDependencies(
            networkClient: HTTPTransportNetworkClient(transport: transport), keychain: keychain,
            backendBaseURL: backend.baseURL, apiKey: demo.account.apiKey)
        events = EventLog(app.tokenRefreshClient.events(), report)
    }

    func run() async throws {
        report.step("server", backend.summary)
        if demo.htmlServer {
            try await backend.setFaults(#"{"html_everywhere": true}"#)
            report.step("fault", "the server now answers every API call with an HTML page")
        }
        let start = try await backend.stats()
        let family = try await oldAppSignsIn()
        try await migrate()
        try await launch()
        try await refreshAfterExpiry(family: family)
        let offlineFailures = try await outageAndRecovery()
        try await revocation()
        let end = try await backend.stats()
        report.summary([
            ("HTTP requests (with sign-in, refreshes)", "\(transport.requests)"),
            ("refreshes (server)", "\(end["refreshes", default: 0] - start["refreshes", default: 0])"),
            ("401 retries", "\(transport.unauthorized)"),
            ("failed requests (offline)", "\(offlineFailures)"),
            ("sign-outs", "\(events.count([.signedOut]))"),
        ])
    }

    /// 1. The old app version signed in and kept its token as one Keychain item. Returns the login's family in the
    /// server's issue log.
    private func oldAppSignsIn() async throws -> String {
        try await report.waiting(for: "the old app's sign-in", timeout: demo.serverOptions.timeout) {
            try await OldLumeApp.signInAndStore(
                baseURL: backend.baseURL, account: demo.account, transport: transport, keychain: keychain)
        }
        if demo.corruptLegacyToken {
            keychain.set(Data(#"{"accessToken": 42"#.utf8), service: OldLumeApp.service, account: OldLumeApp.account)
        }
        report.step(
            "old app",
            "signed in and kept its AuthToken {accessToken, refreshToken, expiresAt} as one Keychain item "
                + "(\(OldLumeApp.service), \(OldLumeApp.account))")
        guard let family = try await backend.issueLog().last(where: { $0.grant == .login })?.family else {
            throw DemoFailure("the server's issue log has no login")
        }
        return family
    }

    /// 2. First launch of the new version: the Keychain item moves into `authTokenStorage`, once.
    private func migrate() async throws {
        let outcome: SessionMigrator.Outcome
        do {
            outcome = try await SessionMigrator(
                layout: .lume(tokenKey: OldLumeApp.account),
                source: keychain.legacySource(service: OldLumeApp.service),
                store: AuthTokenPersistenceStore(app.authTokenStorage), account: "default"
            ).migrate()
        } catch {
            throw DemoFailure("the old app's stored session cannot be migrated: \(error)")
        }
        let leftover = keychain.count(service: OldLumeApp.service)
        let stored = try app.authTokenStorage.fetchRefreshToken() != nil
        report.expect(
            outcome == .migrated && leftover == 0 && stored, "migrate",
            "outcome \(outcome), \(leftover) old Keychain items left, pair \(stored ? "in" : "NOT in") authTokenStorage",
            proves: "the old session moved to AuthTokenPersistenceProtocol and the old item is gone")
    }

    /// 3. A request with the migrated token, without signing in again.
    private func launch() async throws {
        let first = await request()
        report.expect(
            first == nil, "launch", "GET /api/v1/sleep \(first ?? "OK")",
            proves: "the migrated session is used without signing in again")
        guard let expiresAt = try app.authTokenStorage.fetchToken()?.expiresAt, expiresAt.timeIntervalSinceNow <= 60
        else {
            throw DemoFailure("the server's access tokens live too long for this demo; use --access-token-lifetime 3")
        }
    }

    /// 4. The token expires; the next request meets a 401 and `executeWithAutoRetry` refreshes behind it.
    private func refreshAfterExpiry(family: String) async throws {
        let before = RefreshAccount.records(in: try await backend.issueLog(), family: family)
        try await waitUntilExpired()
        let afterExpiry = await request()
        // The client first learns of the session from the stored refresh token: that refresh reads `signedIn`.
        let refreshed = await events.wait(for: [.signedIn, .tokenRefreshed], count: 1)
        let account = RefreshAccount(log: try await backend.issueLog(), family: family, skipping: before)
        report.expect(
            afterExpiry == nil && refreshed && account.refreshes >= 1 && account.early == 0, "refresh",
            "token expired, next request \(afterExpiry ?? "OK"), \(account) on the server's issue log",
            proves: "executeWithAutoRetry renews the session behind the request; no manual refresh")
    }

    /// 5. The server goes away while the token expires: requests fail, the session stays; then it comes back.
    /// Returns how many requests failed while it was away.
    private func outageAndRecovery() async throws -> Int {
        guard let server = backend.server else {
            report.step("offline", "skipped: the demo can only stop a server it started itself")
            return 0
        }
        await server.stop()
        try await waitUntilExpired()
        let offline = await request()
        let kept = try app.authTokenStorage.fetchRefreshToken() != nil
        report.expect(
            offline != nil && kept, "offline",
            "server stopped: request failed (\(offline ?? "no error")), session \(kept ? "kept" : "LOST")",
            proves: "a failure to connect never signs the user out")

        try await backend.restart()
        let recovered = await request()
        let again = await events.wait(for: [.signedIn, .tokenRefreshed], count: 2)
        report.expect(
            recovered == nil && again, "recovered",
            "server back on port \(backend.baseURL.port ?? 0): request \(recovered ?? "OK")",
            proves: "the kept session refreshes as soon as the server answers")
        return offline == nil ? 0 : 1
    }

    /// 6. An administrator revokes the session on the server: the next refresh is refused, for good.
    private func revocation() async throws {
        try await backend.revokeAllSessions()
        let revoked = await request()
        let signedOut = await events.wait(for: [.signedOut], count: 1)
        let reason = events.last(.signedOut)?.reason
        let deleted = try app.authTokenStorage.fetchAccessToken() == nil
        report.expect(
            revoked != nil && signedOut && reason == .revoked && deleted, "revoked",
            "sessions revoked on the server: \(revoked ?? "no error"), signed out (reason: "
                + "\(reason.map { "\($0)" } ?? "none")), tokens "
                + (deleted ? "deleted" : "NOT deleted"),
            proves: "a revoked refresh token ends the session once")
    }

    /// `GET /api/v1/sleep`; `nil` when it succeeded, else the one-line reason.
    private func request() async -> String? {
        do {
            _ = try await report.waiting(for: "GET /api/v1/sleep", timeout: demo.serverOptions.timeout) {
                try await app.httpClient.get("api/v1/sleep")
            }
            return nil
        } catch {
            return DemoFailure.describe(error)
        }
    }

    /// Waits, in real time, until the stored access token has expired.
    private func waitUntilExpired() async throws {
        try await waitInRealTime(until: try app.authTokenStorage.fetchToken()?.expiresAt ?? Date())
    }
}

/// Prints the client's auth events as they arrive and keeps them for the checks.
final class EventLog: Sendable {
    private let events = Mutex<[AuthEvent]>([])

    init(_ stream: AsyncStream<AuthEvent>, _ report: DemoReport) {
        Task { [self] in
            for await event in stream {
                report.event("\(event)")
                self.events.withLock { $0.append(event) }
            }
        }
    }

    /// The last event of `kind`, if any.
    func last(_ kind: AuthEvent.Kind) -> AuthEvent? { events.withLock { $0.last { $0.kind == kind } } }

    /// How many events of `kinds` arrived so far.
    func count(_ kinds: Set<AuthEvent.Kind>) -> Int { events.withLock { $0.count { kinds.contains($0.kind) } } }

    /// Waits up to two seconds until `count` events of `kinds` have arrived.
    func wait(for kinds: Set<AuthEvent.Kind>, count: Int) async -> Bool {
        for _ in 0..<200 {
            if self.count(kinds) >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}
