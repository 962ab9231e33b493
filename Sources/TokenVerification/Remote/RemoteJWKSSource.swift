import AuthToken
public import Foundation
public import Logging

#if DistributedTracing
    import Tracing
#endif

/// A key source that fetches a JWKS over a pluggable fetch function, caches it, and refetches it rarely.
///
/// ```swift
/// let keys = RemoteJWKSSource(jwksURL: URL(string: "https://clerk.example.com/.well-known/jwks.json")!)
/// // or, through OpenID Connect discovery:
/// let keys = RemoteJWKSSource(location: .openIDDiscovery(issuer: URL(string: "https://accounts.example.com")!))
/// ```
///
/// Concurrent verifiers share one fetch; the set is cached per `Cache-Control`, refreshed ahead of going stale, and kept
/// serving while the endpoint is down; an unknown `kid` causes at most one refetch per cooldown; fetches are bounded in
/// time and size, and https only. All time comes from the injected clock. The rules in full: <doc:KeySetFetchingRules>.
public actor RemoteJWKSSource: JWKSSource {
    /// What a fetch returns: the body, and the `Cache-Control: max-age` if the response had one.
    public struct Response: Sendable {
        /// The response body.
        public var body: Data
        /// The response's `max-age`, or `nil`.
        public var maxAge: Duration?

        /// A response.
        ///
        /// - Parameters:
        ///   - body: The body.
        ///   - maxAge: The `max-age`, or `nil`.
        public init(body: Data, maxAge: Duration? = nil) {
            self.body = body
            self.maxAge = maxAge
        }
    }

    /// Fetches a URL: the JWKS or the discovery document. Throw for any status other than 200.
    public typealias Fetch = @Sendable (URL) async throws -> Response

    /// Where the key set is.
    public enum Location: Sendable, Hashable {
        /// The JWKS document itself.
        case jwks(URL)
        /// An OpenID Connect issuer: its `/.well-known/openid-configuration` names the `jwks_uri`. The
        /// document's `issuer` must be this URL, and the `jwks_uri` must be `https` (or `http` to loopback).
        case openIDDiscovery(issuer: URL)

        /// The host the key set comes from, for log lines.
        var hostForLogs: String {
            switch self {
            case .jwks(let url), .openIDDiscovery(issuer: let url): url.host ?? "-"
            }
        }
    }

    /// Cache and fetch bounds.
    public struct Configuration: Sendable {
        /// The cache lifetime when the response has no `max-age`. Default 10 minutes.
        public var defaultMaxAge: Duration
        /// The shortest cache lifetime, whatever `max-age` says. Default 1 minute.
        public var minimumMaxAge: Duration
        /// The longest cache lifetime, whatever `max-age` says. Default 24 hours.
        public var maximumMaxAge: Duration
        /// How long before the set goes stale a background refresh starts (at most half the lifetime).
        /// Default 1 minute.
        public var refreshAhead: Duration
        /// The least time between two fetches caused by unknown `kid`s. Default 30 seconds.
        public var unknownKeyCooldown: Duration
        /// How often a failed fetch is retried. Default 5 seconds.
        public var retryAfterFailure: Duration
        /// How long past its freshness the last good set keeps serving while fetches fail. Default 1 hour.
        public var maximumStaleness: Duration
        /// The longest a fetch may take. Default 5 seconds.
        public var fetchTimeout: Duration
        /// The most `kid`s remembered as unknown between two fetches. Default 1,000.
        public var negativeCacheCapacity: Int
        /// Bounds on the JWKS document. A remote set never has symmetric keys: `allowsSymmetricKeys` is ignored.
        public var limits: JWKSet.Limits
        /// The largest discovery document accepted, in bytes. Default 64 KiB.
        public var maximumDiscoveryBytes: Int
        /// Whether the JWKS URL, the discovery issuer and the discovered `jwks_uri` may be plain `http` to a host
        /// that is not loopback. Default `false`: such a source fetches nothing and fails with
        /// ``TokenVerificationError/insecureKeySetURL``, since anyone on the path could serve their own keys.
        /// Turn it on only inside a network you trust end to end.
        public var dangerouslyAllowsPlainHTTP: Bool

        /// A configuration with the defaults, changed where given.
        ///
        /// - Parameters:
        ///   - defaultMaxAge: Cache lifetime without `max-age`.
        ///   - minimumMaxAge: Shortest cache lifetime.
        ///   - maximumMaxAge: Longest cache lifetime.
        ///   - refreshAhead: Background refresh lead.
        ///   - unknownKeyCooldown: Least time between fetches for unknown `kid`s.
        ///   - retryAfterFailure: Retry interval after a failed fetch.
        ///   - maximumStaleness: How long a stale set serves while fetches fail.
        ///   - fetchTimeout: Longest fetch.
        ///   - negativeCacheCapacity: Most unknown `kid`s remembered.
        ///   - limits: JWKS document bounds.
        ///   - maximumDiscoveryBytes: Largest discovery document.
        ///   - dangerouslyAllowsPlainHTTP: Whether plain `http` to a host that is not loopback is allowed.
        public init(
            defaultMaxAge: Duration = .seconds(600), minimumMaxAge: Duration = .seconds(60),
            maximumMaxAge: Duration = .seconds(86_400), refreshAhead: Duration = .seconds(60),
            unknownKeyCooldown: Duration = .seconds(30), retryAfterFailure: Duration = .seconds(5),
            maximumStaleness: Duration = .seconds(3_600), fetchTimeout: Duration = .seconds(5),
            negativeCacheCapacity: Int = 1_000, limits: JWKSet.Limits = JWKSet.Limits(),
            maximumDiscoveryBytes: Int = 64 * 1024, dangerouslyAllowsPlainHTTP: Bool = false
        ) {
            self.defaultMaxAge = defaultMaxAge
            self.minimumMaxAge = minimumMaxAge
            self.maximumMaxAge = maximumMaxAge
            self.refreshAhead = refreshAhead
            self.unknownKeyCooldown = unknownKeyCooldown
            self.retryAfterFailure = retryAfterFailure
            self.maximumStaleness = maximumStaleness
            self.fetchTimeout = fetchTimeout
            self.negativeCacheCapacity = negativeCacheCapacity
            self.limits = limits
            self.maximumDiscoveryBytes = maximumDiscoveryBytes
            self.dangerouslyAllowsPlainHTTP = dangerouslyAllowsPlainHTTP
        }
    }

    /// Everything the synchronous paths read, behind one lock. Times are durations since the source was made.
    struct State: Sendable {
        var keySet: JWKSet?
        var freshUntil: Duration = .zero
        var usableUntil: Duration = .zero
        var refreshAt: Duration = .zero
        var lastAttempt: Duration?
        var lastError: TokenVerificationError?
        var fetching = false
        var refreshScheduled = false
        /// Refreshers running (``RemoteJWKSSource/runRefresher()``): while one runs, lookups start no refresh.
        var refreshers = 0
        var unknownKeyIDs: Set<String> = []
        var fetchCount = 0
    }

    /// Where the set is.
    package nonisolated let location: Location
    /// The bounds.
    package nonisolated let configuration: Configuration
    private nonisolated let fetch: Fetch
    private nonisolated let logger: Logger
    private nonisolated let elapsed: @Sendable () -> Duration
    private nonisolated let sleep: @Sendable (Duration) async throws -> Void
    private let state = LockedValue(State())
    private var inFlight: Task<Void, Never>?
    #if DistributedTracing
        /// The span of the fetch in flight: every caller that waits on it adds a link to its own span.
        private var inFlightSpan: (any Span)?
    #endif
    private var discoveredJWKSURL: URL?

    /// A source for the key set at `location`.
    ///
    /// - Parameters:
    ///   - location: The JWKS URL, or an issuer for OpenID Connect discovery.
    ///   - configuration: Cache and fetch bounds.
    ///   - clock: The clock for cache lifetimes, cooldowns and the fetch timeout.
    ///   - logger: Where fetches, failures and skipped keys are logged (a failed fetch at warning level, the rest at
    ///     debug level).
    ///   - fetch: Fetches a URL; ``urlSessionFetch(configuration:maximumBytes:)`` by default.
    public init(
        location: Location, configuration: Configuration = Configuration(),
        clock: any Clock<Duration> = ContinuousClock(), logger: Logger = Logger(label: "tokenkit.verification.jwks"),
        fetch: @escaping Fetch = RemoteJWKSSource.urlSessionFetch()
    ) {
        self.location = location
        self.configuration = configuration
        self.fetch = fetch
        self.logger = logger
        (elapsed, sleep) = Self.handles(clock)
    }

    /// A source for the JWKS at `jwksURL`.
    ///
    /// - Parameters:
    ///   - jwksURL: The JWKS document's URL.
    ///   - configuration: Cache and fetch bounds.
    ///   - clock: The clock.
    ///   - logger: The logger.
    ///   - fetch: Fetches a URL.
    public init(
        jwksURL: URL, configuration: Configuration = Configuration(), clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "tokenkit.verification.jwks"),
        fetch: @escaping Fetch = RemoteJWKSSource.urlSessionFetch()
    ) {
        self.init(location: .jwks(jwksURL), configuration: configuration, clock: clock, logger: logger, fetch: fetch)
    }

    private static func handles(
        _ clock: some Clock<Duration>
    ) -> (@Sendable () -> Duration, @Sendable (Duration) async throws -> Void) {
        let start = clock.now
        return ({ start.duration(to: clock.now) }, { try await clock.sleep(for: $0) })
    }

    /// How many fetches of the key set have been attempted (discovery documents not counted).
    public nonisolated var fetchCount: Int { state.withLock { $0.fetchCount } }

    /// The current key set, if one is usable.
    package nonisolated var currentKeySet: JWKSet? {
        let now = elapsed()
        return state.withLock { $0.keySet != nil && now < $0.usableUntil ? $0.keySet : nil }
    }

    /// The key for a token's `kid`: from the cached set at once if it has it; otherwise after the shared fetch,
    /// if the cooldown allows one.
    ///
    /// - Parameters:
    ///   - keyID: The token's `kid`, or `nil`.
    ///   - algorithm: The token's algorithm.
    /// - Returns: The key.
    /// - Throws: ``TokenVerificationError/unknownKeyID``, ``TokenVerificationError/missingKeyID``, or a key set
    ///   error when no usable set could be had.
    public nonisolated func key(
        for keyID: String?, algorithm: JWSAlgorithm
    ) async throws(TokenVerificationError) -> JWK {
        enum Decision {
            case found(JWK)
            case refuse(TokenVerificationError, logKeyID: String?)
            case askActor
        }
        let now = elapsed()
        let cooldown = configuration.unknownKeyCooldown
        let capacity = configuration.negativeCacheCapacity
        let (decision, scheduleRefresh) = state.withLock { state -> (Decision, Bool) in
            guard let set = state.keySet, now < state.usableUntil else { return (.askActor, false) }
            var schedule = false
            if now >= state.refreshAt, !state.refreshScheduled, !state.fetching, state.refreshers == 0 {
                state.refreshScheduled = true
                schedule = true
            }
            switch set.key(for: keyID, algorithm: algorithm) {
            case .found(let key): return (.found(key), schedule)
            case .ambiguous: return (.refuse(.missingKeyID, logKeyID: nil), schedule)
            // A known `kid` whose key was skipped: a refetch would not help before the set changes anyway.
            case .skipped: return (.refuse(.unusableKey, logKeyID: nil), schedule)
            case .unknown:
                guard let keyID else { return (.refuse(.missingKeyID, logKeyID: nil), schedule) }
                if state.fetching { return (.askActor, schedule) }
                if let last = state.lastAttempt, now - last < cooldown {
                    let first = state.unknownKeyIDs.count < capacity && state.unknownKeyIDs.insert(keyID).inserted
                    return (.refuse(.unknownKeyID, logKeyID: first ? keyID : nil), schedule)
                }
                return (.askActor, schedule)
            }
        }
        if scheduleRefresh { Task { await self.refreshInBackground() } }
        switch decision {
        case .found(let key):
            return key
        case .refuse(let error, let loggedKeyID):
            if let loggedKeyID {
                logger.debug("Unknown kid refused inside the refetch cooldown", metadata: ["kid": "\(loggedKeyID)"])
            }
            throw error
        case .askActor:
            return try await fetchThenLookUp(keyID: keyID, algorithm: algorithm)
        }
    }

    /// Whether `key` is in the current (still usable) set.
    ///
    /// - Parameter key: A key this source returned.
    /// - Returns: Whether it is still published.
    public nonisolated func isPublished(_ key: JWK) -> Bool {
        let now = elapsed()
        return state.withLock { state in
            guard let set = state.keySet, now < state.usableUntil else { return false }
            return set.contains(key)
        }
    }

    /// Fetches the set now (joining a fetch in flight), whatever the cache and cooldown say.
    public func refresh() async {
        await fetchShared()
    }

    /// Keeps the key set fresh from a task the caller owns, until that task is cancelled: fetches at once, then
    /// again ``Configuration/refreshAhead`` before each expiry, or ``Configuration/retryAfterFailure`` after a failed
    /// fetch.
    ///
    /// While it runs, lookups of a known `kid` never start a background refresh task of their own, so a server's
    /// graceful shutdown (a swift-service-lifecycle `ServiceGroup`) leaves no fetch behind: when the task is
    /// cancelled, a fetch in flight is awaited (at most ``Configuration/fetchTimeout``) before this returns. Unknown
    /// `kid`s still fetch on demand, within the cooldown, in the caller's own request.
    public func runRefresher() async {
        state.withLock { $0.refreshers += 1 }
        defer { state.withLock { $0.refreshers -= 1 } }
        while !Task.isCancelled {
            let now = elapsed()
            if state.withLock({ $0.keySet == nil || now >= $0.refreshAt }) { await fetchShared() }
            // The next refresh time moves forward with every fetch, success or failure.
            let wait = state.withLock { $0.refreshAt } - elapsed()
            do {
                try await sleep(max(wait, configuration.retryAfterFailure / 10))
            } catch {
                return
            }
        }
    }

    private func refreshInBackground() async {
        await fetchShared()
    }

    private func fetchThenLookUp(keyID: String?, algorithm: JWSAlgorithm) async throws(TokenVerificationError) -> JWK {
        let now = elapsed()
        let configuration = configuration
        let mayFetch = state.withLock { state -> Bool in
            let usable = state.keySet != nil && now < state.usableUntil
            guard let last = state.lastAttempt else { return true }
            if !usable && state.lastError != nil { return now - last >= configuration.retryAfterFailure }
            return !usable || now - last >= configuration.unknownKeyCooldown
        }
        if let inFlight {
            linkWaiter()
            await inFlight.value
        } else if mayFetch {
            await fetchShared()
        }
        let after = elapsed()
        let capacity = configuration.negativeCacheCapacity
        let result = state.withLock { state -> Result<JWK, TokenVerificationError> in
            guard let set = state.keySet, after < state.usableUntil else {
                return .failure(state.lastError ?? .keySetUnavailable)
            }
            switch set.key(for: keyID, algorithm: algorithm) {
            case .found(let key): return .success(key)
            case .ambiguous: return .failure(.missingKeyID)
            case .skipped: return .failure(.unusableKey)
            case .unknown:
                guard let keyID else { return .failure(.missingKeyID) }
                if state.unknownKeyIDs.count < capacity { state.unknownKeyIDs.insert(keyID) }
                return .failure(.unknownKeyID)
            }
        }
        return try result.get()
    }

    private func fetchShared() async {
        if let inFlight {
            linkWaiter()
            await inFlight.value
            return
        }
        #if DistributedTracing
            // A root span: the refresh serves every waiter, and each one links to it (the first included).
            let span = startSpan("tokenkit.jwks.refresh", context: .topLevel, ofKind: .client)
            span.attributes["tokenkit.jwks.location"] = "\(location)"
            inFlightSpan = span
            linkWaiter()
        #endif
        let task = Task { await self.performFetch() }
        inFlight = task
        await task.value
        inFlight = nil
        #if DistributedTracing
            inFlightSpan = nil
            let (keys, error) = state.withLock { ($0.keySet?.keys.count, $0.lastError) }
            if let error {
                span.attributes["error.type"] = error.reason
                span.setStatus(SpanStatus(code: .error))
            } else if let keys {
                span.attributes["tokenkit.jwks.keys"] = keys
            }
            span.end()
        #endif
    }

    /// Links the calling task's span (a verification, a request) to the refresh in flight.
    private func linkWaiter() {
        #if DistributedTracing
            if let inFlightSpan, let context = ServiceContext.current {
                inFlightSpan.addLink(SpanLink(context: context, attributes: [:]))
            }
        #endif
    }

    private func performFetch() async {
        let started = elapsed()
        state.withLock { state in
            state.lastAttempt = started
            state.fetching = true
            state.fetchCount += 1
        }
        let result: Result<(JWKSet, Duration?), TokenVerificationError>
        do throws(TokenVerificationError) {
            let url = try await jwksURL()
            let response = try await fetchWithTimeout(url)
            var limits = configuration.limits
            limits.allowsSymmetricKeys = false
            result = .success((try JWKSet(json: response.body, limits: limits), response.maxAge))
        } catch {
            result = .failure(error)
        }
        let now = elapsed()
        switch result {
        case .success(let (set, maxAge)):
            for skipped in set.skipped {
                logger.debug("JWKS key skipped", metadata: ["key": "\(skipped)"])
            }
            let lifetime = min(
                max(maxAge ?? configuration.defaultMaxAge, configuration.minimumMaxAge),
                configuration.maximumMaxAge)
            let lead = min(configuration.refreshAhead, lifetime / 2)
            logger.debug(
                "JWKS fetched",
                metadata: ["keys": "\(set.keys.count)", "skipped": "\(set.skipped.count)", "maxAge": "\(lifetime)"])
            state.withLock { state in
                state.keySet = set
                state.freshUntil = now + lifetime
                state.usableUntil = now + lifetime + configuration.maximumStaleness
                state.refreshAt = now + lifetime - lead
                state.lastError = nil
                state.unknownKeyIDs = []
            }
        case .failure(let error):
            // At warning level: requests are answered 503 meanwhile, and an operator must see why. The reason and the
            // host only (never a token).
            logger.warning(
                "JWKS fetch failed", metadata: ["reason": "\(error.reason)", "host": "\(location.hostForLogs)"])
            state.withLock { state in
                state.lastError = error
                state.refreshAt = now + configuration.retryAfterFailure
            }
        }
        state.withLock { state in
            state.fetching = false
            state.refreshScheduled = false
        }
    }

    /// The JWKS URL: the configured one, or the discovered `jwks_uri` (discovered once, then kept).
    private func jwksURL() async throws(TokenVerificationError) -> URL {
        switch location {
        case .jwks(let url):
            try refuseInsecure(url)
            return url
        case .openIDDiscovery(let issuer):
            if let discoveredJWKSURL { return discoveredJWKSURL }
            try refuseInsecure(issuer)
            var text = issuer.absoluteString
            while text.hasSuffix("/") { text.removeLast() }
            guard let discoveryURL = URL(string: text + "/.well-known/openid-configuration") else {
                throw .keySetInvalid
            }
            let response = try await fetchWithTimeout(discoveryURL)
            guard response.body.count <= configuration.maximumDiscoveryBytes else { throw .keySetTooLarge }
            let document = try JWKSet.parseObject(response.body)
            guard document["issuer"]?.stringValue == issuer.absoluteString || document["issuer"]?.stringValue == text,
                let uri = document["jwks_uri"]?.stringValue, let url = URL(string: uri),
                Self.isAcceptable(url, allowingPlainHTTP: configuration.dangerouslyAllowsPlainHTTP)
            else {
                logger.debug("OpenID discovery document refused", metadata: ["url": "\(discoveryURL)"])
                throw .keySetInvalid
            }
            discoveredJWKSURL = url
            return url
        }
    }

    /// Throws ``TokenVerificationError/insecureKeySetURL`` unless `url` is acceptable, logging it at error level
    /// (a configuration mistake an operator must see).
    private func refuseInsecure(_ url: URL) throws(TokenVerificationError) {
        guard !Self.isAcceptable(url, allowingPlainHTTP: configuration.dangerouslyAllowsPlainHTTP) else { return }
        logger.error(
            "JWKS location refused: plain http to a host that is not loopback (https required)",
            metadata: ["host": "\(url.host ?? "-")"])
        throw .insecureKeySetURL
    }

    /// `https`, or `http` to a loopback host (`localhost`, 127.0.0.0/8, `::1`), or any `http` when allowed.
    static func isAcceptable(_ url: URL, allowingPlainHTTP: Bool = false) -> Bool {
        guard let host = url.host, !host.isEmpty else { return false }
        switch url.scheme?.lowercased() {
        case "https": return true
        case "http": return allowingPlainHTTP || isLoopback(host)
        default: return false
        }
    }

    /// `localhost`, a dotted IPv4 address in 127.0.0.0/8, or `::1`; names are never resolved.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy(\.isASCII) && UInt8(octet) != nil
        }
    }

    private nonisolated func fetchWithTimeout(_ url: URL) async throws(TokenVerificationError) -> Response {
        let fetch = fetch
        return try await Race.first(timeout: configuration.fetchTimeout, sleep: sleep, failure: .keySetUnavailable) {
            try await fetch(url)
        }.get()
    }
}

/// The first of several results, awaited by one task; later results are dropped.
final class Race<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Result<Value, TokenVerificationError>, Never>?)
        case done(Result<Value, TokenVerificationError>)
    }
    private let state = LockedValue(State.waiting(nil))

    func finish(_ result: Result<Value, TokenVerificationError>) {
        let continuation = state.withLock {
            state -> CheckedContinuation<Result<Value, TokenVerificationError>, Never>? in
            guard case .waiting(let continuation) = state else { return nil }
            state = .done(result)
            return continuation
        }
        continuation?.resume(returning: result)
    }

    var value: Result<Value, TokenVerificationError> {
        get async {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Result<Value, TokenVerificationError>? in
                    switch state {
                    case .done(let result): return result
                    case .waiting:
                        state = .waiting(continuation)
                        return nil
                    }
                }
                if let done { continuation.resume(returning: done) }
            }
        }
    }
}

extension Race {
    /// Runs `operation` against a timer of `timeout`: its value, `failure` when it throws (but `.keySetTooLarge` as
    /// it is, so a fetch that stopped at its bound says so), or `.fetchTimedOut` when the timer ends first. Both tasks
    /// are cancelled once one has answered.
    static func first(
        timeout: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void,
        failure: TokenVerificationError, _ operation: @escaping @Sendable () async throws -> Value
    ) async -> Result<Value, TokenVerificationError> {
        let race = Race<Value>()
        let work = Task {
            do {
                race.finish(.success(try await operation()))
            } catch let error as TokenVerificationError where error == .keySetTooLarge {
                race.finish(.failure(error))
            } catch {
                race.finish(.failure(failure))
            }
        }
        let timer = Task {
            do {
                try await sleep(timeout)
                race.finish(.failure(.fetchTimedOut))
            } catch {}
        }
        let result = await race.value
        work.cancel()
        timer.cancel()
        return result
    }
}
