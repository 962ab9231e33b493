import Foundation
import HTTPTypes
import PostgresNIO
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitPostgres

extension ChildProcessTests {
    /// The database fails while a refresh is in flight: four `session-worker` replicas on one PostgreSQL session
    /// row refresh against django-oauth-toolkit (reuse protection on, no grace window, 5-second access tokens)
    /// through a ``HoldingProxy``. The proxy holds the first refresh, the test restarts PostgreSQL
    /// (`pg_ctl restart -m immediate`), stops it for a while, or ends the lock holder's connection
    /// (`pg_terminate_backend`), waits until every other replica has been to the database since and the session
    /// row's lease has been renewed (or lost), and releases the refresh. No replica may present a
    /// refresh token the server already rotated (a reuse detection revokes the whole session), each expiry costs
    /// one refresh, no request fails because of an outage shorter than the lock wait, and the session still
    /// answers afterwards.
    @Suite(
        "Database restart mid-refresh against django-oauth-toolkit", .logLeakCheck(),
        .enabled(if: DjangoReplicaRun.isConfigured, DjangoReplicaRun.skipMessage))
    struct RestartMidRefreshTests {
        static let processes = 4
        static let requests = 50
        static let expiries = 3
        static let accessTokenLifetime = 5

        @Test(.timeLimit(.minutes(2)))
        func aRestartWhileTheRotatedAnswerIsOnTheWireLosesNoSession() async throws {
            try await Self.check("(a) answer held after rotation + restart -m immediate", .response, .restart)
        }

        @Test(.timeLimit(.minutes(2)))
        func aRestartWhileTheRefreshIsOnItsWayToTheServerLosesNoSession() async throws {
            try await Self.check("(b) request held before the server + restart -m immediate", .request, .restart)
        }

        /// Down 1.5 s, within the 2 s the lease's documentation promises: the holder's renewal, waiting for a
        /// connection for up to the 2-s database timeout, lands as soon as the database is back.
        @Test(.timeLimit(.minutes(2)))
        func aDatabaseOutageShorterThanTheLeaseWhileTheRotatedAnswerIsOnTheWireLosesNoSession() async throws {
            try await Self.check(
                "(d) answer held after rotation + database down 1.5 s (database timeout 2 s)", .response,
                .outage(.milliseconds(1500)))
        }

        /// Down 1.9 s, still within the documented 2 s, but with a 1-s database timeout: the holder's renewal at
        /// +1 s gives up at +2 s while the database is down; the heartbeat tries again within 50 ms (doubling), each
        /// attempt bounded by the time the lease has left, so it renews the lease soon after the database is back
        /// (about +2.2 s), before the lease would end at +3 s.
        @Test(.timeLimit(.minutes(2)))
        func aDatabaseOutageLongerThanOneRenewalAttemptWhileTheRotatedAnswerIsOnTheWireLosesNoSession() async throws {
            try await Self.check(
                "(e) answer held after rotation + database down 1.9 s (database timeout 1 s)", .response,
                .outage(.milliseconds(1900)), databaseTimeout: 1)
        }

        @Test(.timeLimit(.minutes(2)))
        func aTerminatedLockConnectionWhileTheRotatedAnswerIsOnTheWireLosesNoSession() async throws {
            try await Self.check(
                "(c) answer held after rotation + pg_terminate_backend of the holder", .response, .terminateHolder)
        }

        /// Runs one variant and checks the outcome; prints one line of figures and the refresh timeline.
        static func check(
            _ name: String, _ hold: HoldingProxy.Hold, _ fault: DjangoReplicaRun.Fault, databaseTimeout: Int = 2
        ) async throws {
            try await DjangoReplicaRun.run { run in
                let figures = try await run.refreshWithFault(
                    hold: hold, fault: fault, processes: processes, requests: requests, expiries: expiries,
                    databaseTimeout: databaseTimeout)
                print("restart mid-refresh \(name): \(figures.summary)")
                for line in figures.timeline { print("  \(line)") }
                for outcome in figures.outcomes {
                    let ended = outcome.status == 0 && !outcome.signalled
                    #expect(ended, "a replica failed: \(outcome.output)")
                }
                // Plain values: an expectation on the figures would print all of them, every replica's output included.
                let (reuse, refreshes, failures) = (figures.reuseDetections, figures.refreshes, figures.failedRequests)
                let (tokenFailures, answers) = (figures.failedTokenRequests, figures.sessionAnswers)
                #expect(reuse == 0, "the server detected the reuse of a rotated refresh token")
                #expect(refreshes == expiries, "one refresh per expiry")
                #expect(tokenFailures == 0, "token endpoint failures: \(figures.tokenFailures)")
                #expect(failures == 0, "requests failed")
                #expect(answers, "the session no longer answers")
            }
        }
    }
}

/// A replica scenario against django-oauth-toolkit (`TOKENKIT_INTEROP_URL`, as `.ci/faults` and `.ci/interop` set
/// it) behind a ``HoldingProxy``, on the PostgreSQL server of ``ReplicaDatabase`` with its restart script.
final class DjangoReplicaRun: Sendable {
    /// What the test does to the database while the refresh is held.
    enum Fault: Sendable {
        /// `$TOKENKIT_POSTGRES_RESTART immediate`: `pg_ctl restart -m immediate`, every connection dropped.
        case restart
        /// `pg_terminate_backend` of the connection holding the account's advisory lock.
        case terminateHolder
        /// `$TOKENKIT_POSTGRES_RESTART stop`, an outage of this length (the fault itself, not a wait for something
        /// to happen), then `start`.
        case outage(Duration)
    }

    /// The outcome of one run, without secrets.
    struct Figures: Sendable {
        var refreshes: Int
        var reuseDetections: Int
        var tokenFailures: [String: Int]
        var failedRequests: Int
        var requests: Int
        var sessionAnswers: Bool
        var faultDuration: Duration
        var outcomes: [ReplicaWorker.Outcome]
        var timeline: [String]

        var failedTokenRequests: Int { tokenFailures.values.reduce(0, +) }

        /// One line: refreshes, reuse detections, failed requests, whether the session answers.
        var summary: String {
            let seconds = Double(faultDuration.components.attoseconds) / 1e18 + Double(faultDuration.components.seconds)
            return "\(refreshes) refreshes for \(ChildProcessTests.RestartMidRefreshTests.expiries) expiries, "
                + "\(reuseDetections) reuse detections, \(failedRequests) of \(requests) requests failed, "
                + "token endpoint failures \(tokenFailures.isEmpty ? "none" : "\(tokenFailures)"), "
                + "session \(sessionAnswers ? "answers" : "lost"); fault took \(String(format: "%.2f", seconds)) s"
        }
    }

    static let urlVariable = "TOKENKIT_INTEROP_URL"
    /// The interop server's fixed test user and confidential client (`Interop/django/project/interop/fixtures.py`).
    static let username = "alice"
    static let password = "alice-interop-password"
    static let clientID = "interop-confidential"
    static let clientSecret = "interop-confidential-secret"

    static var djangoURL: URL? {
        ProcessInfo.processInfo.environment[urlVariable].flatMap { $0.isEmpty ? nil : URL(string: $0) }
    }

    /// Whether PostgreSQL, its restart script and django-oauth-toolkit are all configured.
    static var isConfigured: Bool {
        ReplicaDatabase.isConfigured && ReplicaDatabase.restartCommand != nil && djangoURL != nil
    }

    static let skipMessage: Comment =
        "Restart-mid-refresh tests skipped: set TOKENKIT_POSTGRES_URL, TOKENKIT_POSTGRES_RESTART (a script taking stop|start|restart|immediate) and TOKENKIT_INTEROP_URL (a django-oauth-toolkit from Interop/django/start); .ci/faults does"

    let django: URL
    let proxy: HoldingProxy
    let proxyURL: URL
    let database = ReplicaTable()

    private init() async throws {
        django = try #require(Self.djangoURL)
        TestSecrets.shared.register(Self.password, as: .password, origin: "django-oauth-toolkit user")
        TestSecrets.shared.register(Self.clientSecret, as: .clientSecret, origin: "django-oauth-toolkit client")
        proxy = HoldingProxy(upstream: django)
        proxyURL = try await proxy.start()
    }

    /// Runs `body` with a fresh scenario, then ends the workers, stops the proxy and drops the table.
    static func run(_ body: (DjangoReplicaRun) async throws -> Void) async throws {
        let run = try await DjangoReplicaRun()
        do {
            try await body(run)
        } catch {
            await run.finish()
            throw error
        }
        await run.finish()
    }

    private func finish() async {
        await database.endWorkers()
        await proxy.stop()
        await database.drop()
    }

    /// Signs in, launches the replicas with the first refresh held at `hold`, does `fault` while it is held,
    /// releases it once every other replica has been to the database since, and waits for the replicas.
    func refreshWithFault(
        hold: HoldingProxy.Hold, fault: Fault, processes: Int, requests: Int, expiries: Int, databaseTimeout: Int = 2
    ) async throws -> Figures {
        try await configureServer(accessTokenLifetime: ChildProcessTests.RestartMidRefreshTests.accessTokenLifetime)
        try await signIn()
        let start = try await stats()

        proxy.holdNextRefresh(hold)
        let workers = try database.launch(
            processes,
            arguments: [
                "--server", proxyURL.absoluteString, "--oauth-token-path", "o/token/",
                "--oauth-client-id", Self.clientID, "--api-path", "api/me", "--requests", "\(requests)",
                "--expiries", "\(expiries)", "--database-timeout", "\(databaseTimeout)",
            ],
            environment: ["SESSION_WORKER_CLIENT_SECRET": Self.clientSecret])
        let origin = Date()
        let held = await proxy.waitUntilHeld(within: .seconds(30))
        try #require(held == hold, "the first refresh was not held: \(proxy.timeline(since: origin))")

        let holder = try await database.lockHolder()
        proxy.note("holder: worker \(holder.workerPID), its lock on backend \(holder.backendPID)")
        let others = workers.map(\.pid).filter { $0 != holder.workerPID }
        let faultStarted = ContinuousClock.now
        switch fault {
        case .restart:
            let restart = try #require(ReplicaDatabase.restartCommand)
            proxy.note("database restart (pg_ctl restart -m immediate) begins")
            #expect(try await runScript(restart, "immediate") == 0, "the restart script failed")
            proxy.note("database restart done")
        case .terminateHolder:
            proxy.note("pg_terminate_backend(\(holder.backendPID)) begins")
            try await database.withStore { client, _ in
                _ = try await client.query("SELECT pg_terminate_backend(\(holder.backendPID))")
            }
            proxy.note("pg_terminate_backend done")
        case .outage(let length):
            let restart = try #require(ReplicaDatabase.restartCommand)
            proxy.note("database stop (pg_ctl stop -m fast) begins")
            #expect(try await runScript(restart, "stop") == 0, "the stop failed")
            proxy.note("database stopped; down for \(length)")
            try await Task.sleep(for: length)
            proxy.note("database start begins")
            #expect(try await runScript(restart, "start") == 0, "the start failed")
            proxy.note("database started")
        }
        let faultDuration = ContinuousClock.now - faultStarted
        proxy.note("row after the fault: \(try await leaseRow()?.description ?? "none")")
        try await waitUntilEveryReplicaWasBack(others, answeredRefreshes: hold == .response ? 1 : 0)
        proxy.note("releasing the held refresh")
        proxy.release()

        var outcomes: [ReplicaWorker.Outcome] = []
        for worker in workers { outcomes.append(await worker.outcome()) }
        proxy.note("every replica ended")
        let end = try await stats()
        let answers = try await sessionAnswers()
        return Figures(
            refreshes: end.refreshGrants - start.refreshGrants, reuseDetections: end.reuseDetections,
            tokenFailures: end.tokenFailures, failedRequests: outcomes.map(\.failedRequests).reduce(0, +),
            requests: processes * requests * expiries, sessionAnswers: answers, faultDuration: faultDuration,
            outcomes: outcomes, timeline: proxy.timeline(since: origin))
    }

    /// Waits until the held refresh may go on: each replica in `pids` has run a statement on the database since the
    /// fault (a `pg_stat_activity` row of its pool, `session-worker-PID`, whose last statement started after the
    /// database's `now()` here and has finished), and the session row's lease, when the table has one, has been
    /// renewed since (its expiry moved later), let go, or taken by another owner (its fence moved). Or the server
    /// answered a refresh other than the held one (`answered`: how many it had answered when the fault began).
    /// Then every replica has had its chance to take the lock and present the refresh token it holds, the held
    /// answer has stayed on the wire for as long as the holder's lease needed renewing (a live holder keeps it), and
    /// a replica that presented a token has been answered before the held refresh goes on.
    private func waitUntilEveryReplicaWasBack(_ pids: [Int32], answeredRefreshes answered: Int) async throws {
        let initial = try await leaseRow()
        let missing = try await database.waitUntilBack(
            pids, within: .seconds(20), orUntil: { self.answeredRefreshes > answered },
            settled: { client in LeaseRow.settled(from: initial, to: try await self.leaseRow(client)) })
        let last = try await leaseRow()
        if answeredRefreshes > answered {
            proxy.note("another refresh was answered (replicas not back yet: \(missing.count))")
        } else if !missing.isEmpty {
            proxy.note("not back to the database within 20 s: \(missing.joined(separator: ", "))")
        } else {
            proxy.note("every other replica has been to the database since the fault")
        }
        proxy.note("row: \(last?.description ?? "none")")
    }

    /// The session row's generation and lease (when the table has lease columns), never its payload.
    struct LeaseRow: Sendable, CustomStringConvertible {
        var generation: Int64
        var fence: String?
        var owner: Bool
        var expiresAt: Date?
        var expiresInMilliseconds: Int64?

        var description: String {
            guard let fence else { return "generation \(generation), no lease columns" }
            guard owner, let expiresInMilliseconds else {
                return "generation \(generation), lease fence \(fence), free"
            }
            return "generation \(generation), lease fence \(fence), "
                + (expiresInMilliseconds > 0
                    ? "expires in \(expiresInMilliseconds) ms" : "expired \(-expiresInMilliseconds) ms ago")
        }

        /// Whether the lease moved on from `initial`: renewed, let go or taken (always, without lease columns).
        static func settled(from initial: LeaseRow?, to row: LeaseRow?) -> Bool {
            guard let initial, let row, initial.fence != nil, initial.owner, let before = initial.expiresAt else {
                return true
            }
            guard row.owner, let after = row.expiresAt else { return true }
            return row.fence != initial.fence || after > before
        }
    }

    /// The session row's lease, on a pool of its own.
    private func leaseRow() async throws -> LeaseRow? {
        try await database.withStore { client, _ in try await leaseRow(client) }
    }

    private func leaseRow(_ client: PostgresClient) async throws -> LeaseRow? {
        let rows = try await client.query(
            """
            SELECT generation, to_jsonb(t)->>'lease_fence', (to_jsonb(t)->>'lease_owner') IS NOT NULL,
                (to_jsonb(t)->>'lease_expires_at')::timestamptz,
                (EXTRACT(EPOCH FROM (to_jsonb(t)->>'lease_expires_at')::timestamptz - now()) * 1000)::bigint
            FROM \(unescaped: database.table) t WHERE account = 'default'
            """)
        for try await (generation, fence, owner, expiresAt, left) in rows.decode(
            (Int64, String?, Bool, Date?, Int64?).self)
        {
            return LeaseRow(
                generation: generation, fence: fence, owner: owner, expiresAt: expiresAt, expiresInMilliseconds: left)
        }
        return nil
    }

    /// The refreshes the server answered so far.
    private var answeredRefreshes: Int { proxy.counts.refreshAnswers.values.reduce(0, +) }

    // MARK: - The server

    /// django-oauth-toolkit's counters (`GET /debug/stats`): what the test reads of them.
    struct Stats: Decodable {
        var refreshGrants: Int
        var reuseDetections: Int
        var tokenFailures: [String: Int]

        enum CodingKeys: String, CodingKey {
            case refreshGrants = "refresh_grants"
            case reuseDetections = "reuse_detections"
            case tokenFailures = "token_failures"
        }
    }

    func stats() async throws -> Stats {
        try JSONDecoder().decode(Stats.self, from: try await debug(.get, "debug/stats"))
    }

    /// Short-lived access tokens, reuse protection on, no grace window; counters zeroed.
    private func configureServer(accessTokenLifetime: Int) async throws {
        let config =
            "{\"access_token_expire_seconds\": \(accessTokenLifetime), \"refresh_token_reuse_protection\": true, "
            + "\"refresh_token_grace_period_seconds\": 0}"
        _ = try await debug(.post, "debug/config", json: config)
        _ = try await debug(.post, "debug/reset", json: "{}")
    }

    private func debug(_ method: HTTPRequest.Method, _ path: String, json: String? = nil) async throws -> Data {
        var request = HTTPRequest(method: method, url: django.appending(path: path))
        if json != nil { request.headerFields[.contentType] = "application/json" }
        let (response, body) = try await URLSessionTransport().send(request, body: json.map { Data($0.utf8) })
        try #require(response.status.code == 200, "\(method) /\(path) answered \(response.status.code)")
        return body
    }

    private func endpoint(_ base: URL) -> TokenEndpoint {
        TokenEndpoint(
            url: base.appending(path: "o/token/"),
            client: OAuthClient(id: Self.clientID, secret: Self.clientSecret, authentication: .basic),
            transport: Demo.transport())
    }

    /// Signs alice in with the password grant (straight to the server) and stores the session in the table.
    private func signIn() async throws {
        let endpoint = endpoint(django)
        try await database.withStore { _, store in
            let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store)
            try await client.signIn(
                .password(username: Self.username, password: Self.password, at: endpoint), userID: Self.username)
        }
    }

    /// Whether the stored session still gets `GET /api/me` answered (refreshing first if its token expired).
    private func sessionAnswers() async throws -> Bool {
        let endpoint = endpoint(django)
        guard let origin = HTTPOrigin(django) else { return false }
        let django = django
        return try await database.withStore { _, store in
            let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store)
            guard await client.restoreSession().hasSession else { return false }
            let api = AuthenticatedClient(
                transport: Demo.transport(), tokenProvider: client, configuration: .init(allowedOrigins: [origin]))
            let request = HTTPRequest(method: .get, url: django.appending(path: "api/me"))
            return (try? await api.executeWithAutoRetry(request).0.status.code) == 200
        }
    }
}
