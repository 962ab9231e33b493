import ArgumentParser
import AsyncHTTPClient
import DemoAppSupport
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import PostgresNIO
import TokenKit
import TokenKitAsyncHTTPClient
import TokenKitPostgres

/// `session-worker`: one app process of several that share one token store (the multi-process tests): a
/// `FileTokenStore` directory (`--store-dir`), or a PostgreSQL table (`--postgres-url`, each process with its own
/// connection pool, as replicas of a backend have).
///
/// It talks to the demo auth server (its JSON refresh endpoint), or with `--oauth-token-path` to an OAuth 2.0
/// server such as django-oauth-toolkit: the `refresh_token` grant at that path, as the client `--oauth-client-id`
/// with the secret in `SESSION_WORKER_CLIENT_SECRET` (HTTP Basic), and `--api-path` as the protected resource.
/// With OAuth it never signs in: the store must hold a session.
///
/// It resumes the session in the store (signing in only when the store is empty), then, for each of
/// `--expiries` access-token expiries, waits until the token it holds is due for a refresh and fires
/// `--requests` concurrent requests. Every process waits for the same token, so they meet at each expiry; the
/// store's lock and the re-read before refreshing must make that one refresh for all of them. It exits non-zero
/// when any request fails.
@main
struct SessionWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session-worker",
        abstract: "One of several processes sharing a token store against the demo auth server.")

    /// The HTTP client the worker sends its requests with.
    enum Transport: String, ExpressibleByArgument, CaseIterable {
        case urlSession = "urlsession"
        case asyncHTTPClient = "async-http-client"

        /// AsyncHTTPClient on Linux (TokenKit's documented transport for Linux backends), URLSession elsewhere.
        static var platformDefault: Transport {
            #if os(Linux)
                return .asyncHTTPClient
            #else
                return .urlSession
            #endif
        }
    }

    @Option(help: ArgumentHelp("The demo auth server, such as http://127.0.0.1:8080.", valueName: "url"))
    var server: String

    @Option(help: ArgumentHelp("The FileTokenStore directory shared by the processes.", valueName: "directory"))
    var storeDir: String?

    @Option(
        help: ArgumentHelp(
            "A PostgreSQL server to keep the session in instead, such as postgres://user@127.0.0.1:5432/db.",
            valueName: "url"))
    var postgresURL: String?

    @Option(
        help: ArgumentHelp(
            "Refresh with the OAuth refresh_token grant at this path of --server (such as o/token/) instead of the "
                + "demo server's JSON endpoint; the client secret comes from SESSION_WORKER_CLIENT_SECRET.",
            valueName: "path"))
    var oauthTokenPath: String?

    @Option(help: "The OAuth client ID (with --oauth-token-path).")
    var oauthClientID = "interop-confidential"

    @Option(help: "The protected resource each request gets, relative to --server.")
    var apiPath = "api/v1/progress"

    @Option(help: "The PostgreSQL table holding the sessions.")
    var table = "tokenkit_sessions"

    @Option(help: "Seconds a PostgreSQL operation may take before a read says unavailable.")
    var databaseTimeout = 2

    @Option(help: "The HTTP client: urlsession or async-http-client (the default on Linux).")
    var transport = Transport.platformDefault

    @Option(help: "Concurrent requests per expiry.")
    var requests = 50

    @Option(help: "How many access-token expiries to go through.")
    var expiries = 3

    @Option(
        help: ArgumentHelp(
            "After the first expiry, wait for DIRECTORY/down (the database was stopped), then fire the requests "
                + "once more, read the store, and create DIRECTORY/probed-PID.",
            valueName: "directory"))
    var outageGate: String?

    @OptionGroup var account: DemoAccountOptions

    func validate() throws {
        guard (1...500).contains(requests) else { throw ValidationError("--requests must be 1...500") }
        guard (1...20).contains(expiries) else { throw ValidationError("--expiries must be 1...20") }
        guard (1...60).contains(databaseTimeout) else { throw ValidationError("--database-timeout must be 1...60") }
        guard (storeDir == nil) != (postgresURL == nil) else {
            throw ValidationError("give one of --store-dir and --postgres-url")
        }
    }

    func run() async throws {
        guard let baseURL = URL(string: server), let origin = HTTPOrigin(baseURL) else {
            throw ValidationError("--server \(server) is not an http(s) URL")
        }
        let failed = try await DemoProcess.run(removingAtExit: nil) {
            try await withBackends { store, transport in
                let (refresher, api) = try await resumeOrSignIn(
                    baseURL: baseURL, origin: origin, store: store, transport: transport)
                var failed = 0
                for round in 1...expiries {
                    try await waitUntilDue(refresher)
                    let errors = await runConcurrently(requests) { _ in
                        _ = try await api.call(.get, baseURL, apiPath)
                    }
                    failed += errors.lines.count + errors.outlived
                    DemoOutput.line(
                        "round \(round): \(requests) requests, \(errors.lines.count + errors.outlived) failed"
                            + errors.first)
                    if round == 1, let outageGate {
                        failed += try await probeOutage(
                            gate: outageGate, refresher: refresher, api: api, store: store, baseURL: baseURL)
                    }
                }
                DemoOutput.line(
                    "end: store \(Self.describe(await store.load(account: "default"))), \(refresher.currentState)")
                return failed
            }
        }
        if failed > 0 { throw ExitCode.failure }
    }

    /// Runs `body` with the store and the transport, then shuts down what they run on (the HTTP client, the
    /// PostgreSQL pool).
    private func withBackends<T: Sendable>(
        _ body: (any TokenStore, any HTTPTransport) async throws -> T
    ) async throws -> T {
        let http: HTTPClient? =
            transport == .asyncHTTPClient
            ? HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
            : nil
        let httpTransport = TaggedTransport(
            base: http.map { AsyncHTTPClientTransport(client: $0, timeout: .seconds(DemoTransport.defaultTimeout)) }
                ?? DemoTransport.urlSession(),
            tag: Self.tag)
        let result: Result<T, any Error>
        do {
            result = .success(try await withStore { store in try await body(store, httpTransport) })
        } catch {
            result = .failure(error)
        }
        try? await http?.shutdown()
        return try result.get()
    }

    /// Runs `body` with the file store, or with a PostgreSQL store over a pool of this process's own (named
    /// `session-worker-PID` in `pg_stat_activity`, so a test can find the process holding a lock).
    private func withStore<T: Sendable>(_ body: (any TokenStore) async throws -> T) async throws -> T {
        if let storeDir {
            return try await body(FileTokenStore(directory: URL(fileURLWithPath: storeDir, isDirectory: true)))
        }
        let client = PostgresClient(configuration: try postgresConfiguration())
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let store = PostgresTokenStore(
                client: client,
                configuration: .init(tableName: table, operationTimeout: .seconds(databaseTimeout)))
            return try await body(store)
        }
    }

    /// The pool's configuration from `--postgres-url` (no TLS: the server is on loopback).
    private func postgresConfiguration() throws -> PostgresClient.Configuration {
        guard let text = postgresURL, var configuration = PostgresTokenStore.loopbackClientConfiguration(url: text)
        else { throw ValidationError("--postgres-url must look like postgres://USER[:PASSWORD]@HOST:PORT/DATABASE") }
        configuration.options.additionalStartupParameters = [("application_name", Self.tag)]
        return configuration
    }

    /// The refresh client on the shared store (signed in only when the store is empty) and the API client.
    private func resumeOrSignIn(
        baseURL: URL, origin: HTTPOrigin, store: any TokenStore, transport: any HTTPTransport
    ) async throws -> (TokenRefreshClient, AuthenticatedClient) {
        let strategy: any RefreshStrategy
        if let oauthTokenPath {
            let secret = ProcessInfo.processInfo.environment["SESSION_WORKER_CLIENT_SECRET"]
            let endpoint = TokenEndpoint(
                url: baseURL.appending(path: oauthTokenPath),
                client: OAuthClient(id: oauthClientID, secret: secret, authentication: .basic), transport: transport)
            strategy = OAuthRefreshStrategy(endpoint: endpoint)
        } else {
            strategy = JSONEndpointRefreshStrategy(baseURL: baseURL, apiKey: account.apiKey, transport: transport)
        }
        let refresher = TokenRefreshClient(
            strategy: strategy, store: store, configuration: DemoRefreshConfiguration.shortLivedTokens)
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: refresher, configuration: .init(allowedOrigins: [origin]))
        Self.printEvents(of: refresher)
        var state = await refresher.restoreSession()
        if case .signedOut = state, oauthTokenPath == nil {
            try await refresher.signIn(
                fitIQLogin(
                    baseURL: baseURL, email: account.email, password: account.password, apiKey: account.apiKey,
                    transport: transport))
            state = refresher.currentState
        }
        guard state.hasSession else { throw DemoFailure("no session: the store answered \(state)") }
        return (refresher, api)
    }

    /// Waits in real time until the token held is due for a refresh (the expiry policy's margin before `exp`):
    /// every process holds the same token, so they all start the round together. This wait is the test.
    private func waitUntilDue(_ refresher: TokenRefreshClient) async throws {
        guard let dueAt = Self.dueDate(refresher) else { return }
        try await waitInRealTime(until: dueAt, margin: .milliseconds(50))
    }

    /// When the token held becomes due for a refresh, or `nil` without one.
    private static func dueDate(_ refresher: TokenRefreshClient) -> Date? {
        guard let token = refresher.currentToken, let expiresAt = token.expiresAt else { return nil }
        let policy = refresher.configuration.expiryPolicy
        let margin =
            policy.effectiveLeeway(lifetime: token.lifetime)
            + policy.effectiveRefreshThreshold(lifetime: token.lifetime)
        return expiresAt.addingTimeInterval(-margin)
    }

    /// While the database is down (the test creates `gate/down` once it stopped it): the requests still work
    /// with the token held, and the store reads unavailable, not absent. Prints one line and returns the failed
    /// requests (all of them when the outage never came before the token was due).
    private func probeOutage(
        gate: String, refresher: TokenRefreshClient, api: AuthenticatedClient, store: any TokenStore, baseURL: URL
    ) async throws -> Int {
        let gateURL = URL(fileURLWithPath: gate, isDirectory: true)
        let deadline = Self.dueDate(refresher) ?? Date()
        // A bounded poll: the database outage has to come before this token is due.
        while !FileManager.default.fileExists(atPath: gateURL.appending(path: "down").path) {
            guard Date() < deadline else {
                DemoOutput.line("outage probe: no outage before the token was due")
                return requests
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let errors = await runConcurrently(requests) { _ in
            _ = try await api.call(.get, baseURL, apiPath)
        }
        let read = await store.load(account: "default")
        let failed = errors.lines.count + errors.outlived
        DemoOutput.line(
            "outage probe: store \(Self.describe(read)), state \(refresher.currentState), \(requests) requests, "
                + "\(failed) failed\(errors.first)")
        let pid = ProcessInfo.processInfo.processIdentifier
        _ = FileManager.default.createFile(atPath: gateURL.appending(path: "probed-\(pid)").path, contents: nil)
        return failed
    }

    /// This process's name towards the database (`application_name`) and the demo server (its client tag
    /// header): `session-worker-PID`, so a test can tell which process holds a lock or a refresh.
    static let tag = "session-worker-\(ProcessInfo.processInfo.processIdentifier)"

    /// Prints one `event: KIND` line for each auth event a test may wait for (never token text).
    private static func printEvents(of refresher: TokenRefreshClient) {
        let events = refresher.events()
        let printed: Set<AuthEvent.Kind> = [
            .tokenRefreshed, .tokenAdopted, .signedOut, .persistenceFailed, .persistenceRecovered,
            .storageUnavailable,
        ]
        Task {
            for await event in events where printed.contains(event.kind) {
                DemoOutput.line("event: \(event.kind)\(event.reason.map { "(\($0))" } ?? "")")
            }
        }
    }

    /// `found`, `absent` or `unavailable` (never the session's content).
    private static func describe(_ read: TokenStoreRead) -> String {
        switch read {
        case .found: "found"
        case .absent: "absent"
        case .unavailable: "unavailable"
        }
    }
}

/// Sends every request with the demo server's client tag header, so that the server can say which process sent
/// the refresh it holds.
private struct TaggedTransport: HTTPTransport {
    let base: any HTTPTransport
    let tag: String

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var request = request
        request.headerFields[HTTPField.Name("X-Client-Tag")!] = tag
        return try await base.send(request, body: body)
    }
}
