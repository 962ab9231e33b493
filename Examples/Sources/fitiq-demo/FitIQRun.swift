import DemoAppSupport
import DemoAuthServer
import Foundation
import TokenKit

/// One run of `fitiq-demo`, step by step: prepare the store, log in, go through the expiries, restart, sum up.
struct FitIQRun {
    let demo: FitIQDemo
    let backend: DemoBackend
    let directory: URL
    let report: DemoReport
    /// The app's transport (counted), with the demo's timeout.
    let transport: CountingTransport

    /// What the rounds add up to.
    private struct Tally {
        var apiRequests = 0
        var failures = 0
        var outlived = 0

        mutating func add(_ sent: Int, _ failures: ConcurrentFailures) {
            apiRequests += sent
            self.failures += failures.lines.count
            outlived += failures.outlived
        }
    }

    init(demo: FitIQDemo, backend: DemoBackend, directory: URL, report: DemoReport) {
        self.demo = demo
        self.backend = backend
        self.directory = directory
        self.report = report
        self.transport = CountingTransport(DemoTransport.urlSession(timeout: demo.serverOptions.timeout))
    }

    func run() async throws {
        report.step("server", backend.summary)
        if demo.htmlServer {
            try await backend.setFaults(#"{"html_everywhere": true}"#)
            report.step("fault", "the server now answers every API call with an HTML page")
        }
        let persistence = try await openStore()
        let dependencies = makeDependencies(persistence)
        let start = try await backend.stats()
        let family = try await logIn(dependencies, persistence, start: start)
        var tally = Tally()
        for round in 0...demo.expiries {
            try await expiryRound(round, dependencies.apiClients, persistence, family: family, tally: &tally)
        }
        try await persistence.flush()
        try await restart(tally: &tally)
        try await sumUp(start: start, family: family, tally: tally)
    }

    /// Opens the file store (the Keychain in the app) and says what it holds.
    private func openStore() async throws -> TokenStoreAuthTokenPersistence {
        let store = FileTokenStore(directory: directory)
        switch await store.load(account: "default") {
        case .unavailable(let error):
            throw DemoFailure("the stored session in \(directory.path) cannot be read (\(error)); sign in again")
        case .found:
            report.step("store", "a session from an earlier run is in \(directory.path); logging in replaces it")
        case .absent: report.step("store", "no session yet in \(directory.path)")
        }
        return try await TokenStoreAuthTokenPersistence(store: store)
    }

    /// The app's own network client (it throws APIError.unauthorized on a 401) and its token persistence; the
    /// `AppDependencies` makes the one TokenRefreshClient.
    private func makeDependencies(_ persistence: any AuthTokenPersistenceProtocol) -> AppDependencies {
        AppDependencies(
            networkClient: HTTPTransportNetworkClient(transport: transport), authTokenPersistence: persistence,
            baseURL: backend.baseURL, apiKey: demo.account.apiKey)
    }

    /// FitIQ's login (`UserAuthAPIClient`) stores the pair through the persistence. Returns the login's family in
    /// the server's issue log.
    private func logIn(
        _ dependencies: AppDependencies, _ persistence: TokenStoreAuthTokenPersistence, start: [String: Int]
    ) async throws -> String {
        let account = demo.account
        let login = try await report.waiting(for: "the login", timeout: demo.serverOptions.timeout) {
            try await dependencies.tokenRefreshClient.signIn(
                fitIQLogin(
                    baseURL: backend.baseURL, email: account.email, password: account.password,
                    apiKey: account.apiKey, transport: transport))
        }
        try persistence.save(accessToken: login.accessToken, refreshToken: login.refreshToken ?? "")
        try await persistence.flush()
        let lifetime = Int(login.lifetime ?? 0)
        report.expect(
            try await backend.stats()["logins", default: 0] - start["logins", default: 0] == 1, "login",
            "\(dependencies.tokenRefreshClient.currentState), access token lives \(lifetime) s",
            proves: "the pair is saved through AuthTokenPersistenceProtocol")
        guard lifetime <= 60 else {
            throw DemoFailure("the server's access tokens live \(lifetime) s; start it with --access-token-lifetime 3")
        }
        guard let family = try await backend.issueLog().last(where: { $0.grant == .login })?.family else {
            throw DemoFailure("the server's issue log has no login")
        }
        return family
    }

    /// Round 0 on the fresh token; each later round after waiting (in real time) for the stored token to expire.
    /// Refreshes are counted against the expiries that elapsed (the server's issue log), so a round that outlives
    /// a token on a slow machine may need two refreshes, while a refresh of a still-valid token is a failure.
    private func expiryRound(
        _ round: Int, _ clients: [any FitIQAPI], _ persistence: any AuthTokenPersistenceProtocol, family: String,
        tally: inout Tally
    ) async throws {
        if round > 0 { try await waitInRealTime(until: try persistence.fetchToken()?.expiresAt ?? Date()) }
        let before = RefreshAccount.records(in: try await backend.issueLog(), family: family)
        let (sent, failures) = try await fire(clients, perClient: demo.requestsPerClient, "round \(round)")
        let account = RefreshAccount(log: try await backend.issueLog(), family: family, skipping: before)
        tally.add(sent, failures)
        let outlived = failures.outlived > 0 ? ", \(failures.outlived) outlived their fresh token (slow machine)" : ""
        let what =
            "\(sent) concurrent requests from \(clients.count) clients: \(account), \(failures.lines.count) failed"
            + outlived + failures.first
        if round == 0 {
            report.expect(
                account.early == 0 && failures.lines.isEmpty, "fresh token", what,
                proves: "a valid token is shared; a refresh only after an expiry")
        } else {
            report.expect(
                account.early == 0 && account.refreshes >= 1 && failures.lines.isEmpty,
                "expiry \(round)/\(demo.expiries)", what,
                proves: "executeWithAutoRetry: one refresh per expiry for all callers (single flight)")
        }
    }

    /// "Restart": new dependencies on the same directory, as the app's next launch would make.
    private func restart(tally: inout Tally) async throws {
        let loginsBefore = try await backend.stats()["logins", default: 0]
        let persistence = try await TokenStoreAuthTokenPersistence(store: FileTokenStore(directory: directory))
        let relaunched = makeDependencies(persistence)
        let stored = try persistence.fetchToken() != nil
        let (sent, failures) = try await fire(relaunched.apiClients, perClient: 1, "the restart")
        try await persistence.flush()
        tally.add(sent, failures)
        let logins = try await backend.stats()["logins", default: 0] - loginsBefore
        report.expect(
            stored && failures.lines.isEmpty && logins == 0, "restart",
            "new AppDependencies on the same store: \(stored ? "a stored pair" : "nothing stored"), \(sent) requests, "
                + "\(failures.lines.count) failed, \(logins) logins" + failures.first,
            proves: "the session resumes from the stored pair without logging in")
    }

    /// The whole run against the server's issue log, and the summary table.
    private func sumUp(start: [String: Int], family: String, tally: Tally) async throws {
        let end = try await backend.stats()
        let account = RefreshAccount(log: try await backend.issueLog(), family: family)
        report.expect(
            account.early == 0 && account.afterExpiry >= demo.expiries, "refreshes",
            "\(account) on the server's issue log (\(demo.expiries) waited for)",
            proves: "every refresh renewed an expired token; none was wasted")
        report.summary([
            ("API requests", "\(tally.apiRequests)"),
            ("HTTP requests (with login, refreshes)", "\(transport.requests)"),
            ("token expiries waited for", "\(demo.expiries)"),
            ("token expiries elapsed (issue log)", "\(account.afterExpiry)"),
            ("refreshes (server)", "\(end["refreshes", default: 0] - start["refreshes", default: 0])"),
            ("refreshes of a valid token", "\(account.early)"),
            ("401 retries", "\(transport.unauthorized)"),
            ("failed requests", "\(tally.failures)"),
            ("requests that outlived their fresh token", "\(tally.outlived)"),
            ("logins (server)", "\(end["logins", default: 0] - start["logins", default: 0])"),
        ])
    }

    /// Fires `perClient` requests from every client at once; returns how many, and a line per failure.
    private func fire(
        _ clients: [any FitIQAPI], perClient: Int, _ what: String
    ) async throws -> (sent: Int, failures: ConcurrentFailures) {
        let count = clients.count * perClient
        let failures = try await report.waiting(for: "the requests of \(what)", timeout: demo.serverOptions.timeout) {
            await runConcurrently(count, { try await clients[$0 % clients.count].fetch() }) {
                clients[$0 % clients.count].name
            }
        }
        return (count, failures)
    }
}
