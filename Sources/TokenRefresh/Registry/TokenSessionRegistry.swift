public import AuthToken
public import CoreMetrics
public import Foundation
public import Logging
public import Persistence

/// One ``TokenRefreshClient`` per account, for a process that holds many users' sessions (a backend acting on
/// their behalf): clients are made on first use over one shared strategy factory and store, and idle ones are
/// evicted under a bound.
///
/// Concurrent calls for an account share one refresh (across processes too, with a shared store); a client is evicted
/// only when idle and its pair persisted, so no rotation is lost; lookups take a lock, not an actor hop. Each guarantee
/// in full: <doc:ManyUsersInOneProcess>.
///
/// ```swift
/// let registry = TokenSessionRegistry(store: store) { account in
///     OAuthRefreshStrategy(endpoint: endpoint)
/// }
/// let token = try await registry.validToken(for: userID)
/// ```
public final class TokenSessionRegistry: Sendable {
    /// Options for a ``TokenSessionRegistry``.
    public struct Configuration: Sendable {
        /// The most clients kept before the least recently used idle ones are evicted.
        package var maximumClients: Int
        /// How far an eviction pass brings the count down, so that passes are rare.
        package var evictionTarget: Int
        /// How long a client may go unused before an idle sweep evicts it.
        package var idleTimeout: Duration
        /// The options every client is made with; the registry sets ``TokenRefreshClient/Configuration/account``.
        public var client: TokenRefreshClient.Configuration

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - maximumClients: The most clients kept; 10,000 by default.
        ///   - evictionTarget: The count an eviction pass aims for; 90 % of `maximumClients` by default.
        ///   - idleTimeout: How long a client may go unused before `SessionRegistrySweeper` (TokenKitServiceLifecycle)
        ///     evicts it;
        ///     10 minutes by default.
        ///   - client: The options for each client.
        public init(
            maximumClients: Int = 10_000, evictionTarget: Int? = nil, idleTimeout: Duration = .seconds(600),
            client: TokenRefreshClient.Configuration = .init()
        ) {
            self.maximumClients = max(1, maximumClients)
            self.evictionTarget = min(self.maximumClients, max(0, evictionTarget ?? self.maximumClients * 9 / 10))
            self.idleTimeout = idleTimeout
            self.client = client
        }
    }

    /// A registered client. A reference, so that a call finds it once and updates it in place; its fields are
    /// read and written only under the registry's lock.
    private final class Entry: @unchecked Sendable {
        let client: TokenRefreshClient
        var lastUse: Duration
        /// Bumped on every use: an eviction checked against an older value does not evict.
        var uses: UInt64 = 0
        /// Callers inside a registry call on this client now.
        var active: Int

        init(client: TokenRefreshClient, lastUse: Duration, active: Int) {
            self.client = client
            self.lastUse = lastUse
            self.active = active
        }
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var evicting = false
        var evictions = 0
    }

    /// The options the registry was made with.
    package let configuration: Configuration
    private let store: any TokenStore
    private let makeStrategy: @Sendable (String) -> any RefreshStrategy
    private let clock: any Clock<Duration>
    private let handle: ClockHandle
    private let now: @Sendable () -> Date
    private let random: @Sendable () -> Double
    private let logger: Logger
    /// One set of metrics for every client (see ``TokenRefreshClient``'s metrics).
    private let metrics: RefreshMetrics
    // LockedValue, not `Mutex`: ThreadSanitizer on Linux does not follow Mutex's futex (see LockedValue).
    private let state = LockedValue(State())

    /// Creates a registry.
    ///
    /// - Parameters:
    ///   - store: The store every client shares.
    ///   - configuration: The bound, the idle timeout and the clients' options.
    ///   - clock: The clock for the clients and for idle times; `ContinuousClock()` by default.
    ///   - now: The wall clock for token expiry; ``/AuthToken/AuthToken/systemNow`` by default.
    ///   - random: Numbers in `0..<1` for the clients' backoff jitter.
    ///   - logger: Where the registry and its clients log (fingerprints only).
    ///   - metricsFactory: Where the clients' refresh metrics go, recorded under the same names for every account
    ///     (no account dimension); the bootstrapped swift-metrics backend by default.
    ///   - makeStrategy: Makes the refresh strategy for an account (usually the same one for every account, over
    ///     one shared transport).
    public init(
        store: any TokenStore,
        configuration: Configuration = Configuration(),
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        logger: Logger = Logger(label: "TokenKit.TokenSessionRegistry"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        makeStrategy: @escaping @Sendable (String) -> any RefreshStrategy
    ) {
        self.store = store
        self.configuration = configuration
        self.makeStrategy = makeStrategy
        self.clock = clock
        self.handle = ClockHandle(clock)
        self.now = now
        self.random = random
        self.logger = logger
        self.metrics = RefreshMetrics(factory: metricsFactory)
    }

    /// The number of clients registered now.
    package var count: Int { state.withLock { $0.entries.count } }

    /// The number of clients evicted so far.
    public var evictionCount: Int { state.withLock { $0.evictions } }

    /// The client for `account`, made on first use. Prefer ``validToken(for:)``: a client held outside the
    /// registry's calls may be evicted while in use (it keeps working, but a second client for the account may
    /// then be made).
    ///
    /// - Parameter account: The account key.
    /// - Returns: The account's client.
    public func client(for account: String) -> TokenRefreshClient {
        checkOut(account, active: false).client
    }

    /// A valid access token for `account`: its client's ``TokenRefreshClient/validToken()``.
    ///
    /// - Parameter account: The account key.
    /// - Returns: A token that is not about to expire.
    /// - Throws: What the client's `validToken()` throws (``TokenRefreshError``).
    public func validToken(for account: String) async throws -> AuthToken {
        // A registered client with a fresh token answers without being marked active: nothing of it is used after
        // the synchronous read, so an eviction meanwhile loses nothing (and the bumped use count stops one that
        // was already checking this client).
        let time = handle.elapsed
        if let entry = state.withLock({ state in Self.touch(&state, account, time: time, active: false) }),
            let fresh = entry.client.freshToken()
        {
            return fresh
        }
        let entry = checkOut(account, active: true)
        defer { checkIn(entry) }
        return try await entry.client.validToken()
    }

    /// Refreshes `account`'s token after the server rejected `accessToken`: its client's
    /// ``TokenRefreshClient/refreshToken(afterRejectionOf:)``.
    ///
    /// - Parameters:
    ///   - accessToken: The access token the server rejected.
    ///   - account: The account key.
    /// - Returns: The token to retry with.
    /// - Throws: What the client throws (``TokenRefreshError``).
    package func refreshToken(afterRejectionOf accessToken: String, for account: String) async throws -> AuthToken {
        let entry = checkOut(account, active: true)
        defer { checkIn(entry) }
        return try await entry.client.refreshToken(afterRejectionOf: accessToken)
    }

    /// Evicts every idle client unused for `idleTimeout` and, past
    /// `maximumClients`, the least recently used idle ones down to `evictionTarget`.
    /// A client with a refresh running or a pair not yet persisted is kept.
    ///
    /// - Returns: The number of clients evicted.
    @discardableResult
    package func evictIdle() async -> Int {
        await evict(alreadyMarked: false)
    }

    // MARK: Internals

    private func checkOut(_ account: String, active: Bool) -> Entry {
        let time = handle.elapsed
        if let entry = state.withLock({ state in Self.touch(&state, account, time: time, active: active) }) {
            return entry
        }
        // Made outside the lock (the strategy factory is the caller's code); the first one registered wins.
        var options = configuration.client
        options.account = account
        let made = TokenRefreshClient(
            strategy: makeStrategy(account), store: store, configuration: options, clock: clock, now: now,
            random: random, logger: logger, metrics: metrics)
        let (entry, overBound) = state.withLock { state -> (Entry, Bool) in
            if let existing = Self.touch(&state, account, time: time, active: active) { return (existing, false) }
            let entry = Entry(client: made, lastUse: time, active: active ? 1 : 0)
            state.entries[account] = entry
            let overBound = state.entries.count > configuration.maximumClients && !state.evicting
            if overBound { state.evicting = true }
            return (entry, overBound)
        }
        if overBound {
            // Off the caller's path: the pass checks each candidate on its actor.
            Task { await self.evict(alreadyMarked: true) }
        }
        return entry
    }

    /// The registered client for `account`, marked as used (and active), or `nil`.
    private static func touch(
        _ state: inout State, _ account: String, time: Duration, active: Bool
    ) -> Entry? {
        guard let entry = state.entries[account] else { return nil }
        entry.lastUse = time
        entry.uses &+= 1
        if active { entry.active += 1 }
        return entry
    }

    /// A call on `entry`'s client has ended (the entry may have been evicted meanwhile: then nobody reads it).
    private func checkIn(_ entry: Entry) {
        state.withLock { _ in entry.active -= 1 }
    }

    /// One eviction pass (at most one runs at a time); `alreadyMarked` when the caller set `evicting` itself.
    private func evict(alreadyMarked: Bool) async -> Int {
        if !alreadyMarked {
            let started = state.withLock { state -> Bool in
                guard !state.evicting else { return false }
                state.evicting = true
                return true
            }
            guard started else { return 0 }
        }
        defer { state.withLock { $0.evicting = false } }
        let time = handle.elapsed
        let idleTimeout = configuration.idleTimeout
        // Candidates, least recently used first: every stale one, then as many more as the bound needs.
        let (candidates, excess) = state.withLock { state -> ([(String, TokenRefreshClient, UInt64)], Int) in
            let unused = state.entries.filter { $0.value.active == 0 }
                .sorted { $0.value.lastUse < $1.value.lastUse }
            let excess = max(0, state.entries.count - configuration.evictionTarget)
            let overBound = state.entries.count > configuration.maximumClients
            var picked: [(String, TokenRefreshClient, UInt64)] = []
            for (index, (account, entry)) in unused.enumerated() {
                let stale = time - entry.lastUse >= idleTimeout
                guard stale || (overBound && index < excess) else { break }
                picked.append((account, entry.client, entry.uses))
            }
            return (picked, overBound ? excess : 0)
        }
        var evicted = 0
        for (account, client, uses) in candidates {
            guard await client.isEvictable() else { continue }
            let removed = state.withLock { state -> Bool in
                guard let entry = state.entries[account], entry.client === client, entry.uses == uses,
                    entry.active == 0
                else { return false }
                state.entries[account] = nil
                state.evictions += 1
                return true
            }
            if removed { evicted += 1 }
        }
        if evicted > 0 {
            logger.debug("idle clients evicted", metadata: ["evicted": "\(evicted)", "excess": "\(excess)"])
        }
        return evicted
    }
}

extension TokenRefreshClient {
    /// Whether a registry may drop this client without losing anything: no refresh running, no write in progress,
    /// and the session (if any) persisted.
    func isEvictable() -> Bool {
        machine.isEvictable
    }
}
