import ArgumentParser
import DemoAppSupport
import DemoAuthServer
import Foundation
import HTTPTypes
import Synchronization
import TokenKit

/// `lume-demo`: a Lume-style session migrated from the old format, refreshed with the OAuth grant, through
/// an outage and a server-side revocation, with the auth events printed as they happen.
@main
struct LumeDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lume-demo",
        abstract: "Lume-like app: migrate the old token, refresh with OAuth, survive an outage, get revoked.",
        discussion: """
            Starts the demo auth server in-process (or uses --server), stores a token the way the old Lume \
            app did, migrates it into a file store, then shows the auth events: a refresh, a transient failure \
            while the server is down (the session is kept), recovery, and a revocation on the server (signed \
            out, with the reason). Exits non-zero when an expectation fails.
            """
    )

    @Option(
        help: ArgumentHelp(
            "Use this demo auth server (e.g. http://127.0.0.1:8080) instead of starting one in-process.",
            valueName: "url"))
    var server: String?

    @Option(help: "The e-mail the old app version signed in with.")
    var email = "demo@example.com"

    @Option(help: "The password the old app version signed in with.")
    var password = "password123"

    @Option(help: "The OAuth client ID (a public client).")
    var clientID = "demo-app"

    @Option(help: ArgumentHelp("Access-token lifetime of the in-process server.", valueName: "seconds"))
    var tokenLifetime = 3

    @Flag(help: "Make the server answer every API call with an HTML page (fault injection), to see the app cope.")
    var htmlServer = false

    @Flag(help: "Store a damaged token in the old format, to see the migration refuse it.")
    var corruptLegacyToken = false

    func validate() throws {
        guard (1...60).contains(tokenLifetime) else { throw ValidationError("--token-lifetime must be 1...60") }
    }

    func run() async throws {
        let report = DemoReport(title: "Lume-like demo: migration, OAuth refresh grant, auth events")
        let directory = FileManager.default.temporaryDirectory.appending(path: "lume-demo-\(UUID().uuidString)")
        await DemoBackend.run(
            external: server, tokenLifetime: tokenLifetime, resetsFaults: htmlServer, report: report
        ) { backend in
            try await demo(backend, FileTokenStore(directory: directory), report)
        }
        try? FileManager.default.removeItem(at: directory)
        if report.failed { throw ExitCode.failure }
    }

    private func demo(_ backend: DemoBackend, _ store: FileTokenStore, _ report: DemoReport) async throws {
        let baseURL = backend.baseURL
        report.step("server", backend.summary)
        if htmlServer {
            try await backend.setFaults(#"{"html_everywhere": true}"#)
            report.step("fault", "the server now answers every API call with an HTML page")
        }
        let start = try await backend.stats()
        let transport = CountingTransport(URLSessionTransport())
        let endpoint = TokenEndpoint(
            url: baseURL.appending(path: "oauth/token"), client: OAuthClient(id: clientID), transport: transport)

        // 1. The old app version signed in and kept its token in its own format.
        let legacy = InMemoryLegacyKeyValueSource()
        try await OldLumeApp.signInAndStore(endpoint: endpoint, email: email, password: password, into: legacy)
        if corruptLegacyToken { await legacy.setValue(Data(#"{"accessToken": 42"#.utf8), forKey: "authToken") }
        report.step(
            "old app",
            "signed in (password grant) and stored its token as JSON under \"authToken\", the user ID under \"userID\"")

        // 2. First launch of the new version: move the session into the file store, once.
        let outcome: SessionMigrator.Outcome
        do {
            outcome = try await SessionMigrator(
                layout: .lume(userIDKey: "userID"), source: legacy, store: store, account: "default"
            ).migrate()
        } catch {
            throw DemoFailure("the old app's stored session cannot be migrated: \(error)")
        }
        let leftover = await legacy.values.count
        report.expect(
            outcome == .migrated && leftover == 0, "migrate", "outcome \(outcome), \(leftover) old keys left",
            proves: "the old session moved to the file store and the old keys are gone")

        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store,
            // Short retries so the outage below shows up in a second or two, not after the 2 default retries.
            configuration: .init(
                backoff: .init(retries: 1, initialDelay: .milliseconds(200), maximumDelay: .seconds(1)))
        )
        let events = EventLog(client.events(), report)
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(allowedOrigins: [HTTPOrigin(baseURL)].compactMap { $0 }))
        let state = await client.restoreSession()
        let first = await request(api, baseURL)
        report.expect(
            state.hasSession && first == nil, "launch", "\(state), GET /api/v1/sleep \(first ?? "OK")",
            proves: "the migrated session is used without signing in again")
        guard let expiresAt = client.currentToken?.expiresAt, expiresAt.timeIntervalSinceNow <= 60 else {
            throw DemoFailure("the server's access tokens live too long for this demo; use --access-token-lifetime 3")
        }

        // 3. The token expires; the next request refreshes it with the refresh_token grant.
        var stats = try await backend.stats()
        try await waitUntilExpired(client)
        let afterExpiry = await request(api, baseURL)
        let refreshed = await events.wait(for: .tokenRefreshed, count: 1)
        let refreshes = try await backend.stats()["refreshes", default: 0] - stats["refreshes", default: 0]
        report.expect(
            afterExpiry == nil && refreshed && refreshes == 1, "refresh",
            "token expired, next request \(afterExpiry ?? "OK"), \(refreshes) refresh on the server",
            proves: "the OAuth refresh grant renews the session behind the request")

        // 4. The server goes away. The token expires; the refresh fails transiently; the session stays.
        var offlineFailures = 0
        if let server = backend.server {
            await server.stop()
            try await waitUntilExpired(client)
            let offline = await request(api, baseURL)
            offlineFailures += offline == nil ? 0 : 1
            let failed = await events.wait(for: .refreshFailed, count: 1)
            let kept = if case .found = await store.load(account: "default") { true } else { false }
            report.expect(
                offline != nil && failed && kept && client.isOfflineNow && client.currentState.hasSession, "offline",
                "server stopped: request failed (\(offline ?? "no error")), state \(client.currentState), "
                    + "offline \(client.isOfflineNow), session \(kept ? "kept" : "LOST")",
                proves: "a transient failure never signs the user out")

            try await backend.restart()
            var recovered: String? = "not tried"
            for _ in 0..<10 where recovered != nil {  // the client holds refreshes back for its backoff delay
                recovered = await request(api, baseURL)
                if recovered != nil { try await Task.sleep(for: .milliseconds(300)) }
            }
            let again = await events.wait(for: .tokenRefreshed, count: 2)
            report.expect(
                recovered == nil && again && !client.isOfflineNow, "recovered",
                "server back on port \(baseURL.port ?? 0): request OK, state \(client.currentState)",
                proves: "the kept session refreshes as soon as the server answers")
        } else {
            report.step("offline", "skipped: the demo can only stop a server it started itself")
        }

        // 5. An administrator revokes the session on the server: the next refresh is refused, for good.
        stats = try await backend.stats()
        try await backend.revokeAllSessions()
        var revoked = await request(api, baseURL)
        if revoked == nil, let token = client.currentToken {  // the access token may still be accepted
            revoked = await forceRefresh(client, rejecting: token)
        }
        let signedOut = await events.wait(for: .signedOut, count: 1)
        let reason = events.all.last { $0.kind == .signedOut }?.reason
        let absent = if case .absent = await store.load(account: "default") { true } else { false }
        report.expect(
            revoked != nil && signedOut && reason == .revoked && absent && client.currentState == .signedOut,
            "revoked",
            "sessions revoked on the server: \(revoked ?? "no error"), signed out (reason: "
                + "\(reason.map { "\($0)" } ?? "none")), store \(absent ? "cleared" : "NOT cleared")",
            proves: "a revoked refresh token ends the session once, with the reason")

        let end = try await backend.stats()
        report.summary([
            ("HTTP requests (with sign-in, refreshes)", "\(transport.requests)"),
            ("refreshes (server)", "\(end["refreshes", default: 0] - start["refreshes", default: 0])"),
            ("401 retries", "\(transport.unauthorized)"),
            ("transient refresh failures", "\(events.all.filter { $0.kind == .refreshFailed }.count)"),
            ("failed requests (offline)", "\(offlineFailures)"),
            ("sign-outs", "\(events.all.filter { $0.kind == .signedOut }.count)"),
        ])
    }

    /// `GET /api/v1/sleep`; `nil` when it succeeded, else the one-line reason.
    private func request(_ api: AuthenticatedClient, _ baseURL: URL) async -> String? {
        do {
            _ = try await api.call(.get, baseURL, "api/v1/sleep")
            return nil
        } catch {
            return DemoFailure.describe(error)
        }
    }

    /// Refreshes as the app does after a 401; `nil` when it succeeded, else the one-line reason.
    private func forceRefresh(_ client: TokenRefreshClient, rejecting token: AuthToken) async -> String? {
        do {
            _ = try await client.refreshToken(afterRejectionOf: token.accessToken)
            return nil
        } catch {
            return DemoFailure.describe(error)
        }
    }

    /// Waits, in real time, until the current access token has expired.
    private func waitUntilExpired(_ client: TokenRefreshClient) async throws {
        let seconds = max(0, client.currentToken?.expiresAt?.timeIntervalSinceNow ?? 0) + 0.2
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
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

    /// Every event so far.
    var all: [AuthEvent] { events.withLock { $0 } }

    /// Waits up to two seconds until `count` events of `kind` have arrived.
    func wait(for kind: AuthEvent.Kind, count: Int) async -> Bool {
        for _ in 0..<200 {
            if all.filter({ $0.kind == kind }).count >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}
