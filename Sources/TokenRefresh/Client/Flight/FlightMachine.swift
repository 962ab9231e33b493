import AuthToken
import Foundation
import Persistence

/// One shared refresh, from the store's lock taken to the callers' answer, as a value with no I/O: re-read the store,
/// present a refresh token, persist the new pair, re-read after a rejection or a conflict, done.
///
/// It lives in the session machine's ``SessionMachine/flight`` and hears only the events that
/// ``SessionMachine/flightEvent(_:epoch:now:elapsed:random:)`` lets through, after it has checked once that they belong
/// to this flight and the current session. Each event returns one ``Action``; what the flight asks of the session
/// (adopt a stored pair, record the refreshed one, remember a rejected refresh token, the breaker's part of an attempt)
/// is in the action's ``Action/session`` part, which the session machine applies.
/// - **Re-read before refresh** (rule 3): the first work is ``Work/readStore``; a newer pair saved elsewhere is
///   adopted, and answered at once while it is fresh. A store that cannot be read gets nothing presented.
/// - **Rotate, then persist, then answer** (rule 4): the strategy's answer becomes ``Work/persist(_:_:)``; only the end
///   of that write (landed or failed) answers the callers.
/// - **Classified failures** (rule 5): a rejected refresh token is remembered, the store re-read once, and then the
///   session ends with its reason.
struct FlightMachine: Sendable {
    /// The callers' rendezvous.
    let flight: RefreshFlight
    /// The epoch it started under.
    let epoch: UInt64
    /// The seed refresh token, for a refresh without a session.
    let seed: String?
    /// Whether it follows a rejection by the server or is a check, so a provider should skip its cache.
    let forced: Bool
    /// Whether it follows a refused request (a 401), so a session found gone expired in use.
    let followsRefusal: Bool
    /// For a refresh that starts a session from a seed: the access token the caller held with the seed, which then
    /// counts as one of the new session's.
    let pairedAccessToken: String?
    /// Whether its attempts send a refresh request to a server, so the breaker counts them.
    let sendsRefreshRequest: Bool
    /// Where the refresh stands.
    private var state: Step = .waiting(retry: 0)

    init(
        flight: RefreshFlight, epoch: UInt64, seed: String?, forced: Bool, followsRefusal: Bool,
        pairedAccessToken: String?, sendsRefreshRequest: Bool
    ) {
        (self.flight, self.epoch, self.seed, self.forced) = (flight, epoch, seed, forced)
        (self.followsRefusal, self.pairedAccessToken) = (followsRefusal, pairedAccessToken)
        self.sendsRefreshRequest = sendsRefreshRequest
    }

    /// Where the refresh stands; each case carries what its next event needs.
    private enum Step: Sendable {
        /// Waiting for the store's lock; the first attempt under it is number `retry`.
        case waiting(retry: Int)
        /// Re-reading the store before presenting anything.
        case rereading(retry: Int)
        /// The strategy was called.
        case presenting(Presenting)
        /// The new pair is being written.
        case persisting(Persisting)
        /// `sent` was rejected: re-reading the store once, for a pair rotated elsewhere.
        case rereadingAfterRejection(sent: String)
        /// The write lost to a newer pair in the store: re-reading it.
        case rereadingAfterConflict
        /// Another process held the store's lock past its timeout (`failure`): re-reading the store without it.
        case rereadingAfterLockTimeout(failure: TokenRefreshError)
        /// A transient failure is retried as attempt `retry` after `delay`, with the store's lock released.
        case retrying(retry: Int, delay: Duration)
    }

    /// A call of the strategy under way.
    private struct Presenting: Sendable {
        /// The refresh token presented (nil: none).
        var sent: String?
        /// The session it refreshes.
        var previous: SessionMachine.Session?
        /// Whether it presents a pair found after a rejection (its retries then wait under the lock).
        var afterRejection: Bool
        /// The attempt number.
        var retry: Int
        /// When the attempt started (counted by the breaker at that time when the flight sends refresh requests).
        var started: Duration
    }

    /// The pair being written (its identity: the refreshed session's, or a new one for a new session) and what it
    /// becomes once written: another user's session (a provider that switched users by itself), or the first one.
    struct Persisting: Sendable {
        var stored: StoredSession
        var switchedUser: Bool
        var startsSession: Bool
        var profile: AuthUser?
    }

    /// What an event is decided with: the session machine the refresh is for (read only), the wall time and the
    /// injected clock's.
    private struct Facts {
        let session: SessionMachine
        let now: Date
        let elapsed: Duration
    }

    /// What happens in the refresh.
    enum Event: Sendable {
        /// The store's lock is held.
        case lockTaken
        /// The store's lock could not be taken in time: never refresh without it.
        case lockTimedOut(PersistenceError)
        /// The store answered.
        case storeRead(TokenStoreRead)
        /// The strategy answered.
        case answered(TokenResponse)
        /// The strategy's call failed.
        case callFailed(TokenRefreshError)
        /// The attempts end with this failure, nothing more to record (held back, a sleep cut short).
        case gaveUp(TokenRefreshError)
        /// A sleep under the lock ended: the next attempt starts.
        case retryStarting
        /// The write of the new pair ended: `nil` when it landed, else the store's error.
        case writeFinished(PersistenceError?)
    }

    /// What the actor does next, in parts carried out in one order: the events are published, the work is done (its
    /// outcome is the next ``Event``), and then the callers are answered.
    struct Action: Sendable {
        /// What the session machine applies, in order, before the actor sees the action.
        var session: [SessionStep] = []
        /// The events to publish, in order.
        var events: [AuthEvent] = []
        /// What is done with the store or the strategy.
        var work: Work = .none
        /// The answer to the callers (`nil`: the work's outcome comes back as the next event).
        var callers: Answer?
        /// A transient failure on attempt `retry`: the session machine plans the retry (see
        /// ``FlightMachine/retryPlanned(_:after:userID:)``).
        var transient: (failure: TokenRefreshError, retry: Int)?

        /// Fails the callers with `error`.
        static func failure(_ error: TokenRefreshError) -> Action { Action(callers: .fail(error)) }
    }

    /// A change of the session that the flight's step makes.
    enum SessionStep: Sendable {
        /// Take up this pair, stored by another process.
        case adopt(StoredSession)
        /// Take up the refreshed pair (`persisted`: its write landed).
        case record(Persisting, persisted: Bool)
        /// The server rejected this refresh token: never present it again.
        case reject(String)
        /// The strategy answered: the breaker forgets the transient failures before it.
        case attemptSucceeded
        /// The attempt counted at this time sent nothing: it no longer counts.
        case forgetAttempt(startedAt: Duration)
        /// The store was read under the lock: count the server failures recorded with the session (after any pair
        /// adopted from this read, before the next attempt is admitted).
        case storedFailuresRead(TokenStoreRead)
    }

    /// The work part of an ``Action``.
    enum Work: Sendable {
        /// Nothing.
        case none
        /// Read the store: ``Event/storeRead(_:)``.
        case readStore
        /// Call the strategy once with this refresh token (`forced`: it should skip its cache):
        /// ``Event/answered(_:)`` or ``Event/callFailed(_:)``.
        case call(String?, forced: Bool)
        /// Attempts are held back (backoff, `Retry-After`, the breaker): record it, then ``Event/gaveUp(_:)``.
        case blocked(TokenRefreshError)
        /// Sleep under the store's lock, then ``Event/retryStarting`` (cut short: ``Event/gaveUp(_:)`` with
        /// ``TokenRefreshError/cancelled``).
        case sleep(Duration)
        /// Write `session` under `condition`, then ``Event/writeFinished(_:)``.
        case persist(StoredSession, WriteCondition)
        /// End the session (memory and store) with `reason`, failing the callers' flight with `error`.
        case endSession(reason: AuthEvent.SignOutReason, error: TokenRefreshError?)
        /// As ``endSession(reason:error:)`` if a session is held; a session already gone just reads signed out.
        case endSessionIfHeld(reason: AuthEvent.SignOutReason, error: TokenRefreshError)
    }

    /// The callers' part of an ``Action``: the refresh is over.
    enum Answer: Sendable {
        /// Answer with this token (the new pair has been written, or its write failed and is retried).
        case token(AuthToken)
        /// A pair another process saved was adopted: say so, then answer with its token.
        case adopted(StoredSession)
        /// Fail with this error.
        case fail(TokenRefreshError)
        /// Another user's pair was adopted: the refresh in flight (made for the old user) is void. Forget its task,
        /// fail `flight` with the error, then fail with it.
        case failTakenFlight(RefreshFlight?, TokenRefreshError)
    }

    // MARK: - Transitions

    /// `event` happened in this flight; `session` is the session machine it refreshes for (read only), `now` the wall
    /// time and `elapsed` the injected clock's.
    mutating func receive(_ event: Event, in session: SessionMachine, now: Date, elapsed: Duration) -> Action {
        let facts = Facts(session: session, now: now, elapsed: elapsed)
        switch (state, event) {
        case (.waiting(let retry), .lockTaken):
            guard let seed else {
                state = .rereading(retry: retry)
                return Action(work: .readStore)
            }
            return present(seed, previous: session.session, retry: retry, facts)
        case (_, .lockTimedOut(let error)):
            state = .rereadingAfterLockTimeout(failure: TokenRefreshError.transient.with(underlying: error))
            return Action(work: .readStore)
        case (_, .storeRead(let read)):
            var action = storeRead(read, facts)
            action.session.append(.storedFailuresRead(read))
            return action
        case (.presenting(var presenting), .retryStarting):
            presenting.started = elapsed
            state = .presenting(presenting)
            return Action(work: .call(presenting.sent, forced: forced))
        case (.presenting(let presenting), .answered(let response)):
            return answered(response, presenting, facts)
        case (.presenting(let presenting), .callFailed(let failure)):
            return callFailed(failure, presenting, userID: session.session?.userID)
        case (.presenting(let presenting), .gaveUp(let failure)):
            return gaveUp(failure, presenting)
        case (.persisting(let pair), .writeFinished(let error)):
            return written(pair, error)
        default:
            return .failure(.signedOut)
        }
    }

    /// The session machine planned the retry of a transient failure (``Action/transient``): `delay` (`nil`: given
    /// up). A retry after a rejection waits under the store's lock; any other waits with it released, the flight
    /// failing meanwhile (``takeRetry()``).
    mutating func retryPlanned(_ delay: Duration?, after failure: TokenRefreshError, userID: String?) -> Action {
        guard let delay, case .presenting(var presenting) = state else {
            return Action(events: [.refreshFailed(failure, userID: userID)], callers: .fail(failure))
        }
        guard presenting.afterRejection else {
            state = .retrying(retry: presenting.retry + 1, delay: delay)
            return .failure(failure)
        }
        presenting.retry += 1
        state = .presenting(presenting)
        return Action(work: .sleep(delay))
    }

    /// The flight ended with a failure: the retry planned with the store's lock released, if any (the flight then
    /// waits for the lock again).
    mutating func takeRetry() -> (retry: Int, delay: Duration)? {
        guard case .retrying(let retry, let delay) = state else { return nil }
        state = .waiting(retry: retry)
        return (retry, delay)
    }

    // MARK: - Steps

    /// The store answered `read`.
    private mutating func storeRead(_ read: TokenStoreRead, _ facts: Facts) -> Action {
        let (session, held) = (facts.session, facts.session.session)
        switch (state, read) {
        case (.rereading(let retry), .found(let stored)):
            guard session.shouldAdopt(stored) else {
                // Another session stored with a refresh token rejected before: the held one is over all the same,
                // and its refresh token is never presented. The session the held one replaced is older: it ends
                // nothing.
                if let held, SessionMachine.isAnotherSession(stored, than: held),
                    !session.isReplacedByHeldSession(stored)
                {
                    return Self.ending(.removedElsewhere, .sessionChanged, failure: .sessionChanged)
                }
                return present(previous: held, retry: retry, facts)
            }
            return adoptOrPresent(stored, afterRejection: false, retry: retry, facts)
        case (.rereading(let retry), .absent):
            // Removed by another process: the session ended there. That process may have rotated the refresh token
            // first, also one a pending pair kept from the stored pair: it is never presented.
            guard held?.refreshTokenIsShared == true, session.inStore != nil else {
                return present(previous: held, retry: retry, facts)
            }
            return Self.ending(.removedElsewhere, nil, failure: .signedOut)
        case (.rereading(let retry), .unavailable(let error)):
            // The stored pair is the truth another process may have rotated (ours may be consumed): present nothing,
            // keep the session. Only a refresh token held in memory alone has no stored truth to miss.
            let failure = TokenRefreshError.storageUnavailable.with(underlying: error)
            let memoryOnly = held.map { !$0.refreshTokenIsShared } ?? false
            var next = memoryOnly ? present(previous: held, retry: retry, facts) : .failure(failure)
            next.events.insert(.storageUnavailable(failure), at: 0)
            return next
        case (.rereadingAfterRejection, .found(let stored)):
            // Only a pair stored since this client last knew the store is another process's rotation (the refresh
            // token just rejected is remembered, so a pair holding it is not adopted).
            guard session.shouldAdopt(stored), stored.token.refreshToken != nil else { return endAfterRejection() }
            return adoptOrPresent(stored, afterRejection: true, retry: 0, facts)
        case (.rereadingAfterConflict, _):
            return Self.afterConflict(read, session)
        case (.rereadingAfterLockTimeout(let failure), _):
            // A still-valid pair stored meanwhile is the answer; else the session is kept, and while its token is
            // still valid, validToken() callers get it.
            guard case .found(let stored) = read, session.shouldAdopt(stored),
                !stored.token.isExpired(at: facts.now, policy: session.configuration.expiryPolicy)
            else { return Action(events: [.refreshFailed(failure, userID: held?.userID)], callers: .fail(failure)) }
            return Self.answer(adopting: stored, session)
        case (.rereadingAfterRejection, _):
            return endAfterRejection()
        default:
            return .failure(.signedOut)
        }
    }

    /// Presents the refresh token of `previous` (the empty string for a strategy without one) as attempt `retry`.
    private mutating func present(
        previous: SessionMachine.Session?, afterRejection: Bool = false, retry: Int, _ facts: Facts
    ) -> Action {
        let fallback = facts.session.requiresRefreshToken ? nil : ""
        guard let refreshToken = previous?.token.refreshToken ?? fallback else {
            return .failure(previous == nil ? .signedOut : .missingRefreshToken)
        }
        return present(refreshToken, previous: previous, afterRejection: afterRejection, retry: retry, facts)
    }

    /// Presents `refreshToken` (the seed, or the refresh token of `previous`; empty for a strategy without one) as
    /// attempt `retry`.
    private mutating func present(
        _ refreshToken: String, previous: SessionMachine.Session?, afterRejection: Bool = false, retry: Int,
        _ facts: Facts
    ) -> Action {
        if facts.session.rejected.contains(refreshToken) { return .failure(.refreshTokenRejected) }
        let sent = refreshToken.isEmpty ? nil : refreshToken
        let presenting = Presenting(
            sent: sent, previous: previous, afterRejection: afterRejection, retry: retry, started: facts.elapsed)
        state = .presenting(presenting)
        return Action(work: .call(sent, forced: forced))
    }

    /// Adopts `stored` (saved by another process) and answers with it while it is fresh, else presents its refresh
    /// token. Another user's pair is never the answer to a refresh made for this one.
    private mutating func adoptOrPresent(
        _ stored: StoredSession, afterRejection: Bool, retry: Int, _ facts: Facts
    ) -> Action {
        let session = facts.session
        let fresh = !stored.token.willExpireSoon(at: facts.now, policy: session.configuration.expiryPolicy)
        if fresh || session.switchesUser(to: stored) { return Self.answer(adopting: stored, session) }
        let adopted = SessionMachine.Session(stored, persisted: true)
        var action = present(previous: adopted, afterRejection: afterRejection, retry: retry, facts)
        action.session.insert(.adopt(stored), at: 0)
        return action
    }

    /// Adopts `stored` (saved by another process) and answers with it, unless it is another user's: then the refresh
    /// in flight, made for the old one, is taken away and fails.
    private static func answer(adopting stored: StoredSession, _ session: SessionMachine) -> Action {
        let taken = Answer.failTakenFlight(session.flight?.flight, .sessionChanged)
        return Action(session: [.adopt(stored)], callers: session.switchesUser(to: stored) ? taken : .adopted(stored))
    }

    /// The store's answer (`read`) after a write of the session lost to a newer pair, in this flight or when a pending
    /// pair is written again (``SessionMachine/conflictRead(_:epoch:now:elapsed:)``): the newer pair is adopted, or the
    /// session ended elsewhere.
    static func afterConflict(_ read: TokenStoreRead, _ session: SessionMachine) -> Action {
        switch read {
        case .found(let stored): answer(adopting: stored, session)
        case .absent: ending(.removedElsewhere, nil, failure: .signedOut)
        case .unavailable(let error): .failure(TokenRefreshError.storageUnavailable.with(underlying: error))
        }
    }

    /// The strategy answered `response` (received now): write the new pair before anyone sees it.
    private mutating func answered(_ response: TokenResponse, _ presenting: Presenting, _ facts: Facts) -> Action {
        let previous = presenting.previous
        let token = response.token(receivedAt: facts.now, keeping: presenting.sent)
        // A provider that switched users by itself answers with the new user's token: a new session, never the old
        // user's refreshed one.
        let switchedUser = SessionMachine.subjectChanged(from: previous, to: token, responseUserID: response.userID)
        let keptUserID = switchedUser ? nil : previous?.userID
        let userID = SessionMachine.userID(response.userID, else: keptUserID, token: token, response: response)
        // A refresh keeps the session's identity; a pair that starts a session (or another user's) is a new one.
        let sessionID = switchedUser || previous == nil ? StoredSession.newSessionID() : previous?.sessionID
        let generation = facts.session.nextGeneration(after: previous)
        let stored = StoredSession(token: token, userID: userID, generation: generation, sessionID: sessionID)
        state = .persisting(
            Persisting(
                stored: stored, switchedUser: switchedUser, startsSession: previous == nil, profile: response.user))
        return Action(session: [.attemptSucceeded], work: .persist(stored, facts.session.writeCondition))
    }

    /// The strategy's call failed with `failure`: an attempt that sent nothing no longer counts; a transient failure
    /// goes to the session machine's retry plan; any other is published (unless quiet: a rejection, a cancellation)
    /// and decided by ``gaveUp(_:_:)``.
    private mutating func callFailed(_ failure: TokenRefreshError, _ presenting: Presenting, userID: String?) -> Action
    {
        var forget: [SessionStep] = []
        if sendsRefreshRequest, ErrorClassification.sentNothing(failure) {
            forget = [.forgetAttempt(startedAt: presenting.started)]  // the server was never reached
        }
        guard !failure.isTransient else { return Action(session: forget, transient: (failure, presenting.retry)) }
        var action = gaveUp(failure, presenting)
        action.session.insert(contentsOf: forget, at: 0)
        let quiet = failure == .refreshTokenRejected || failure == .cancelled
        action.events.insert(contentsOf: quiet ? [] : [.refreshFailed(failure, userID: userID)], at: 0)
        return action
    }

    /// The attempts ended with `failure`: a rejected refresh token is remembered and the store re-read once (a seed's
    /// rejection fails at once); a rejection after that re-read, the server saying the session is gone, or a provider
    /// without a session ends it.
    private mutating func gaveUp(_ failure: TokenRefreshError, _ presenting: Presenting) -> Action {
        let sent = presenting.sent
        switch failure {
        case .refreshTokenRejected where presenting.afterRejection:
            return rejecting(sent, endAfterRejection())
        case .refreshTokenRejected:
            // A strategy without a refresh token (an SDK, client credentials) was told the session is over.
            guard let sent else { return endingIfHeld(.revoked, failure: .refreshTokenRejected) }
            guard seed == nil else { return rejecting(sent, .failure(.refreshTokenRejected)) }
            // Another process may have rotated meanwhile: re-read the store once before ending the session.
            state = .rereadingAfterRejection(sent: sent)
            return rejecting(sent, Action(work: .readStore))
        case .sessionInvalidated:
            // The server says the session is gone (also of a pair found after a rejection): after a refused request it
            // expired in use; at a launch or on-demand check it was found invalid.
            let reason: AuthEvent.SignOutReason = followsRefusal ? .sessionExpired : .invalidatedOnServer
            return rejecting(sent, endingIfHeld(reason, failure: .sessionInvalidated))
        case .signedOut where sent == nil && !presenting.afterRejection:
            // The token provider (an SDK) reports that it has no session.
            return endingIfHeld(.providerSignedOut, failure: .signedOut)
        default:
            return .failure(failure)
        }
    }

    /// The write of `pair` ended with `error` (`nil`: it landed). A write that lost to a newer pair re-reads it;
    /// otherwise the pair is the session's (a failed write keeps it in memory, to be retried), and the callers get it.
    private mutating func written(_ pair: Persisting, _ error: PersistenceError?) -> Action {
        if error == .conflict {
            // Someone stored a newer session meanwhile: it wins, and this refresh writes nothing.
            state = .rereadingAfterConflict
            return Action(work: .readStore)
        }
        let (token, userID) = (pair.stored.token, pair.stored.userID)
        let news: AuthEvent =
            pair.startsSession || pair.switchedUser
            ? .signedIn(userID: userID, tokenFingerprint: token.fingerprint)
            : .tokenRefreshed(userID: userID, tokenFingerprint: token.fingerprint)
        // The old session's callers asked for its token: they fail, and the new user's session starts afresh.
        let callers: Answer = pair.switchedUser ? .fail(.sessionChanged) : .token(token)
        let failed = error.map { TokenRefreshError.storageUnavailable.with(underlying: $0) }
        let warning = failed.map { [AuthEvent.persistenceFailed($0, tokenFingerprint: token.fingerprint)] } ?? []
        return Action(session: [.record(pair, persisted: error == nil)], events: warning + [news], callers: callers)
    }

    /// The session's refresh token was rejected and nothing newer is stored: the session ends, revoked.
    private func endAfterRejection() -> Action {
        Self.ending(.revoked, .refreshTokenRejected, failure: .refreshTokenRejected)
    }

    /// Ends the session with `reason` (the flight's callers fail with `error`), then fails with `failure`.
    private static func ending(
        _ reason: AuthEvent.SignOutReason, _ error: TokenRefreshError?, failure: TokenRefreshError
    ) -> Action {
        Action(work: .endSession(reason: reason, error: error), callers: .fail(failure))
    }

    /// Ends the session with `reason` if one is held, then fails with `failure`.
    private func endingIfHeld(_ reason: AuthEvent.SignOutReason, failure: TokenRefreshError) -> Action {
        Action(work: .endSessionIfHeld(reason: reason, error: failure), callers: .fail(failure))
    }

    /// `action`, remembering `sent` (if any) as rejected first.
    private func rejecting(_ sent: String?, _ action: Action) -> Action {
        var action = action
        action.session.insert(contentsOf: sent.map { [.reject($0)] } ?? [], at: 0)
        return action
    }
}
