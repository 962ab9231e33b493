public import AuthToken
public import CoreMetrics
public import Foundation
public import Logging
public import NetworkRetry
public import Persistence

/// Hands out valid access tokens and refreshes them once for every caller, without ever losing a
/// session by accident.
///
/// ```swift
/// let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: transport)
/// let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store)
/// try await client.signIn(.password(username: name, password: password, at: endpoint))
/// let token = try await client.validToken()
/// ```
///
/// The rules it follows (see the "Testing token flows" article for how each is shown):
/// - **Single flight.** Concurrent callers share one refresh that runs in its own task with its own
///   timeout. Waiters resume oldest-first; a cancelled waiter leaves and the refresh goes on.
/// - **Stale rejection, within one session.** ``refreshToken(afterRejectionOf:)`` for an older token of the
///   current session returns the current one without a network call. A token of another session (the app signed
///   out, or signed another user in, while the request was under way) fails with
///   ``TokenRefreshError/sessionChanged``: a request is never replayed under another session's token.
/// - **Re-read before refresh.** Under the store's exclusive access, a newer pair saved by another process
///   is adopted instead of refreshing.
/// - **Persist, then answer.** A new pair is written (conditional on the generation) before any waiter
///   sees it. A failed write keeps the pair in memory, publishes ``AuthEvent/Kind/persistenceFailed``, and
///   is retried; a response without a refresh token keeps the old one.
/// - **Classified failures.** `invalid_grant` ends the session (after one re-read of the store) and that
///   refresh token is never sent again; configuration errors wipe nothing; transient errors keep the session,
///   back off with jitter and honour `Retry-After`.
/// - **Generation guard.** A refresh that finishes after sign-out or after a newer session writes nothing.
/// - **Rate breaker.** At most ``Configuration/maximumRefreshes`` refresh requests sent to a server per
///   ``Configuration/breakerWindow``.
public actor TokenRefreshClient: TokenProvider {
    /// The ``events()`` subscribers, and the journal of the same events (``sessionJournal()``): one lock for both,
    /// taken once per event. The ``states()`` and ``sessionStates()`` subscribers are kept here too, under the same
    /// lock (see ``stateSubscribers`` and ``sessionStateSubscribers``).
    @usableFromInline struct Subscribers: Sendable {
        var next: UInt64 = 0
        var continuations: [UInt64: AsyncStream<AuthEvent>.Continuation] = [:]
        /// The session's transitions, redacted and bounded.
        var journal = SessionJournal()
        var states = StateSubscribers()
        var sessionStates = SessionStateSubscribers()
        /// What the lock-free readers see (see ``TokenRefreshClient/snapshot``), under the same lock.
        var snapshot = Snapshot()
    }

    let strategy: any RefreshStrategy
    let store: any TokenStore
    /// The store, when code other than its clients writes to it too (an app's own persistence): checked before a
    /// token is handed out from memory.
    nonisolated let externallyWritten: (any ExternallyWrittenTokenStore)?
    /// Whether ``externallyWritten`` is set: ``validToken()``'s fast path tests this flag, so a store that only its
    /// clients write costs no copy of the existential.
    @usableFromInline nonisolated let checksExternalWrites: Bool
    /// The options this client was made with.
    public nonisolated var configuration: Configuration { options.value }
    /// The one copy of the options, shared with ``machine``.
    nonisolated let options: SharedConfiguration
    let clock: ClockHandle
    nonisolated let now: @Sendable () -> Date
    let random: @Sendable () -> Double
    package nonisolated let logger: Logger
    let metrics: RefreshMetrics

    /// Every subscriber, the journal and the snapshot, behind one lock (one lock each cost every client 100 bytes
    /// more).
    @usableFromInline nonisolated let subscribers = LockedValue(Subscribers())
    nonisolated var snapshot: SnapshotLock { SnapshotLock(subscribers: subscribers) }
    nonisolated var stateSubscribers: SubscribersPart<StateSubscribers> { SubscribersPart(subscribers, \.states) }
    nonisolated var sessionStateSubscribers: SubscribersPart<SessionStateSubscribers> {
        SubscribersPart(subscribers, \.sessionStates)
    }
    /// The state for ``currentState``, read without a lock where atomics allow (see ``PublishedState``).
    @usableFromInline nonisolated let publishedState = PublishedState(.loading)

    /// The session's rules and state (see ``SessionMachine``). Every change that the fast path or the
    /// ``states()`` subscribers can see is published here, so no transition has to remember to. (No `oldValue`:
    /// comparing the machine's version costs one integer compare and copies nothing.)
    var machine: SessionMachine {
        didSet {
            guard machine.visibleVersion != publishedVersion else { return }
            publishedVersion = machine.visibleVersion
            let published = machine.snapshot()
            snapshot.withLock { $0 = published }
            publishedState.publish(published.state)
            publishState(published.state)
            publishSessionState(published)
        }
    }
    /// The machine's ``SessionMachine/visibleVersion`` last published.
    var publishedVersion: UInt64 = 0
    /// The refresh task in flight.
    var flightTask: Task<Void, Never>?
    /// The most recent refresh task, kept after it is abandoned so tests can wait for it to end.
    var lastFlightTask: Task<Void, Never>?
    /// Refreshes of refresh tokens the session never held (the seed's stateless ``refreshToken(_:)``).
    var stateless = StatelessRefreshes()
    /// This client's store writes in progress, so that sign-out and sign-in land after every older write.
    var writeFence = StoreWriteFence()
    /// The sign-outs not finished yet: revocations to send, a removal to make (see ``PendingSignOuts``).
    let signOuts: SignOutQueue

    /// The session held in memory.
    var session: SessionMachine.Session? { machine.session }
    /// The state shown to the app.
    var state: AuthState { machine.authState }

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - strategy: How to get a new token.
    ///   - store: Where the session is kept; an ``/Persistence/InMemoryTokenStore`` by default.
    ///   - configuration: The options.
    ///   - clock: The clock for timeouts, backoff and the breaker; `ContinuousClock()` by default.
    ///   - now: The wall clock for token expiry; ``/AuthToken/AuthToken/systemNow`` by default. A
    ///     ``Configuration/serverClock`` takes its place.
    ///   - random: Numbers in `0..<1` for backoff jitter; the system generator by default.
    ///   - logger: Where debug lines go (fingerprints only, never token text).
    ///   - metricsFactory: Where refresh counts, failures by class, breaker trips and lock waits go (see the
    ///     "Metrics" section of the TokenRefresh documentation); the bootstrapped swift-metrics backend by default.
    public init(
        strategy: any RefreshStrategy,
        store: any TokenStore = InMemoryTokenStore(),
        configuration: Configuration = Configuration(),
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        logger: Logger = Logger(label: "TokenKit.TokenRefresh"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.init(
            strategy: strategy, store: store, configuration: configuration, clock: clock, now: now, random: random,
            logger: logger, metrics: RefreshMetrics(factory: metricsFactory))
    }

    /// Creates a client that records into `metrics` (a registry shares one set among its clients).
    init(
        strategy: any RefreshStrategy, store: any TokenStore, configuration: Configuration, clock: any Clock<Duration>,
        now: @escaping @Sendable () -> Date, random: @escaping @Sendable () -> Double, logger: Logger,
        metrics: RefreshMetrics
    ) {
        self.strategy = strategy
        self.store = store
        self.externallyWritten = store as? any ExternallyWrittenTokenStore
        self.checksExternalWrites = externallyWritten != nil
        let options = SharedConfiguration(configuration)
        self.options = options
        let clock = ClockHandle(clock)  // one for both: each handle allocates two closure contexts
        self.clock = clock
        self.now = configuration.wallClock(otherwise: now)
        self.signOuts = SignOutQueue(
            configuration: configuration, sessionStore: store, clock: clock, now: self.now, logger: logger)
        self.random = random
        self.logger = logger
        self.metrics = metrics
        self.machine = SessionMachine(
            sharing: options, requiresRefreshToken: strategy.requiresRefreshToken,
            mayAnswerFromCache: strategy.mayAnswerFromCache)
    }

    deinit {
        let continuations = subscribers.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.finish() }
        let stateContinuations = stateSubscribers.withLock { Array($0.continuations.values) }
        for continuation in stateContinuations { continuation.finish() }
    }

    // MARK: - Reading without an actor hop

    /// The current access token, read without an actor hop (for main-actor callers). It may be expired;
    /// use ``validToken()`` to get one that is not. `nil` while the client holds no access token (signed out, or a
    /// client of `sharingSession(audiences:)` whose API has none yet).
    public nonisolated var currentToken: AuthToken? {
        // The token is checked inside the lock and copied out once: a copy taken out first and then passed on by
        // `flatMap` retained and released each of its strings once more.
        snapshot.withLock { snapshot -> AuthToken? in
            guard let token = snapshot.token, !token.accessToken.isEmpty else { return nil }
            return token
        }
    }

    /// The current state, read without an actor hop.
    public nonisolated var currentState: AuthState { publishedState.state }

    /// Whether the last refresh failed for lack of connectivity (a connection error or a timeout). The
    /// session is kept; the app can show that it is offline.
    public nonisolated var isOfflineNow: Bool { snapshot.withLock { $0.isOffline } }

    /// How many callers are waiting for the refresh in flight (0 when none is).
    public nonisolated var refreshWaiterCount: Int { snapshot.withLock { $0.waiterCount } }

    /// A new stream of auth events. Each call returns its own stream; it ends when the client goes away.
    ///
    /// - Returns: The stream; it buffers the newest 256 events.
    public nonisolated func events() -> AsyncStream<AuthEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AuthEvent.self, bufferingPolicy: .bufferingNewest(256))
        let id = subscribers.withLock { subscribers in
            subscribers.next += 1
            subscribers.continuations[subscribers.next] = continuation
            return subscribers.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    // MARK: - Tokens

    /// ``validToken()``'s fast path, synchronous: the token when it is not due for a refresh and nothing needs the
    /// actor, else `nil`. One clock read and one lock.
    @usableFromInline package nonisolated func freshToken() -> AuthToken? {
        let time = now()
        // Checked inside the lock and copied out once, as the token itself (not as an optional).
        return snapshot.withLock { snapshot -> AuthToken? in
            guard !snapshot.needsActor, time < snapshot.refreshDue, let token = snapshot.token else { return nil }
            return token
        }
    }

    /// Returns an access token that is valid now, refreshing ahead of expiry when needed (shared with every
    /// concurrent caller).
    ///
    /// When the token is still valid but due for a proactive refresh and that refresh fails transiently,
    /// the still-valid token is returned.
    ///
    /// - Returns: The access token.
    /// - Throws: ``TokenRefreshError/signedOut`` without a session; ``TokenRefreshError/refreshTokenRejected``
    ///   when the session ended; a transient error (the session is kept); ``TokenRefreshError/cancelled``.
    @inlinable public final nonisolated(nonsending) func validToken() async throws -> AuthToken {
        // The fast path is one clock read and one lock: no actor hop while the token is fresh, and none to
        // join a refresh already in flight. It is inlined into the caller, so a fresh token costs no async call
        // (no task allocation, no executor check on return).
        if let fresh = freshToken() {
            guard checksExternalWrites else { return fresh }
            return try await validToken(checkingExternalWritesBefore: fresh)
        }
        return try await validTokenAfterFastPath()
    }

    /// ``validToken()`` for a store the app writes too, with the fresh token `fresh` in memory: `fresh` unless the
    /// app wrote its own persistence since, whose stored session is then taken up (another one ends this one).
    @usableFromInline nonisolated(nonsending) func validToken(
        checkingExternalWritesBefore fresh: AuthToken
    ) async throws -> AuthToken {
        guard let externallyWritten, externallyWritten.mayHaveChanged(account: configuration.account) else {
            return fresh
        }
        await adoptExternalWrite()
        if let fresh = freshToken() { return fresh }
        return try await validTokenAfterFastPath()
    }

    /// The rest of ``validToken()`` when the token is not fresh: join the refresh in flight without an actor hop,
    /// or start one.
    @usableFromInline nonisolated(nonsending) func validTokenAfterFastPath() async throws -> AuthToken {
        let next: Next
        if let joined = snapshot.withLock({ $0.joinableFlight }) {
            next = .wait(joined)
        } else {
            next = try await prepare(.validToken)
        }
        return try await next.token(orAfterFailure: stillValidToken(after:))
    }

    /// After a failed proactive refresh: the current token if it is still valid and the failure transient
    /// (or the breaker, or a store that could not be read before the refresh), else the error.
    nonisolated func stillValidToken(after error: any Error) throws -> AuthToken {
        try SessionMachine.stillValidToken(
            after: error, current: { self.currentToken }, now: now, policy: configuration.expiryPolicy
        ).get()
    }

    /// Returns a token to retry with after the server rejected `accessToken` (a 401).
    ///
    /// If the rejected token is an older token of the current session, another caller refreshed already: the
    /// current token is returned without a network call. If it is the current token, one refresh runs for every
    /// concurrent caller. If the current session never held it, the request started under another session: it
    /// fails with ``TokenRefreshError/sessionChanged`` and is not to be retried.
    ///
    /// - Parameter accessToken: The access token the server rejected.
    /// - Returns: A token to retry with.
    /// - Throws: As ``validToken()``; ``TokenRefreshError/sessionChanged`` for a token of another session; a
    ///   transient failure is thrown, since the rejected token is no use.
    public nonisolated func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken {
        try await prepare(.afterRejection(of: accessToken)).token()
    }

    /// Refreshes with `refreshToken`, the seed apps' form: a refresh token goes in, a pair for that refresh token
    /// comes out.
    ///
    /// When it is the session's refresh token, one shared refresh runs. When it is one the session held before
    /// (a caller that read it before the new pair was saved), the current token is returned (refreshed if due).
    /// When the session never held it (the app signed another user in by itself), that refresh token is
    /// refreshed on its own: the answer is its pair, never the session's, and the session is neither replaced nor
    /// overwritten (concurrent callers with the same refresh token share one refresh). Without a session, the
    /// refresh token starts one: the way to migrate an app that stored only a refresh token.
    ///
    /// - Parameter refreshToken: The refresh token.
    /// - Returns: The new (or current) token.
    /// - Throws: As ``refreshToken(afterRejectionOf:)``.
    public nonisolated func refreshToken(_ refreshToken: String) async throws -> AuthToken {
        try await prepare(.seed(refreshToken)).token()
    }

    /// Reads the stored session, if that has not happened yet, and returns the state.
    ///
    /// A restored session publishes ``AuthEvent/Kind/sessionRestored`` and reads `signedIn`, or `expired` when
    /// its access token expired meanwhile.
    ///
    /// With `validatingWithProvider`, the session is then checked with the token provider, as an app checks its
    /// SDK at launch (Clerk's `load()` then `getToken()`). A provider without a refresh token (an SDK, client
    /// credentials) is always asked, also while the stored token is fresh, so a sign-out done in the SDK is seen; it may answer from its
    /// own cache. A cookie session is checked with the server. Other strategies fetch a valid token (refreshed if
    /// due). A rejection ends the session with its reason; a connectivity failure keeps it (`expired` if its token
    /// has expired) until ``networkRestored()``.
    ///
    /// - Parameter validatingWithProvider: Whether to check the session with the provider; `false` by default.
    /// - Returns: The state afterwards; ``AuthState/unavailable`` when the store cannot be read now (call again
    ///   when it can, such as when protected data becomes available).
    @discardableResult
    public func restoreSession(validatingWithProvider: Bool = false) async -> AuthState {
        try? await ensureLoaded()
        await retryPendingWriteIfDue()
        await check(
            machine.launchCheck(validating: validatingWithProvider, checksWithServer: strategy.checksSessionWithServer))
        return state
    }

    /// Carries out the check `action` and hands its outcome to the machine (rejections have ended the session
    /// already; a connectivity failure keeps it, see ``SessionMachine/providerCheckEnded(_:check:now:)``).
    func check(_ action: SessionMachine.ProviderCheckAction) async {
        let outcome: Result<Void, any Error>
        switch action {
        case .ask(let request, _): outcome = await Result.of { _ = try await prepare(request).token() }
        case .validToken: outcome = await Result.of { _ = try await validToken() }
        case .nothing: outcome = .success(())
        }
        machine.providerCheckEnded(outcome, check: action, now: now())
    }

    // MARK: - Sign-in and sign-out

    /// Starts a session with `grant`: a password grant, an authorization code with PKCE, or a custom one.
    ///
    /// Any refresh in flight for an older session writes nothing, and its callers fail with
    /// ``TokenRefreshError/sessionChanged``: they asked for the old session's token, never the new one's.
    ///
    /// - Parameters:
    ///   - grant: The grant.
    ///   - userID: The user ID, if the app knows it (otherwise taken from the response or the JWT `sub`).
    /// - Returns: The new token.
    /// - Throws: ``TokenRefreshError/signInRejected`` for wrong credentials (its ``TokenRefreshError/oauthError``
    ///   keeps the server's code); ``TokenRefreshError/storageUnavailable`` when the new session could not be
    ///   stored (unless ``Configuration/allowsMemoryOnlySessions``); ``TokenRefreshError/signedOut`` when a sign-out
    ///   (or another sign-in) came before the new session was stored; other classified errors. After a failure the
    ///   state is the session that was there before, ``AuthState/unavailable`` when the store cannot be read (the
    ///   stored session may still be there), or `signedOut`; never `loading`.
    @discardableResult
    public func signIn(_ grant: SignInGrant, userID: String? = nil) async throws -> AuthToken {
        let start = machine.signInStarting()
        let previous = start.previous
        let outcome = await Result<TokenResponse, any Error>.of { try await grant.run() }
        let action = machine.grantAnswered(outcome, userID: userID, receivedAt: now(), epoch: start.epoch)
        switch action {
        case .startSession(let token, let userID, let profile):
            return try await startSession(token, userID: userID, previousState: previous, profile: profile)
        case .settleThenFail(let error):
            // The state says what is true: the session that was there before (read from the store if it was never
            // read), `unavailable` when the store cannot be read, or signed out. Never `loading`.
            try? await ensureLoaded()
            machine.failedSignInSettled(previous: previous)
            throw error
        case .fail(let error):
            // Another sign-in or a sign-out came meanwhile: it has set the state.
            throw error
        }
    }

    /// Starts a session with a token obtained elsewhere.
    ///
    /// - Parameters:
    ///   - token: The token pair.
    ///   - userID: The user ID, if known (otherwise the JWT `sub`).
    /// - Returns: The token.
    /// - Throws: ``TokenRefreshError/storageUnavailable`` when the session could not be stored (unless
    ///   ``Configuration/allowsMemoryOnlySessions``); the client then keeps what it had before.
    ///   ``TokenRefreshError/signedOut`` when a sign-out (or another sign-in) came before this session was stored.
    @discardableResult
    public func signIn(with token: AuthToken, userID: String? = nil) async throws -> AuthToken {
        try await startSession(token, userID: SessionMachine.userID(userID, token: token), previousState: state)
    }

    /// Ends the session: clears memory and the store, fails waiting callers with
    /// ``TokenRefreshError/signedOut``, publishes ``AuthEvent/Kind/signedOut``, and revokes the refresh token
    /// when a revocation is configured. A refresh still running writes nothing. The sign-out is local: it waits at
    /// most ``PendingSignOuts/signOutWait`` for the revocation, which goes on in the background and, when it fails,
    /// is sent again later (see ``PendingSignOuts``).
    ///
    /// A write of the session that is still on its way to a slow store (a sign-in's save, a refresh's save) lands
    /// first and is then removed, so a signed-out session is never restored at the next launch. A removal that
    /// fails (a lock held too long, a locked Keychain) is tried again at the client's next call after
    /// ``Configuration/persistRetryInterval``, unless a new session has started by then.
    ///
    /// - Parameter reason: Why; ``AuthEvent/SignOutReason/userAction`` by default.
    /// - Throws: ``TokenRefreshError/storageUnavailable`` when the store could not be cleared (memory is).
    public func signOut(reason: AuthEvent.SignOutReason = .userAction) async throws {
        await noteStoredSessionIfUnread()
        let ended = machine.session
        let signOut = machine.signingOut(reason: reason)
        let epoch = machine.epoch
        flightTask?.cancel()
        try? await carryOut(signOut)
        logger.debug("signed out", metadata: ["reason": "\(reason)"])
        var outcome: Result<Void, TokenRefreshError> = .success(())
        // Written down before the removal, so a process killed before it lands removes the session at its next launch.
        await signOuts.signingOut(
            refreshToken: ended?.token.refreshToken, sessionID: ended?.sessionID, generation: ended?.generation)
        let write = await beginWrite(epoch: epoch)
        switch await perform(machine.signOutWriteTurn(epoch: epoch)) {
        case .some(let removed):
            outcome = machine.signOutRemovalFinished(
                removed.failure, ended: ended, epoch: epoch, elapsed: clock.elapsed)
        case .none:
            break
        }
        endWrite(write)
        await signOuts.removalEnded(landed: outcome.failure == nil)
        await signOuts.send(waitingAtMost: configuration.pendingSignOuts.signOutWait)
        try outcome.get()
    }

    /// Revokes the ended session's refresh token, as `action` says (best effort).
    func revoke(_ due: (refreshToken: String, revocation: TokenRevocation)?) async {
        switch due {
        case .some(let (refreshToken, revocation)):
            let timeout = configuration.revocationTimeout
            let revoked = await Result<Void, any Error>.of {
                try await clock.withTimeout(timeout) { try await revocation.revoke(refreshToken) }
            }
            switch revoked {
            case .success: break
            case .failure(let error): logger.debug("revocation failed", metadata: ["error": "\(Self.classify(error))"])
            }
        case .none:
            break
        }
    }

    // MARK: - Shared state

    func publish(_ event: AuthEvent) {
        let time = now()
        let continuations = subscribers.withLock { subscribers in
            subscribers.journal.record(event, at: time, serverTimeOffset: configuration.serverClock?.offset)
            return Array(subscribers.continuations.values)
        }
        for continuation in continuations { continuation.yield(event) }
    }

    /// Turns any error into a ``TokenRefreshError`` (see ``ErrorClassification/classify(_:)``).
    static func classify(_ error: any Error) -> TokenRefreshError { ErrorClassification.classify(error) }
}

extension TokenRefreshClient: CustomReflectable {
    /// What the client holds, without secrets: state, the token's fingerprint and expiry, whether a refresh
    /// is running, and the strategy and store types. `dump(client)` shows this instead of the actor's fields.
    public nonisolated var customMirror: Mirror {
        let snapshot = self.snapshot.withLock { $0 }
        var children: [(label: String?, value: Any)] = [
            ("state", snapshot.state),
            ("token", snapshot.tokenDescription),
            ("isOffline", snapshot.isOffline),
            ("refreshInFlight", snapshot.flight != nil),
            ("refreshWaiters", refreshWaiterCount),
            ("account", configuration.account),
        ]
        children.append(("strategy", String(describing: type(of: strategy))))
        children.append(("store", String(describing: type(of: store))))
        return Mirror(self, children: children, displayStyle: .class)
    }
}
