import AuthToken
import Foundation
import Persistence

/// The rules of one client's session, as a value with no I/O.
///
/// ``TokenRefreshClient`` keeps one of these and does what its transitions ask: read and write the store, call
/// the strategy, resume waiters, publish events. Every decision is made here, synchronously, from the
/// machine's fields and the times the actor passes in, so each rule can be tested without a clock, a store
/// or a task (see `SessionMachineTests`):
/// - **Single flight**: a caller who needs a refresh while one runs joins it (``decide(_:now:elapsed:)``).
/// - **Generation guard**: a new session (``signingIn(_:userID:stateBefore:profile:)``) and an ended one
///   (``endingSession(reason:error:)``, ``signingOut(reason:)``) bump ``epoch``; a refresh started under an older epoch
///   changes nothing (``isCurrent(_:)``).
/// - **Breaker**: backoff after transient failures, `Retry-After`, and at most
///   ``TokenRefreshClient/Configuration/maximumRefreshes`` refresh requests sent to a server per window (``Breaker``;
///   see ``sendsRefreshRequest(_:forced:)``).
/// - **Persist, then retry**: a pair that could not be stored stays in memory and is written again at most once
///   per ``TokenRefreshClient/Configuration/persistRetryInterval``, queued behind removals (``PendingWrites``).
/// - **Offline**: a connectivity failure marks the client offline and an expired session `expired`.
/// - **Rejection**: a refresh token the server rejected is never sent again (``rejected``).
///
/// A new session and an ended one both go through one reset each, so no field is cleared in one place and
/// forgotten in another: `beginSession` clears offline, backoff and the breaker's history; `endSession` (sign-out,
/// rejection, removal elsewhere) clears offline and keeps the breaker's history, which still limits a sessionless
/// strategy's next attempts.
///
/// Every event the actor sends is a `mutating func` that returns one action, which the actor carries out. The steps
/// several transitions share (the two resets, adopting a stored pair, recording a refreshed one, presenting a refresh
/// token) are `private` to the file of the transitions that take them, so no event reaches them from outside.
struct SessionMachine: Sendable {
    /// A session held in memory.
    struct Session: Sendable, Equatable {
        var token: AuthToken
        var userID: String?
        /// The store's generation counter for this pair.
        var generation: UInt64
        /// The session's identity (``StoredSession/sessionID``): made at sign-in, kept by its refreshes.
        var sessionID: String?
        /// Whether the pair is in the store (a failed write keeps it in memory only, to be retried).
        var persisted: Bool
        /// Whether this pair, kept in memory only, kept the refresh token of the stored pair it refreshed (the server
        /// answered without a new one), so the store still holds that refresh token.
        var keptStoredRefreshToken = false

        /// Whether another process sharing the store may hold the refresh token, and may have presented it (a
        /// rotating server then consumed it): the pair is stored, or it kept a stored pair's refresh token. A refresh
        /// token only this client holds (a rotated pair whose write failed) is not shared.
        var refreshTokenIsShared: Bool { persisted || keptStoredRefreshToken }
    }

    /// A stored session as a conditional write compares it: its identity (``StoredSession/sessionID``) and generation.
    struct StoredKey: Sendable, Equatable {
        var sessionID: String?
        var generation: UInt64

        init(_ stored: StoredSession) { (sessionID, generation) = (stored.sessionID, stored.generation) }
        init(_ session: Session) { (sessionID, generation) = (session.sessionID, session.generation) }
    }

    /// Why a caller needs a token.
    enum Request: Sendable, Equatable {
        /// A valid token, refreshed if due (``TokenRefreshClient/validToken()``).
        case validToken
        /// A new token after the server rejected this access token (a 401).
        case afterRejection(of: String)
        /// A refresh with this refresh token (the seed apps' `refreshToken(_:)`).
        case seed(String)
        /// A check with the server while the credential looks fresh (a cookie session's launch check): forced
        /// like a rejection, but nothing was refused.
        case sessionCheck
        /// A check with a token provider that owns the session (an SDK), while the token looks fresh: it is asked,
        /// not forced, so it may answer from its own cache (and says when it has no session any more).
        case providerCheck
    }

    /// What a caller does next.
    enum CallerAction: Sendable {
        /// Use this token.
        case token(AuthToken)
        /// Wait for the refresh in flight.
        case join(RefreshFlight)
        /// Fail with this error; the session is kept.
        case fail(TokenRefreshError)
        /// End the session as expired (nothing can renew it), then fail with this error.
        case endSessionThenFail(TokenRefreshError)
        /// Refresh this refresh token, which the session never held, without touching the session (the seed's
        /// stateless `refreshToken(_:)`; see ``StatelessRefreshes``): the newest of its chain refreshed here, and no
        /// refresh of it is in flight (``token(_:)`` or ``join(_:)`` answer those).
        case refreshStatelessly(String)
        /// Read the store (it never was), hand its answer to ``storeRead(atLoad:now:)``, then ask again.
        case readStore
        /// Make the first of the pending writes again (see ``writeRetryStarting(elapsed:)``), then ask again.
        case retryWrite(PendingWrite)
        /// Run this refresh, recorded as started under `epoch` (``beginFlight(_:for:seed:forced:pairedAccessToken:)``;
        /// from `seed`, without a session), then wait for it.
        case run(RefreshFlight, epoch: UInt64, seed: String?)
    }

    /// The refresh in flight: one ``FlightMachine`` for its lifetime.
    typealias Flight = FlightMachine

    /// The client's options (one copy, shared with the actor).
    private let options: SharedConfiguration
    var configuration: TokenRefreshClient.Configuration { options.value }
    /// Whether the strategy needs a refresh token (an SDK or client credentials do not).
    let requiresRefreshToken: Bool
    /// Whether the strategy may answer an unforced refresh from its cache (an SDK), sending nothing to a server.
    let mayAnswerFromCache: Bool

    /// Where the session stands: the one stored state (see ``State``). The state shown to the app (``authState``),
    /// ``session``, ``isOffline``, ``flight`` and ``profile`` are read from it. Set by the machine's own transitions only
    /// (in this file and its extensions; the actor never writes a field of the machine, `.ci/machine-counts` checks).
    var state: State = .unloaded(Context()) { didSet { visibleVersion &+= 1 } }
    /// Bumped by every change of ``state`` (all of it the lock-free snapshot or the state stream can see), so the
    /// actor republishes only after such a change, with one integer compare.
    private(set) var visibleVersion: UInt64 = 0
    /// Bumped by every new or ended session: the generation guard for refreshes and writes in progress. Set by the
    /// machine's own transitions only.
    var epoch: UInt64 = 0
    /// The session known to be stored now (`nil`: nothing stored, or not read yet).
    var inStore: StoredKey?
    /// Refresh tokens the server rejected, as keyed hashes; never sent again.
    var rejected = RejectedRefreshTokens()
    /// The tokens the current session has held: a rejection is stale only for one of them. Set by the machine's own
    /// transitions only, like ``breaker``.
    var lineage = SessionLineage()
    var breaker = Breaker()
    /// The writes of this client still to be made again, in order (see ``PendingWrites``).
    var pendingWrites = PendingWrites()

    init(
        configuration: TokenRefreshClient.Configuration, requiresRefreshToken: Bool, mayAnswerFromCache: Bool = false
    ) {
        self.init(
            sharing: SharedConfiguration(configuration), requiresRefreshToken: requiresRefreshToken,
            mayAnswerFromCache: mayAnswerFromCache)
    }

    /// A machine reading the options from `options`, which the actor holds too.
    init(sharing options: SharedConfiguration, requiresRefreshToken: Bool, mayAnswerFromCache: Bool) {
        self.options = options
        self.requiresRefreshToken = requiresRefreshToken
        self.mayAnswerFromCache = mayAnswerFromCache
    }

    // MARK: - Reading the state

    /// The session, if there is one.
    var session: Session? { state.session }

    /// Whether the store has been read (or a session started or ended without reading it).
    var loaded: Bool { state.isLoaded }

    /// The state shown to the app, computed from ``state``. Setting it sets what ``state`` shows (the user ID is the
    /// session's).
    var authState: AuthState {
        get { state.authState }
        set { state.context.shown = Shown(representing: newValue, in: state) }
    }

    /// Whether the last refresh failed for lack of connectivity. Set by the machine's own transitions only.
    var isOffline: Bool {
        get { state.context.isOffline }
        set { state.context.isOffline = newValue }
    }

    /// The refresh in flight. Settable from the machine's own extensions only (its events go through
    /// ``flightEvent(_:epoch:now:elapsed:random:)``).
    var flight: Flight? {
        get { state.context.flight }
        set { state.context.flight = newValue }
    }

    /// The profile the provider or the app supplied for the session's user (``TokenRefreshClient/setProfile(_:)``). Set
    /// by the machine's own transitions only.
    var profile: AuthUser? {
        get { state.context.profile }
        set { state.context.profile = newValue }
    }

    /// Whether work started under `epoch` still belongs to the current session.
    func isCurrent(_ epoch: UInt64) -> Bool { epoch == self.epoch }

    /// Whether a registry may drop the client: no refresh running, no write in progress, nothing unsaved.
    var isEvictable: Bool {
        flight == nil && pendingWrites.isEmpty && (session?.persisted ?? true)
    }

    /// The session known to be stored that the session held replaced without being stored itself (its sign-in's
    /// save failed): the held one is the newer. `nil` when the held session is the one stored, or none is known.
    var replacedStoredSession: StoredKey? {
        guard let inStore, let session, !session.persisted, session.sessionID != inStore.sessionID else { return nil }
        return inStore
    }

    /// The condition for writing a new pair over what is stored. A session held in memory only that replaced the one
    /// known to be stored (``replacedStoredSession``) writes over that session at any generation (another process may
    /// have refreshed it since), never over a session signed in elsewhere since.
    var writeCondition: WriteCondition {
        replacedStoredSession.map { .sessionAtAnyGeneration($0.sessionID) } ?? storedCondition(otherwise: .absent)
    }

    /// The session known to be stored now (its identity and generation) as a write's condition, or `otherwise` when
    /// none is known.
    func storedCondition(otherwise: WriteCondition) -> WriteCondition {
        inStore.map { .session($0.sessionID, generation: $0.generation) } ?? otherwise
    }

    /// Records `stored` as what the store holds now.
    mutating func noteStored(_ stored: StoredSession?) {
        inStore = stored.map(StoredKey.init)
    }

    /// The generation for a pair that follows `previous`.
    func nextGeneration(after previous: Session?) -> UInt64 {
        // Generations order one session's writes and may repeat after a removal; the session identity tells sessions
        // apart (see "Why generations may repeat" in the TokenRefresh article).
        max(previous?.generation ?? 0, inStore?.generation ?? 0) &+ 1
    }

    // MARK: - Deciding what a caller does

    /// A caller needs a token for `request`: the one round trip of the slow path. The store is read first if it never
    /// was, the first pending write (an ended session's removal, a pending pair's save) is made again when due, and then the caller does
    /// what ``decide(_:pairedAccessToken:now:elapsed:stateless:)`` says. After a store action the actor asks again.
    mutating func callerArrived(
        _ request: Request, pairedAccessToken: String? = nil, now: Date, elapsed: Duration,
        stateless: StatelessRefreshes = StatelessRefreshes()
    ) -> CallerAction {
        guard loaded else { return .readStore }
        if let due = writeRetryStarting(elapsed: elapsed) { return .retryWrite(due) }
        return decide(request, pairedAccessToken: pairedAccessToken, now: now, elapsed: elapsed, stateless: stateless)
    }

    /// What a caller who needs a token does, at wall time `now` and injected-clock time `elapsed`. The store
    /// must have been read (``loaded``).
    ///
    /// One ladder serves every request: a stale rejection (of an older token of this session) and a seed that the
    /// session held before are answered like `Request.validToken`. A rejection of a token this session never
    /// held fails with ``TokenRefreshError/sessionChanged``; a seed it never held is refreshed on its own
    /// (``CallerAction/refreshStatelessly(_:)``).
    ///
    /// `stateless` holds the refresh tokens refreshed on its own before (kept by the actor): without a session such a
    /// seed goes the stateless way again, so a consumed refresh token is never presented twice. A stateless refresh
    /// is answered from it too (``decideStateless(_:stateless:now:)``).
    ///
    /// A refresh it starts is recorded here (``beginFlight(_:for:seed:forced:pairedAccessToken:)``, with
    /// `pairedAccessToken`) and handed to the actor to run (``CallerAction/run(_:epoch:seed:)``).
    mutating func decide(
        _ request: Request, pairedAccessToken: String? = nil, now: Date, elapsed: Duration,
        stateless: StatelessRefreshes = StatelessRefreshes()
    ) -> CallerAction {
        if case .seed(let seed) = request, rejected.contains(seed) { return .fail(.refreshTokenRejected) }
        // What the request asks of the session, or of none: a stale rejection (of an older token of this session) and a
        // seed the session held before are answered like `validToken`; a refresh without a session starts one.
        var forcedBy = request
        var seed: String?
        switch (request, session) {
        case (.afterRejection(let rejectedToken), let session?) where rejectedToken != session.token.accessToken:
            // Stale only for an older token of this session; a token of another session (signed out, another user
            // signed in while the request was under way) is never answered with this session's token.
            guard lineage.contains(accessToken: rejectedToken) else { return .fail(.sessionChanged) }
            forcedBy = .validToken
        case (.seed(let held), let session?) where held != session.token.refreshToken:
            // A refresh token this session held before: a caller that read it before the new pair was saved. One it
            // never held is another session's, refreshed on its own.
            guard lineage.contains(refreshToken: held) else {
                return decideStateless(held, stateless: stateless, now: now)
            }
            forcedBy = .validToken
        case (_, _?): break
        case (.validToken, nil), (.providerCheck, nil):
            // Strategies that need no refresh token (client credentials, an SDK) start a session themselves.
            guard !requiresRefreshToken else { return .fail(.signedOut) }
        case (.afterRejection, nil), (.sessionCheck, nil):
            return .fail(.signedOut)
        case (.seed(let value), nil):
            guard !value.isEmpty else { return .fail(.signedOut) }
            // A seed refreshed on its own before goes that way again, so a consumed refresh token is never presented
            // twice; and only a refresh of the same refresh token is shared: a seed of another (another user's, when
            // the app switched users while this one ran) is never answered with the flight's pair.
            if stateless.refreshed(value) || (flight != nil && flight?.seed != value) {
                return decideStateless(value, stateless: stateless, now: now)
            }
            seed = value
        }
        // Every request but `validToken` asks the provider even while the token is fresh.
        let forced = forcedBy != .validToken
        let policy = configuration.expiryPolicy
        let token = session?.token
        if !forced, let token, !token.willExpireSoon(at: now, policy: policy) { return .token(token) }
        if let flight { return .join(flight.flight) }
        let stillValid = !forced && token?.isExpired(at: now, policy: policy) == false
        // A rejection and a session check skip the provider's cache; the others may be answered from it.
        let skipsCache: Bool
        switch forcedBy {
        case .afterRejection, .sessionCheck: skipsCache = true
        case .validToken, .seed, .providerCheck: skipsCache = false
        }
        if let blocked = blockedError(at: elapsed, counting: sendsRefreshRequest(forcedBy, forced: skipsCache)) {
            if stillValid, let token { return .token(token) }
            noteExpiredIfOffline(now: now)
            return .fail(blocked)
        }
        if requiresRefreshToken, let token, token.refreshToken == nil {
            return stillValid ? .token(token) : .endSessionThenFail(.sessionExpired)
        }
        let flight = RefreshFlight()
        let epoch = beginFlight(
            flight, for: request, seed: seed, forced: skipsCache, pairedAccessToken: pairedAccessToken)
        return .run(flight, epoch: epoch, seed: seed)
    }

    /// Whether a refresh for `request` (`forced`: skipping a provider's cache) sends a refresh request to a server, so
    /// that the breaker counts it. A check (at launch, after ``networkRestored(checksWithServer:)``, an SDK's change
    /// callback) is not a refresh, and an unforced call of a strategy that may answer from its cache (an SDK) sends
    /// nothing of TokenKit's.
    func sendsRefreshRequest(_ request: Request, forced: Bool) -> Bool {
        switch request {
        case .sessionCheck, .providerCheck: false
        case .validToken, .afterRejection, .seed: forced || !mayAnswerFromCache
        }
    }

    /// The error that holds a new refresh back (backoff, `Retry-After`, and the breaker when it is `counting` the
    /// refresh), if any.
    func blockedError(at elapsed: Duration, counting: Bool = true) -> TokenRefreshError? {
        breaker.blocked(
            at: elapsed, maximum: configuration.maximumRefreshes, window: configuration.breakerWindow,
            counting: counting)
    }

    /// A session whose token has expired while refreshes fail reads `expired` (a step of
    /// ``decide(_:pairedAccessToken:now:elapsed:stateless:)`` and ``attemptFailed(_:retry:random:now:elapsed:)``).
    private mutating func noteExpiredIfOffline(now: Date) {
        switch state {
        case .active(let session, let context)
        where context.shown != .expired && session.token.isExpired(at: now, policy: configuration.expiryPolicy):
            authState = .expired(lastUserID: session.userID)
        case .active, .signedOut, .unloaded: break  // already expired, still valid, or no session
        }
    }

    // MARK: - The flight

    /// Records the refresh `flight` that `request` started; the actor runs it under the returned epoch. A refresh that
    /// follows a rejection follows a refused request; its attempts count against the breaker when they send a refresh
    /// request (``sendsRefreshRequest(_:forced:)``); `pairedAccessToken` (the access token a caller held with a seed)
    /// counts only for a refresh that starts a session from a seed.
    mutating func beginFlight(
        _ flight: RefreshFlight, for request: Request = .validToken, seed: String?, forced: Bool,
        pairedAccessToken: String? = nil
    ) -> UInt64 {
        let followsRefusal = if case .afterRejection = request { true } else { false }
        self.flight = Flight(
            flight: flight, epoch: epoch, seed: seed, forced: forced, followsRefusal: followsRefusal,
            pairedAccessToken: seed == nil ? nil : pairedAccessToken,
            sendsRefreshRequest: sendsRefreshRequest(request, forced: forced))
        return epoch
    }

    // MARK: - Attempts

    /// The strategy answered: the breaker forgets the transient failures before it.
    mutating func attemptSucceeded() {
        breaker.recordSuccess()
    }

    /// The strategy failed transiently on attempt `retry`: the delay to retry after, or `nil` to give up (then
    /// attempts are held back, the client is offline if it could not connect, and an expired session reads
    /// `expired`).
    mutating func attemptFailed(
        _ failure: TokenRefreshError, retry: Int, random: Double, now: Date, elapsed: Duration
    ) -> Duration? {
        let backoff = configuration.backoff
        let delay = breaker.recordTransientFailure(failure, backoff: backoff, random: random)
        let budgetSpent = failure.status != nil && breaker.recordServerFailure(at: elapsed, backoff: backoff)
        let waitInside = failure.retryAfter.map { $0 <= backoff.maximumRetryAfterWait } ?? true
        if retry < backoff.retries && waitInside && !budgetSpent { return delay }
        breaker.holdBack(until: elapsed + delay, after: failure)
        isOffline = failure.isConnectivityFailure
        noteExpiredIfOffline(now: now)
        return nil
    }

    /// The network is back: forget the backoff so the next refresh runs at once, and check the session with the
    /// provider as ``providerCheck(checksWithServer:)`` says.
    mutating func networkRestored(checksWithServer: Bool) -> ProviderCheckAction {
        breaker.clearBackoff()
        return providerCheck(checksWithServer: checksWithServer)
    }

    /// The store's answer before a sign-in or sign-out over a store never read: a stored session is kept as the
    /// session, so that a sign-in that cannot be stored falls back to it and a sign-out knows whom it signs out;
    /// nothing else changes. Then the call goes ahead.
    mutating func storeReadBeforeSessionChange(_ read: TokenStoreRead) {
        guard case .found(let stored) = read, !loaded else { return }
        noteStored(stored)
        state = state.entering(Session(stored, persisted: true))
        lineage.reset()
        lineage.record(stored.token)
    }

    // MARK: - Sessions

    /// The store's answer (`read`) at load time; once loaded, a later answer changes nothing. A session restored is
    /// announced; a stored pair whose refresh token was rejected before is removed (conditional on its identity and
    /// generation). A store that cannot be read leaves the machine unloaded and reads `unavailable`, never signed out:
    /// the stored session is kept, and the next read that succeeds shows it.
    mutating func storeRead(atLoad read: TokenStoreRead, now: Date) -> Action {
        guard !loaded else { return Action() }
        switch read {
        case .unavailable(let error):
            authState = .unavailable
            let failure = TokenRefreshError.storageUnavailable.with(underlying: error)
            return Action(callers: .fail(failure), events: [.storageUnavailable(failure)])
        case .absent:
            lineage.reset()
            state = state.enteringNoSession()
            authState = .signedOut
            return Action()
        case .found(let stored):
            lineage.reset()
            noteStored(stored)
            if let refreshToken = stored.token.refreshToken, rejected.contains(refreshToken) {
                state = state.enteringNoSession()
                authState = .signedOut
                return Action(store: .discard(.session(stored.sessionID, generation: stored.generation)))
            }
            state = state.entering(Session(stored, persisted: true))
            lineage.record(stored.token)
            // A token that expired while the app was closed reads as expired until a refresh renews it.
            let expired = stored.token.isExpired(at: now, policy: configuration.expiryPolicy)
            authState = expired ? .expired(lastUserID: stored.userID) : .signedIn(userID: stored.userID)
            return Action(
                events: [.sessionRestored(userID: stored.userID, tokenFingerprint: stored.token.fingerprint)])
        }
    }

    /// The app (or the provider, at sign-in) supplied `newProfile` (``TokenRefreshClient/setProfile(_:)``): taken for
    /// the session's user (`true`); refused (and what it had is kept) without a profile, without a session or for
    /// another user.
    mutating func profileSupplied(_ newProfile: AuthUser?) -> Bool {
        guard let newProfile, let session, case let userID = Self.userID(session.userID, token: session.token),
            userID == nil || userID == newProfile.id
        else { return false }
        profile = newProfile
        return true
    }

    /// The profile held while it is `userID`'s (a session's profile is only ever its own user's), else `nil`.
    func profile(keptFor userID: String?) -> AuthUser? {
        guard profile?.id == userID else { return nil }
        return profile
    }

    // MARK: - The lock-free snapshot

    /// What `validToken()`'s fast path reads without an actor hop.
    func snapshot() -> TokenRefreshClient.Snapshot {
        var snapshot = TokenRefreshClient.Snapshot()
        snapshot.token = session?.token
        snapshot.state = authState
        snapshot.needsActor = !loaded || session?.persisted == false
        snapshot.isOffline = isOffline
        snapshot.flight = flight?.flight
        snapshot.profile = profile
        if let token = session?.token {
            snapshot.refreshDue = Self.refreshDue(of: token, policy: configuration.expiryPolicy)
        }
        return snapshot
    }

    /// When `token` becomes due for a proactive refresh (`willExpireSoon`).
    static func refreshDue(of token: AuthToken, policy: ExpiryPolicy) -> Date {
        token.refreshDueDate(policy: policy) ?? .distantFuture  // no known expiry: never due
    }
}

extension SessionMachine.Session {
    init(_ stored: StoredSession, persisted: Bool) {
        self.init(
            token: stored.token, userID: stored.userID, generation: stored.generation, sessionID: stored.sessionID,
            persisted: persisted)
    }
}
