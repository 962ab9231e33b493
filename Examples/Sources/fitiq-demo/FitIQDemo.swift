import ArgumentParser
import DemoAppSupport
import DemoAuthServer
import Foundation
import TokenKit

/// `fitiq-demo`: five FitIQ-style API clients, written as the unification analysis migrates them, share one
/// `TokenRefreshClient` across several token expiries.
@main
struct FitIQDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fitiq-demo",
        abstract: "FitIQ-like app: five API clients share one TokenRefreshClient; one refresh per expiry.",
        discussion: """
            Starts the demo auth server in-process (or uses --server), logs in, fires concurrent requests \
            from five API clients across several access-token expiries, checks that each expiry caused \
            exactly one refresh and no request failed, then restarts from the stored pair without logging in. \
            Exits non-zero when an expectation fails.
            """
    )

    @Option(
        help: ArgumentHelp(
            "Use this demo auth server (e.g. http://127.0.0.1:8080) instead of starting one in-process.",
            valueName: "url"))
    var server: String?

    @Option(help: "The e-mail to log in with.")
    var email = "demo@example.com"

    @Option(help: "The password to log in with.")
    var password = "password123"

    @Option(help: "The X-API-Key the FitIQ endpoints require.")
    var apiKey = "demo-api-key"

    @Option(
        help: ArgumentHelp(
            "Where the file store keeps the session; a new temporary directory by default.",
            valueName: "directory"))
    var storeDir: String?

    @Option(help: ArgumentHelp("Access-token lifetime of the in-process server.", valueName: "seconds"))
    var tokenLifetime = 3

    @Option(help: "How many access-token expiries to go through.")
    var expiries = 3

    @Option(help: "Concurrent requests per API client and round.")
    var requestsPerClient = 25

    @Flag(help: "Make the server answer every API call with an HTML page (fault injection), to see the app cope.")
    var htmlServer = false

    func validate() throws {
        guard (1...60).contains(tokenLifetime) else { throw ValidationError("--token-lifetime must be 1...60") }
        guard (1...20).contains(expiries) else { throw ValidationError("--expiries must be 1...20") }
        guard (1...500).contains(requestsPerClient) else { throw ValidationError("--requests-per-client: 1...500") }
    }

    func run() async throws {
        let report = DemoReport(title: "FitIQ-like demo: 5 API clients, 1 TokenRefreshClient, executeWithAutoRetry")
        let temporary = FileManager.default.temporaryDirectory.appending(path: "fitiq-demo-\(UUID().uuidString)")
        let directory = storeDir.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? temporary
        await DemoBackend.run(
            external: server, tokenLifetime: tokenLifetime, resetsFaults: htmlServer, report: report
        ) { backend in
            try await demo(backend, directory, report)
        }
        try? FileManager.default.removeItem(at: temporary)
        if report.failed { throw ExitCode.failure }
    }

    private func demo(_ backend: DemoBackend, _ directory: URL, _ report: DemoReport) async throws {
        let baseURL = backend.baseURL
        report.step("server", backend.summary)
        if htmlServer {
            try await backend.setFaults(#"{"html_everywhere": true}"#)
            report.step("fault", "the server now answers every API call with an HTML page")
        }
        let store = FileTokenStore(directory: directory)
        switch await store.load(account: "default") {
        case .unavailable(let error):
            throw DemoFailure("the stored session in \(directory.path) cannot be read (\(error)); sign in again")
        case .found:
            report.step("store", "a session from an earlier run is in \(directory.path); logging in replaces it")
        case .absent: report.step("store", "no session yet in \(directory.path)")
        }

        // The app's own network client (it throws APIError.unauthorized on a 401) and its token persistence (the
        // Keychain in the app; a file store here). AppDependencies makes the one TokenRefreshClient.
        let transport = CountingTransport(URLSessionTransport())
        let networkClient = HTTPTransportNetworkClient(transport: transport)
        let persistence = try await TokenStoreAuthTokenPersistence(store: store)
        let dependencies = AppDependencies(
            networkClient: networkClient, authTokenPersistence: persistence, baseURL: baseURL, apiKey: apiKey)
        let clients = dependencies.apiClients

        // FitIQ's login (`UserAuthAPIClient`) stores the pair through the persistence.
        let start = try await backend.stats()
        let login = try await dependencies.tokenRefreshClient.signIn(
            fitIQLogin(baseURL: baseURL, email: email, password: password, apiKey: apiKey, transport: transport))
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

        var failures = 0
        var apiRequests = 0
        for round in 0...expiries {
            if round > 0 { try await waitUntilExpired(persistence) }
            let before = try await backend.stats()
            let (sent, failed, firstError) = await fire(clients, perClient: requestsPerClient)
            let refreshes = try await backend.stats()["refreshes", default: 0] - before["refreshes", default: 0]
            failures += failed
            apiRequests += sent
            let what =
                "\(sent) concurrent requests from \(clients.count) clients: \(refreshes) refresh(es), \(failed) failed"
            if round == 0 {
                report.expect(
                    refreshes == 0 && failed == 0, "fresh token", what + (firstError ?? ""),
                    proves: "a valid token is shared, no refresh")
            } else {
                report.expect(
                    refreshes == 1 && failed == 0, "expiry \(round)/\(expiries)", what + (firstError ?? ""),
                    proves: "executeWithAutoRetry: one refresh for all callers (single flight)")
            }
        }
        try await persistence.flush()

        // "Restart": new dependencies on the same directory, as the app's next launch would make.
        let loginsBefore = try await backend.stats()["logins", default: 0]
        let relaunchedStore = FileTokenStore(directory: directory)
        let relaunchedPersistence = try await TokenStoreAuthTokenPersistence(store: relaunchedStore)
        let relaunched = AppDependencies(
            networkClient: networkClient, authTokenPersistence: relaunchedPersistence, baseURL: baseURL,
            apiKey: apiKey)
        let stored = try relaunchedPersistence.fetchToken() != nil
        let (sent, failed, firstError) = await fire(relaunched.apiClients, perClient: 1)
        try await relaunchedPersistence.flush()
        failures += failed
        apiRequests += sent
        let logins = try await backend.stats()["logins", default: 0] - loginsBefore
        report.expect(
            stored && failed == 0 && logins == 0, "restart",
            "new AppDependencies on the same store: \(stored ? "a stored pair" : "nothing stored"), \(sent) requests, "
                + "\(failed) failed, \(logins) logins" + (firstError ?? ""),
            proves: "the session resumes from the stored pair without logging in")

        let end = try await backend.stats()
        let refreshes = end["refreshes", default: 0] - start["refreshes", default: 0]
        report.expect(
            refreshes == expiries, "refreshes", "\(refreshes) on the server for \(expiries) expiries",
            proves: "no refresh was wasted")
        report.summary([
            ("API requests", "\(apiRequests)"),
            ("HTTP requests (with login, refreshes)", "\(transport.requests)"),
            ("token expiries", "\(expiries)"),
            ("refreshes (server)", "\(refreshes)"),
            ("401 retries", "\(transport.unauthorized)"),
            ("failed requests", "\(failures)"),
            ("logins (server)", "\(end["logins", default: 0] - start["logins", default: 0])"),
        ])
    }

    /// Fires `perClient` requests from every client at once.
    private func fire(_ clients: [any FitIQAPI], perClient: Int) async -> (sent: Int, failed: Int, String?) {
        await withTaskGroup(of: String?.self) { group in
            for client in clients {
                for _ in 0..<perClient {
                    group.addTask {
                        do {
                            try await client.fetch()
                            return nil
                        } catch {
                            return "\(client.name): \(DemoFailure.describe(error))"
                        }
                    }
                }
            }
            var errors: [String] = []
            for await error in group { if let error { errors.append(error) } }
            return (clients.count * perClient, errors.count, errors.first.map { " (first: \($0))" })
        }
    }

    /// Waits, in real time, until the stored access token has expired: this wait is the demo.
    private func waitUntilExpired(_ persistence: any AuthTokenPersistenceProtocol) async throws {
        let expiresAt = try persistence.fetchToken()?.expiresAt ?? Date()
        let seconds = max(0, expiresAt.timeIntervalSinceNow) + 0.2
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
    }

}
