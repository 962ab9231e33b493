public import AuthToken
public import Foundation
import HTTPTypes
import Hummingbird
public import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import UnixSignals

/// A small OAuth 2.0 and FitIQ-style authorization server on loopback, for the TokenKit examples and tests.
///
/// It logs users in with a password, issues ES256 JWT access tokens and opaque refresh tokens, rotates refresh
/// tokens with reuse detection and an optional grace window, revokes (RFC 7009), publishes its key (JWKS),
/// guards a few protected resources with RFC 6750 challenges, counts everything, and injects faults on demand.
/// Wall time comes from the injected `now`, so tests drive expiry without waiting.
///
/// Start it in-process on a free port and stop it when done:
///
/// ```swift
/// let server = DemoAuthServer(configuration: .init(accessTokenLifetime: .seconds(5)))
/// let baseURL = try await server.start()   // http://127.0.0.1:<free port>
/// // ... point a client at baseURL ...
/// await server.stop()
/// ```
///
/// Its state (users' sessions, counters, key) outlives `stop()`: start it again, on the same port with
/// `start(onPort: baseURL.port)`, to simulate a server that was unreachable for a while.
public final class DemoAuthServer: Sendable {
    private struct Running: Sendable {
        let baseURL: URL
        let group: ServiceGroup
        let task: Task<Void, any Error>
    }

    private enum Lifecycle: Sendable {
        case stopped
        case starting
        case running(Running)
    }

    /// The configuration the server was created with.
    public let configuration: Configuration
    let authority: TokenAuthority
    /// The BetterAuth-style accounts and cookie sessions (`DemoAuthServer+BetterAuth.swift`).
    let cookieSessions: CookieSessions
    /// The Clerk-like session issuer (RS256 or ES256 session JWTs, `/v1/jwks`, OpenID Connect discovery, key
    /// rotation); see ``SessionIssuer``. Its `iss` is the server's base URL unless configured.
    public let sessionIssuer: SessionIssuer
    private let logger: Logger
    private let lifecycle = Mutex<Lifecycle>(.stopped)

    /// Creates a server; it does not listen until ``start(onPort:)`` or ``run(onPort:whenRunning:)``.
    ///
    /// - Parameters:
    ///   - configuration: Users, clients, lifetimes, rotation rules and faults.
    ///   - now: The wall clock; defaults to `AuthToken.systemNow`. Tests pass a clock they move by hand.
    ///   - logger: Where the server logs (one line per login, refresh, reuse detection and revocation; never
    ///     token text).
    ///   - issuer: The options of the Clerk-like ``sessionIssuer``.
    public init(
        configuration: Configuration = Configuration(),
        now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        logger: Logger = Logger(label: "demo-auth-server"),
        issuer: SessionIssuer.Configuration = SessionIssuer.Configuration()
    ) {
        self.configuration = configuration
        self.logger = logger
        self.authority = TokenAuthority(configuration: configuration, now: now, logger: logger)
        self.cookieSessions = CookieSessions(configuration: configuration.betterAuth, now: now, logger: logger)
        self.sessionIssuer = SessionIssuer(configuration: issuer, now: now, logger: logger)
    }

    /// The base URL while the server is running, such as `http://127.0.0.1:54321`; `nil` otherwise.
    public var baseURL: URL? {
        lifecycle.withLock { lifecycle in
            if case .running(let running) = lifecycle { return running.baseURL }
            return nil
        }
    }

    /// The counters so far (also served at `GET /debug/stats`).
    public var stats: Stats { authority.stats }

    /// The access tokens issued so far, oldest first (also served at `GET /debug/issued`).
    public var issueLog: [IssueRecord] { authority.issueLog }

    /// The faults still pending (also served at `GET /debug/faults`).
    public var faults: Faults { authority.faults }

    /// Replaces the pending faults (also possible with `POST /debug/faults`).
    ///
    /// - Parameter faults: The new fault plan; `Faults()` turns every fault off.
    public func setFaults(_ faults: Faults) { authority.faults = faults }

    /// Revokes every session, or every session of one user, as an administrator would.
    ///
    /// - Parameter userID: The user whose sessions to revoke; `nil` for everyone.
    /// - Returns: How many sessions (refresh-token families) were revoked.
    @discardableResult
    public func revokeAllSessions(userID: String? = nil) -> Int { authority.revokeAllSessions(userID: userID) }

    /// Starts listening on 127.0.0.1 and returns once the port is bound.
    ///
    /// - Parameter port: The port to bind; `nil` uses ``Configuration/port`` (`0` picks a free port).
    /// - Returns: The base URL, with the port actually bound.
    /// - Throws: ``DemoAuthServerError/alreadyRunning``, or ``DemoAuthServerError/startFailed`` (port taken).
    @discardableResult
    public func start(onPort port: Int? = nil) async throws -> URL {
        try await launch(port: port ?? configuration.port, signals: []).baseURL
    }

    /// Stops listening; connections are closed once their requests are answered. Does nothing when stopped.
    public func stop() async {
        let running: Running? = lifecycle.withLock { lifecycle in
            guard case .running(let running) = lifecycle else { return nil }
            lifecycle = .stopped
            return running
        }
        guard let running else { return }
        await running.group.triggerGracefulShutdown()
        _ = await running.task.result
        logger.info("stopped", metadata: ["url": "\(running.baseURL.absoluteString)"])
    }

    /// Runs the server until SIGINT or SIGTERM (or until ``stop()``), as the command-line tool does.
    ///
    /// - Parameters:
    ///   - port: The port to bind; `nil` uses ``Configuration/port``.
    ///   - whenRunning: Called once with the base URL when the port is bound.
    /// - Throws: ``DemoAuthServerError/alreadyRunning``, ``DemoAuthServerError/startFailed``, or what the
    ///   server failed with while running.
    public func run(onPort port: Int? = nil, whenRunning: @Sendable (URL) -> Void) async throws {
        let running = try await launch(port: port ?? configuration.port, signals: [.sigint, .sigterm])
        whenRunning(running.baseURL)
        defer { lifecycle.withLock { $0 = .stopped } }
        try await running.task.value
    }

    private func launch(port: Int, signals: [UnixSignal]) async throws -> Running {
        try lifecycle.withLock { lifecycle in
            guard case .stopped = lifecycle else { throw DemoAuthServerError.alreadyRunning }
            lifecycle = .starting
        }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let router = Routes(authority: authority).makeRouter()
        SessionIssuerRoutes(
            issuer: sessionIssuer, users: configuration.users, debugEndpoints: configuration.debugEndpoints
        ).register(on: router)
        let app = Application(
            router: BetterAuthRoutes(sessions: cookieSessions, debugEndpoints: configuration.debugEndpoints)
                .registered(on: router),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? port)
                continuation.finish()
            },
            logger: logger
        )
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: signals, logger: logger)
        )
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let boundPort = await iterator.next(), let baseURL = URL(string: "http://127.0.0.1:\(boundPort)") else {
            lifecycle.withLock { $0 = .stopped }
            let failure = await task.result
            if case .failure(let error) = failure { throw DemoAuthServerError.startFailed(error) }
            throw DemoAuthServerError.startFailed
        }
        sessionIssuer.served(at: baseURL)
        let running = Running(baseURL: baseURL, group: group, task: task)
        lifecycle.withLock { $0 = .running(running) }
        logger.info("listening", metadata: ["url": "\(baseURL.absoluteString)"])
        return running
    }
}
