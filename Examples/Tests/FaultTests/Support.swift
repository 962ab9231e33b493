import DemoAppSupport
import DemoAuthServer
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Logging
import Synchronization
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

/// The demo server's API key and account, as the demo apps use them.
enum Demo {
    static let apiKey = "demo-api-key"
    static let userID = "user-1001"

    /// The server's logger in tests: at trace, so every line of the server and of Hummingbird goes to the log
    /// check's capture (not to the test output). Made on each use, after the check installed its backend.
    static var traceLogger: Logger {
        var logger = Logger(label: "demo-auth-server")
        logger.logLevel = .trace
        return logger
    }

    /// A transport over real HTTP that registers, for the log check, every credential it sends and every
    /// token it receives.
    static func transport() -> any HTTPTransport { SecretRegisteringTransport(URLSessionTransport()) }

    /// Registers the secrets a demo server configuration holds: its users' passwords, its clients' secrets
    /// and its API key.
    static func registerSecrets(of configuration: DemoAuthServer.Configuration) {
        let secrets = TestSecrets.shared
        for user in configuration.users {
            secrets.register(user.password, as: .password, origin: "demo server \(user.id)")
        }
        for client in configuration.clients {
            if let secret = client.secret {
                secrets.register(secret, as: .clientSecret, origin: "demo server \(client.id)")
            }
        }
        if let apiKey = configuration.apiKey {
            secrets.register(apiKey, as: .credential, origin: "demo server API key")
        }
    }

    /// The FitIQ-style login as a custom sign-in grant: the JSON refresh endpoint only takes refresh tokens issued
    /// by this login.
    static func login(baseURL: URL, transport: any HTTPTransport) -> SignInGrant {
        fitIQLogin(
            baseURL: baseURL, email: "demo@example.com", password: "password123", apiKey: apiKey, transport: transport)
    }
}

/// A transport that forwards everything, except that a test can make the refresh endpoint hang until cancelled
/// or answer a canned response without reaching the server (a proxy's error page).
final class FaultyTransport: HTTPTransport {
    enum Mode: Sendable {
        case forward
        case hang
        /// The server gets the request and answers, but the connection is reset before the answer arrives
        /// (the error URLSession reports for a reset connection).
        case resetAfterSending
        case answer(status: Int, contentType: String, body: String)
    }

    private let base: any HTTPTransport
    private let mode = Mutex(Mode.forward)

    init(_ base: any HTTPTransport) { self.base = base }

    /// Changes what the refresh endpoint does from now on.
    func set(_ newMode: Mode) { mode.withLock { $0 = newMode } }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard request.path?.hasSuffix("/auth/refresh") == true else { return try await base.send(request, body: body) }
        switch mode.withLock({ $0 }) {
        case .forward:
            return try await base.send(request, body: body)
        case .resetAfterSending:
            _ = try await base.send(request, body: body)
            throw NetworkRetryError.cannotConnect
        case .hang:
            let (stream, continuation) = AsyncStream<Never>.makeStream()
            await withTaskCancellationHandler {
                for await _ in stream {}
            } onCancel: {
                continuation.finish()
            }
            throw CancellationError()
        case .answer(let status, let contentType, let text):
            var fields = HTTPFields()
            fields[.contentType] = contentType
            return (HTTPResponse(status: .init(code: status), headerFields: fields), Data(text.utf8))
        }
    }
}

/// Every auth event a client publishes, collected as they come.
final class EventLog: Sendable {
    private let events = Mutex<[AuthEvent]>([])
    private let collector = Mutex<Task<Void, Never>?>(nil)

    init(_ client: TokenRefreshClient) {
        let stream = client.events()
        let task = Task { [weak self] in
            for await event in stream { self?.events.withLock { $0.append(event) } }
        }
        collector.withLock { $0 = task }
    }

    deinit { collector.withLock { $0?.cancel() } }

    /// The events of `kind` so far.
    func all(_ kind: AuthEvent.Kind) -> [AuthEvent] { events.withLock { $0.filter { $0.kind == kind } } }

    /// Waits (a bounded poll, no clock) until `count` events of `kind` have arrived, and returns them all.
    @discardableResult
    func waitFor(
        _ kind: AuthEvent.Kind, count: Int = 1, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> [AuthEvent] {
        for _ in 0..<100_000 {
            let found = all(kind)
            if found.count >= count { return found }
            await Task.yield()
        }
        Issue.record("expected \(count) \(kind) event(s), saw \(all(kind).count)", sourceLocation: sourceLocation)
        return all(kind)
    }
}

/// One test's world: the demo server and the client share a manual clock (token expiry and the client's
/// timeouts and backoff move only when the test says so), the client talks real HTTP to the server through a
/// `FaultyTransport`, and its session lives in a `FileTokenStore` that a test may wrap.
final class Harness: Sendable {
    static let accessTokenLifetime = 60

    let clock = ManualClock()
    let server: DemoAuthServer
    let baseURL: URL
    let directory: URL
    /// The real store under whatever wrapper a test put around it: the truth about what is persisted.
    let fileStore: FileTokenStore
    let transport: FaultyTransport
    let client: TokenRefreshClient
    let api: AuthenticatedClient
    let events: EventLog

    /// Starts the server and makes the client (not signed in yet).
    ///
    /// - Parameters:
    ///   - server: The server's configuration (port 0, 60-second access tokens unless given).
    ///   - configuration: The client's configuration; by default no retries inside a refresh, zero backoff, a
    ///     10-second refresh timeout.
    ///   - store: Wraps the file store, for failure injection.
    init(
        server serverConfiguration: DemoAuthServer.Configuration = .init(
            accessTokenLifetime: .seconds(Harness.accessTokenLifetime)),
        configuration: TokenRefreshClient.Configuration = Harness.clientConfiguration(),
        store wrap: (FileTokenStore) -> any TokenStore = { $0 }
    ) async throws {
        Demo.registerSecrets(of: serverConfiguration)
        server = DemoAuthServer(configuration: serverConfiguration, now: clock.wallClock, logger: Demo.traceLogger)
        baseURL = try await server.start()
        directory = FileManager.default.temporaryDirectory.appending(path: "fault-tests-\(UUID().uuidString)")
        fileStore = FileTokenStore(directory: directory)
        transport = FaultyTransport(Demo.transport())
        client = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: baseURL, apiKey: Demo.apiKey, transport: transport, now: clock.wallClock),
            store: wrap(fileStore), configuration: configuration, clock: clock, now: clock.wallClock,
            random: { 0 })
        api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(allowedOrigins: [HTTPOrigin(baseURL)].compactMap { $0 }))
        events = EventLog(client)
    }

    /// No retries inside one refresh and zero backoff, so each refresh is one request and the next call may
    /// refresh again at once (unless the server sent `Retry-After`).
    static func clientConfiguration(
        refreshTimeout: Duration? = .seconds(10), retries: Int = 0
    ) -> TokenRefreshClient.Configuration {
        .init(
            refreshTimeout: refreshTimeout, maximumRefreshes: 100,
            backoff: .init(retries: retries, initialDelay: .zero, maximumDelay: .zero))
    }

    /// Runs `body` with a signed-in harness, then stops the server and removes the store directory.
    static func run(
        server: DemoAuthServer.Configuration = .init(accessTokenLifetime: .seconds(Harness.accessTokenLifetime)),
        configuration: TokenRefreshClient.Configuration = Harness.clientConfiguration(),
        store: (FileTokenStore) -> any TokenStore = { $0 },
        _ body: (Harness) async throws -> Void
    ) async throws {
        let harness = try await Harness(server: server, configuration: configuration, store: store)
        do {
            try await harness.client.signIn(Demo.login(baseURL: harness.baseURL, transport: harness.transport))
            try await body(harness)
        } catch {
            await harness.shutdown()
            throw error
        }
        await harness.shutdown()
    }

    func shutdown() async {
        await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Moves the shared clock past the access token's expiry.
    func expire() { clock.advance(by: .seconds(Harness.accessTokenLifetime + 1)) }

    /// What the file store holds now.
    func stored() async -> StoredSession? {
        if case .found(let session) = await fileStore.load(account: "default") { return session }
        return nil
    }

    /// Whether the stored session is still `before`: the same pair, user, identity and generation. A record of the
    /// transient server failures met since may have been written with it (`recentServerFailures`).
    func storedSessionIsStill(_ before: StoredSession) async -> Bool {
        guard let now = await stored() else { return false }
        return now.token == before.token && now.userID == before.userID && now.sessionID == before.sessionID
            && now.generation == before.generation
    }

    /// One protected request (`GET /api/v1/progress`) with the client's token; returns the status.
    func fetch() async throws -> Int {
        let request = HTTPRequest(method: .get, url: baseURL.appending(path: "api/v1/progress"))
        return try await api.executeWithAutoRetry(request).0.status.code
    }

    /// Waits until `condition` holds: a bounded poll (at most 60 s of real time, a guard against a hang on a loaded machine) for what happens on the
    /// server's threads, never a sleep.
    func poll(sourceLocation: SourceLocation = #_sourceLocation, until condition: () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition did not hold within 60 s", sourceLocation: sourceLocation)
                return
            }
            await Task.yield()
        }
    }

    /// Calls `validToken()` from `count` callers at once; returns each one's outcome.
    func validTokens(_ count: Int) async -> [Result<AuthToken, TokenRefreshError>] {
        await withTaskGroup(of: Result<AuthToken, TokenRefreshError>.self) { group in
            for _ in 0..<count {
                group.addTask { [client] in
                    do { return .success(try await client.validToken()) } catch {
                        return .failure(error as? TokenRefreshError ?? .unexpectedResponse)
                    }
                }
            }
            var results: [Result<AuthToken, TokenRefreshError>] = []
            for await result in group { results.append(result) }
            return results
        }
    }
}

extension Result {
    /// The error of a failure, `nil` for a success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
