import AsyncHTTPClient
public import Foundation
public import Logging
import Synchronization
import TokenKitAsyncHTTPClient
public import TokenVerification

/// The diet-app backend of seed 000 ("Backend JWT Verification"), in Swift: every `/users/...` and `/food-logs`
/// request carries a Clerk session JWT, verified by TokenKit's Hummingbird middleware (`TokenVerificationMiddleware`
/// from `TokenKitHummingbird`) or, with ``Configuration/framework`` `.vapor`, its Vapor 4 middleware (from
/// `TokenKitVapor`), against the issuer's JWKS, found through OpenID Connect discovery (RS256 only by
/// default, `exp`/`nbf`/`iat`, exact `iss`, `azp` among the app's origins; `aud` is not checked, because Clerk's
/// session tokens carry none: ``Configuration/clerkSessionTokens``).
///
/// - `GET /users/me`: `{"userId": sub, "sessionId": sid}`.
/// - `POST /users/me`: creates the user document (201) or updates it (200).
/// - `DELETE /users/me`: deletes the user's data, tells the identity provider (`onAccountDeleted`), answers
///   `{"success": true, "message": "Account and all data deleted"}`.
/// - `GET /food-logs`, `POST /food-logs`: the user's entries.
/// - Unauthenticated: 401 `{"error": "Missing authorization header"}` or `{"error": "Invalid token"}` with an
///   RFC 6750 `WWW-Authenticate`; 503 when the JWKS is unreachable past its staleness bound.
///
/// ```swift
/// // Keys through https://clerk.example.com/.well-known/openid-configuration's jwks_uri:
/// let backend = DietBackend(configuration: .init(issuer: "https://clerk.example.com"))
/// let baseURL = try await backend.start()
/// ```
public final class DietBackend: Sendable {
    /// The backend's options.
    public struct Configuration: Sendable {
        /// The server framework the backend runs on; the routes, the answers and the verification are the same.
        public enum Framework: String, Sendable, CaseIterable, CustomStringConvertible {
            /// Hummingbird 2, with `TokenKitHummingbird`.
            case hummingbird
            /// Vapor 4, with `TokenKitVapor`.
            case vapor

            /// The name, as the `--framework` option spells it.
            public var description: String { rawValue }
        }

        /// The exact `iss` of accepted tokens (the Clerk frontend API); also where discovery starts.
        public var issuer: String
        /// Where the issuer's JWKS is; `nil` (the default) finds it through OpenID Connect discovery, at the
        /// `jwks_uri` of `<issuer>/.well-known/openid-configuration`.
        public var jwksURL: URL?
        /// Accepted `azp` values (the app's origins), or `nil` to not check `azp`.
        public var authorizedParties: Set<String>?
        /// The audience rule: ``clerkSessionTokens`` by default, since this backend serves a Clerk app. A backend
        /// behind Auth0, Okta or another OpenID Connect issuer sets `.oneOf([its API identifier])`.
        public var audience: TokenVerifier.AudienceRule
        /// Accepted signing algorithms: the seed's checklist says `RS256` only.
        public var algorithms: Set<JWSAlgorithm>
        /// The JWKS cache and refetch bounds of the default key source (cooldown for unknown `kid`s, ...).
        public var keyCache: RemoteJWKSSource.Configuration
        /// The loopback port; `0` picks a free one.
        public var port: Int
        /// The server framework: Hummingbird (the default) or Vapor.
        public var framework: Framework

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - issuer: The exact `iss`, and the discovery base.
        ///   - jwksURL: The JWKS URL, or `nil` for OpenID Connect discovery.
        ///   - authorizedParties: Accepted `azp` values, or `nil`.
        ///   - audience: The audience rule; ``clerkSessionTokens`` by default.
        ///   - algorithms: Accepted algorithms; `RS256` by default.
        ///   - keyCache: The default key source's cache bounds.
        ///   - port: The loopback port; `0` by default.
        ///   - framework: The server framework; Hummingbird by default.
        public init(
            issuer: String, jwksURL: URL? = nil, authorizedParties: Set<String>? = nil,
            audience: TokenVerifier.AudienceRule = Configuration.clerkSessionTokens,
            algorithms: Set<JWSAlgorithm> = [.rs256], keyCache: RemoteJWKSSource.Configuration = .init(),
            port: Int = 0, framework: Framework = .hummingbird
        ) {
            self.issuer = issuer
            self.jwksURL = jwksURL
            self.authorizedParties = authorizedParties
            self.audience = audience
            self.algorithms = algorithms
            self.keyCache = keyCache
            self.port = port
            self.framework = framework
        }

        /// The choice for Clerk: session tokens carry no `aud` (every one is meant for the app's own backend), so
        /// `aud` is not checked and `azp` is checked against ``authorizedParties`` instead.
        public static let clerkSessionTokens = TokenVerifier.AudienceRule.notChecked(
            reason: "Clerk session tokens carry no aud; azp is checked against the app's origins")

        /// Where the default key source looks: the JWKS URL, or discovery at the issuer.
        public var keyLocation: RemoteJWKSSource.Location? {
            if let jwksURL { return .jwks(jwksURL) }
            return URL(string: issuer).map { .openIDDiscovery(issuer: $0) }
        }
    }

    /// What the backend has answered so far.
    public struct Stats: Sendable, Hashable {
        /// Requests that verified.
        public var authenticated = 0
        /// Requests refused, by reason (`missingAuthorization`, `expired`, `issuerMismatch`, ...).
        public var rejected: [String: Int] = [:]
        /// Accounts deleted.
        public var accountsDeleted = 0

        /// All refused requests.
        public var rejectedTotal: Int { rejected.values.reduce(0, +) }
    }

    /// A listening server, whichever the framework.
    struct Running: Sendable {
        let baseURL: URL
        /// Ends when the server has stopped.
        let finished: Task<Void, any Error>
        /// Stops the server and waits until it has.
        let stop: @Sendable () async -> Void
    }

    /// The options.
    public let configuration: Configuration
    /// The key source (a `RemoteJWKSSource` at ``Configuration/keyLocation`` unless one was given).
    public let keySource: any JWKSSource
    /// The verifier behind the middleware.
    public let verifier: TokenVerifier
    let store = UserStore()
    let onAccountDeleted: @Sendable (String) async -> Void
    private let counters = Mutex(Stats())
    let logger: Logger
    private let running = Mutex<Running?>(nil)

    /// Creates the backend; it listens after ``start()`` or ``run(whenRunning:)``.
    ///
    /// - Parameters:
    ///   - configuration: Issuer, JWKS, parties and port.
    ///   - keySource: Where keys come from; by default a `RemoteJWKSSource` at ``Configuration/keyLocation``.
    ///   - now: The wall clock for `exp`, `nbf` and `iat`.
    ///   - logger: Where requests are logged (method, path, status and reason; never a token).
    ///   - onAccountDeleted: Called with the user ID after `DELETE /users/me` deleted the data (the seed's
    ///     `clerkClient.users.deleteUser`).
    public init(
        configuration: Configuration, keySource: (any JWKSSource)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }, logger: Logger = Logger(label: "diet-backend"),
        onAccountDeleted: @escaping @Sendable (String) async -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.onAccountDeleted = onAccountDeleted
        let source: any JWKSSource
        if let keySource {
            source = keySource
        } else if let location = configuration.keyLocation {
            // AsyncHTTPClient, the transport TokenKit documents for Linux backends, with the body read under a cap.
            source = RemoteJWKSSource(
                location: location, configuration: configuration.keyCache, logger: logger,
                fetch: RemoteJWKSSource.asyncHTTPClientFetch(
                    .shared, timeout: configuration.keyCache.fetchTimeout,
                    maximumBytes: configuration.keyCache.limits.maximumBytes))
        } else {
            // An issuer that is not a URL and no JWKS URL: no key to find, so every token is refused.
            logger.error("no JWKS: the issuer is not a URL and no JWKS URL was given")
            source = StaticJWKSSource(JWKSet(keys: []))
        }
        self.keySource = source
        verifier = TokenVerifier(
            configuration: .init(
                issuer: configuration.issuer, audience: configuration.audience, algorithms: configuration.algorithms,
                requiredClaims: ["sid"], allowedParties: configuration.authorizedParties),
            keySource: source, now: now)
    }

    /// Refetches the JWKS now (an operator's "keys changed" hook); tokens whose key left the set stop verifying.
    public func reloadKeys() async {
        if let remote = keySource as? RemoteJWKSSource { await remote.refresh() }
    }

    /// How many times the JWKS was fetched (`nil` for a key source that does not fetch).
    public var jwksFetches: Int? { (keySource as? RemoteJWKSSource)?.fetchCount }

    /// The counters so far.
    public var stats: Stats { counters.withLock { $0 } }

    /// The base URL while running.
    public var baseURL: URL? { running.withLock { $0?.baseURL } }

    func countAuthenticated() { counters.withLock { $0.authenticated += 1 } }

    func countRejected(_ rejection: BearerAuthenticator.Rejection) {
        counters.withLock { $0.rejected["\(rejection.error)", default: 0] += 1 }
    }

    func countDeletion() { counters.withLock { $0.accountsDeleted += 1 } }

    /// Starts listening on 127.0.0.1.
    ///
    /// - Returns: The base URL with the bound port.
    /// - Throws: When the port cannot be bound.
    @discardableResult
    public func start() async throws -> URL {
        let started =
            switch configuration.framework {
            case .hummingbird: try await startHummingbird()
            case .vapor: try await startVapor()
            }
        running.withLock { $0 = started }
        logger.info(
            "listening",
            metadata: ["url": "\(started.baseURL.absoluteString)", "framework": "\(configuration.framework)"])
        return started.baseURL
    }

    /// Stops listening.
    public func stop() async {
        let current = running.withLock { running in
            let current = running
            running = nil
            return current
        }
        guard let current else { return }
        await current.stop()
        _ = await current.finished.result
    }

    /// Runs until ``stop()`` or until the task is cancelled.
    ///
    /// - Parameter whenRunning: Called with the base URL once listening.
    /// - Throws: What the server fails with.
    public func run(whenRunning: @Sendable (URL) -> Void) async throws {
        let baseURL = try await start()
        whenRunning(baseURL)
        guard let task = running.withLock({ $0?.finished }) else { return }
        try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            Task { await self.stop() }
        }
    }
}

/// Why the backend could not start.
public struct DietBackendError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
}
