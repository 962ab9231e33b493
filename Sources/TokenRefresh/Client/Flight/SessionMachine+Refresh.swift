import AuthToken
import Foundation
import Persistence

/// The shared refresh under the store's exclusive access, as transitions that each return one action.
///
/// The actor takes the store's lock, tells the machine (``SessionMachine/lockTaken(epoch:seed:)``), and then only
/// carries out what each answer asks: read the store, present a refresh token to the strategy, write a pair, end the
/// session, publish an event, answer the callers. What it learns (the store's answer, the strategy's answer, the end
/// of a write) goes back in as the next event. The rules live here, where a synchronous test reaches them:
/// - **Re-read before refresh** (rule 3): the first action is ``RefreshAction/readStore``; a newer pair saved
///   elsewhere is adopted, and answered at once while it is fresh. A store that cannot be read gets nothing
///   presented: the held refresh token may have been consumed elsewhere.
/// - **Rotate, then persist, then answer** (rule 4): the strategy's answer becomes ``RefreshAction/persist(_:_:)``;
///   only the end of that write (landed or failed) answers the callers. A failed write keeps the pair in memory.
/// - **Classified failures** (rule 5): a rejected refresh token is remembered, the store re-read once, and then the
///   session ends with its reason.
/// - **Generation guard** (rule 6): every event carries the epoch the refresh started under; after a sign-out or a
///   newer session the answer is a failure, and nothing is written.
extension SessionMachine {
    /// What the actor does next in the refresh it runs under the store's lock.
    indirect enum RefreshAction: Sendable {
        /// Read the store, then call ``storeRead(_:epoch:now:)``.
        case readStore
        /// Present this refresh token to the strategy (`nil` for a strategy without refresh tokens): start the attempts
        /// at ``firstRetry(after:retriesOutsideLock:)`` and call ``attemptStarting(epoch:at:)``. `retriesOutsideLock`: a
        /// retry after a transient failure waits with the store's lock released (the first attempt of a flight).
        case present(String?, retriesOutsideLock: Bool)
        /// Call the strategy once with this refresh token (`forced`: it should skip its cache), then hand its answer to
        /// ``strategyEnded(_:receivedAt:epoch:)``, or its failure to
        /// ``strategyCallFailed(_:epoch:retry:sleepsUnderLock:random:now:elapsed:)``.
        case call(String?, forced: Bool)
        /// Sleep for this delay under the store's lock, then call ``attemptStarting(epoch:at:)`` for attempt `retry` (a
        /// sleep cut short ends the attempts: ``strategyEnded(_:receivedAt:epoch:)`` with
        /// ``TokenRefreshError/cancelled``).
        case sleep(Duration, retry: Int)
        /// Attempts are held back (backoff, `Retry-After`, the breaker): record it, then hand this failure to
        /// ``strategyEnded(_:receivedAt:epoch:)``.
        case blocked(TokenRefreshError)
        /// Write `session` under `condition`, then call ``writeFinished(_:epoch:)``.
        case persist(StoredSession, WriteCondition)
        /// Publish `event`, then carry out `then`.
        case publish(AuthEvent, then: RefreshAction)
        /// A pair another process saved was adopted: say so, then answer the callers with its token.
        case answerAdopted(StoredSession)
        /// Answer the callers with this token (the new pair has been written, or its write failed and is retried).
        case answer(AuthToken)
        /// End the session (memory and store) with `reason`, failing the callers' flight with `error`, then fail with
        /// `failure`.
        case endSession(reason: AuthEvent.SignOutReason, error: TokenRefreshError?, failure: TokenRefreshError)
        /// As ``endSession(reason:error:failure:)`` with `failure` as the error, if a session is held; a session
        /// already gone just reads signed out.
        case endSessionIfHeld(reason: AuthEvent.SignOutReason, failure: TokenRefreshError)
        /// Fail the callers with this error; the session is kept (or already ended).
        case fail(TokenRefreshError)
        /// Another user's pair was adopted outside a flight: forget the refresh task, fail `flight` (its callers asked
        /// for the old user's token) with `failure`, then fail with it.
        case failTakenFlight(RefreshFlight?, failure: TokenRefreshError)
    }

    /// Where the refresh under the lock stands (kept in the ``Flight``).
    enum RefreshStep: Sendable {
        /// Re-reading the store before presenting anything.
        case rereading(seed: String?)
        /// The strategy has `sent` (nil: no refresh token); `previous` is the session it refreshes.
        case presenting(sent: String?, previous: Session?, seed: String?, afterRejection: Bool)
        /// The new pair is being written.
        case persisting(Persisting)
        /// `sent` was rejected: re-reading the store once, for a pair rotated elsewhere.
        case rereadingAfterRejection(sent: String)
        /// The write lost to a newer pair in the store: re-reading it.
        case rereadingAfterConflict
        /// Another process held the store's lock past its timeout (`failure`): re-reading the store without it, to
        /// use a pair that process may have saved. Nothing is presented without the lock.
        case rereadingAfterLockTimeout(failure: TokenRefreshError)
    }

    /// The pair being written and what it becomes once written.
    struct Persisting: Sendable {
        var token: AuthToken
        var userID: String?
        var generation: UInt64
        /// The session's identity: the refreshed session's, or a new one for a new session.
        var sessionID: String?
        /// Whether the pair is another user's (a provider that switched users by itself).
        var switchedUser: Bool
        var startsSession: Bool
        var profile: AuthUser?
    }

    /// The actor holds the store's lock for the flight started under `epoch`.
    mutating func lockTaken(epoch: UInt64, seed: String?) -> RefreshAction {
        guard isRunning(epoch) else { return .fail(.signedOut) }
        guard seed == nil else { return present(seed: seed, afterRejection: false) }
        flight?.step = .rereading(seed: nil)
        return .readStore
    }

    /// The store's lock could not be taken in time (another process may hang in its refresh): never refresh without
    /// it. Re-read the store, and use a still-valid pair found there; otherwise fail transiently, keeping the session.
    mutating func lockTimedOut(_ error: PersistenceError, epoch: UInt64) -> RefreshAction {
        guard isRunning(epoch) else { return .fail(.signedOut) }
        flight?.step = .rereadingAfterLockTimeout(failure: TokenRefreshError.transient.with(underlying: error))
        return .readStore
    }

    /// The store answered `read` (taken at wall time `now`).
    mutating func storeRead(_ read: TokenStoreRead, epoch: UInt64, now: Date) -> RefreshAction {
        guard isRunning(epoch), let step = flight?.step else { return .fail(.signedOut) }
        switch (step, read) {
        case (.rereading, .found(let stored)):
            guard shouldAdopt(stored) else {
                // Another session stored with a refresh token rejected before: the held one is over all the same,
                // and its refresh token is never presented.
                if let held = session, Self.isAnotherSession(stored, than: held) {
                    return .endSession(reason: .removedElsewhere, error: .sessionChanged, failure: .sessionChanged)
                }
                return present(seed: nil, afterRejection: false)
            }
            return adoptOrPresent(stored, now: now)
        case (.rereading, .absent):
            // Removed by another process: the session ended there. That process may have rotated the refresh token
            // first, also one a pending pair kept from the stored pair: it is never presented.
            guard session?.refreshTokenIsShared == true, storedGeneration != nil else {
                return present(seed: nil, afterRejection: false)
            }
            return .endSession(reason: .removedElsewhere, error: nil, failure: .signedOut)
        case (.rereading, .unavailable(let error)):
            // The stored pair is the truth another process may have rotated (ours may be consumed), and a new pair
            // could not be kept there either: present nothing, keep the session. Only a refresh token held in memory
            // alone (never stored, as a rotated pair whose write failed) has no stored truth to miss; a pending pair
            // that kept the stored refresh token has.
            let failure = TokenRefreshError.storageUnavailable.with(underlying: error)
            let memoryOnly = session.map { !$0.refreshTokenIsShared } ?? false
            let next: RefreshAction = memoryOnly ? present(seed: nil, afterRejection: false) : .fail(failure)
            return .publish(.storageUnavailable(failure), then: next)
        case (.rereadingAfterRejection(let sent), .found(let stored)):
            // Only a pair stored since this client last knew the store is another process's rotation. The pair it
            // knew is older than the one it held (a pending pair whose write failed): its refresh token was rotated
            // away by this client, and presenting it is reuse.
            guard shouldAdopt(stored), let storedRefresh = stored.token.refreshToken, storedRefresh != sent,
                !rejected.contains(storedRefresh)
            else { return endAfterRejection() }
            return adoptOrPresent(stored, now: now, presenting: storedRefresh)
        case (.rereadingAfterRejection, _):
            return endAfterRejection()
        case (.rereadingAfterConflict, .found(let stored)):
            return answer(adopting: stored)
        case (.rereadingAfterConflict, .absent):
            return .endSession(reason: .removedElsewhere, error: nil, failure: .signedOut)
        case (.rereadingAfterConflict, .unavailable(let error)):
            return .fail(TokenRefreshError.storageUnavailable.with(underlying: error))
        case (.rereadingAfterLockTimeout(let failure), .found(let stored)):
            guard shouldAdopt(stored), !stored.token.isExpired(at: now, policy: configuration.expiryPolicy) else {
                return .publish(.refreshFailed(failure, userID: session?.userID), then: .fail(failure))
            }
            return answer(adopting: stored)
        case (.rereadingAfterLockTimeout(let failure), _):
            // The session is kept; while its token is still valid, validToken() callers get it.
            return .publish(.refreshFailed(failure, userID: session?.userID), then: .fail(failure))
        case (.presenting, _), (.persisting, _):
            return .fail(.signedOut)
        }
    }

    /// The strategy's call for the flight started under `epoch` ended with `outcome` (its answer received at
    /// `receivedAt`): ``strategyAnswered(_:receivedAt:epoch:)`` (the breaker forgets the transient failures before
    /// it, ``attemptSucceeded()``) or ``strategyFailed(_:epoch:)``.
    mutating func strategyEnded(
        _ outcome: Result<TokenResponse, TokenRefreshError>, receivedAt: Date, epoch: UInt64
    ) -> RefreshAction {
        switch outcome {
        case .success(let response):
            attemptSucceeded()
            return strategyAnswered(response, receivedAt: receivedAt, epoch: epoch)
        case .failure(let failure):
            return strategyFailed(failure, epoch: epoch)
        }
    }

    /// The attempt number a ``RefreshAction/present(_:retriesOutsideLock:)`` starts at: the flight's `retry` when its
    /// retries wait with the store's lock released (the count goes on across takes of the lock), else 0.
    static func firstRetry(after retry: Int, retriesOutsideLock: Bool) -> Int { retriesOutsideLock ? retry : 0 }

    /// The strategy answered `response`, received at wall time `receivedAt`: write the new pair before anyone sees
    /// it (not the callers, not the snapshot).
    mutating func strategyAnswered(_ response: TokenResponse, receivedAt: Date, epoch: UInt64) -> RefreshAction {
        guard isRunning(epoch), case .presenting(let sent, let previous, _, _) = flight?.step else {
            return .fail(.signedOut)
        }
        let token = response.token(receivedAt: receivedAt, keeping: sent)
        // A provider that switched users by itself answers with the new user's token: a new session, never the old
        // user's refreshed one.
        let switchedUser = Self.subjectChanged(from: previous, to: token, responseUserID: response.userID)
        let keptUserID = switchedUser ? nil : previous?.userID
        let userID = response.userID ?? keptUserID ?? token.claims?.subject ?? response.user?.id
        // A refresh keeps the session's identity; a pair that starts a session (or another user's) is a new one.
        let sessionID = switchedUser || previous == nil ? StoredSession.newSessionID() : previous?.sessionID
        let persisting = Persisting(
            token: token, userID: userID, generation: nextGeneration(after: previous), sessionID: sessionID,
            switchedUser: switchedUser, startsSession: previous == nil, profile: response.user)
        flight?.step = .persisting(persisting)
        let stored = StoredSession(
            token: token, userID: userID, generation: persisting.generation, sessionID: sessionID)
        return .persist(stored, writeCondition)
    }

    /// The strategy failed with `failure` (after its retries).
    mutating func strategyFailed(_ failure: TokenRefreshError, epoch: UInt64) -> RefreshAction {
        guard let running = flight, case .presenting(let sent, _, let seed, let afterRejection) = running.step,
            running.epoch == epoch
        else { return .fail(failure) }
        let current = isCurrent(epoch)
        switch failure {
        case .refreshTokenRejected where afterRejection:
            if let sent { rejected.insert(sent) }
            return current ? endAfterRejection() : .fail(.signedOut)
        case .refreshTokenRejected:
            guard let sent else {
                // A strategy without a refresh token (an SDK, client credentials) was told the session is over.
                guard current else { return .fail(.signedOut) }
                return .endSessionIfHeld(reason: .revoked, failure: .refreshTokenRejected)
            }
            rejected.insert(sent)
            guard current else { return .fail(.signedOut) }
            guard seed == nil else { return .fail(.refreshTokenRejected) }
            // Another process may have rotated meanwhile: re-read the store once before ending the session.
            flight?.step = .rereadingAfterRejection(sent: sent)
            return .readStore
        case .sessionInvalidated where current && !afterRejection:
            // The server says the session is gone: after a refused request it expired in use; at a launch or
            // on-demand check it was found invalid.
            if let sent { rejected.insert(sent) }
            let reason: AuthEvent.SignOutReason = running.followsRefusal ? .sessionExpired : .invalidatedOnServer
            return .endSessionIfHeld(reason: reason, failure: .sessionInvalidated)
        case .signedOut where sent == nil && current && !afterRejection:
            // The token provider (an SDK) reports that it has no session.
            return .endSessionIfHeld(reason: .providerSignedOut, failure: .signedOut)
        default:
            return .fail(failure)
        }
    }

    /// The write of the new pair ended: `nil` when it landed, else the store's error.
    mutating func writeFinished(_ error: PersistenceError?, epoch: UInt64, elapsed: Duration) -> RefreshAction {
        guard case .persisting(let pair) = flight?.step, flight?.epoch == epoch else { return .fail(.signedOut) }
        if error == .conflict {
            // Someone stored a newer session meanwhile: it wins, and this refresh writes nothing.
            flight?.step = .rereadingAfterConflict
            return .readStore
        }
        // Signed out or a new session while writing: this refresh is void.
        guard isCurrent(epoch) else { return .fail(.signedOut) }
        let persisted = error == nil
        if pair.switchedUser {
            // The old session's callers asked for its token: they fail, and the new user's session starts afresh.
            switchedUser(
                pair.token, userID: pair.userID, generation: pair.generation, sessionID: pair.sessionID,
                persisted: persisted, elapsed: elapsed, profile: pair.profile)
        } else {
            // A failed write keeps the pair in memory (the rotated refresh token is never dropped) and is retried.
            refreshed(
                pair.token, userID: pair.userID, generation: pair.generation, sessionID: pair.sessionID,
                persisted: persisted, elapsed: elapsed, startsSession: pair.startsSession, profile: pair.profile)
        }
        let fingerprint = pair.token.fingerprint
        let news: AuthEvent =
            pair.startsSession || pair.switchedUser
            ? .signedIn(userID: pair.userID, tokenFingerprint: fingerprint)
            : .tokenRefreshed(userID: pair.userID, tokenFingerprint: fingerprint)
        let answer: RefreshAction = .publish(
            news, then: pair.switchedUser ? .fail(.sessionChanged) : .answer(pair.token))
        guard let error else { return answer }
        let failure = TokenRefreshError.storageUnavailable.with(underlying: error)
        return .publish(.persistenceFailed(failure, tokenFingerprint: fingerprint), then: answer)
    }

    // MARK: - Helpers

    /// Whether the flight started under `epoch` is still the current one.
    private func isRunning(_ epoch: UInt64) -> Bool {
        isCurrent(epoch) && flight?.epoch == epoch
    }

    /// Presents the seed, or the session's refresh token (the empty string for a strategy without one).
    private mutating func present(seed: String?, afterRejection: Bool) -> RefreshAction {
        let current = session
        guard let refreshToken = seed ?? current?.token.refreshToken ?? (requiresRefreshToken ? nil : "") else {
            return .fail(current == nil ? .signedOut : .missingRefreshToken)
        }
        if rejected.contains(refreshToken) { return .fail(.refreshTokenRejected) }
        let sent = refreshToken.isEmpty ? nil : refreshToken
        flight?.step = .presenting(sent: sent, previous: current, seed: seed, afterRejection: afterRejection)
        return .present(sent, retriesOutsideLock: !afterRejection)
    }

    /// Adopts `stored` (saved by another process) and answers with it. Another user's pair is never the answer to a
    /// refresh made for this one.
    private mutating func answer(adopting stored: StoredSession) -> RefreshAction {
        adopt(stored).switchedUser ? .fail(.sessionChanged) : .answerAdopted(stored)
    }

    /// Adopts `stored` (saved by another process): answers with it while it is fresh, else presents its refresh
    /// token (`presenting`, after a rejection) or goes on with the refresh. Another user's pair is never the answer
    /// to a refresh made for this one.
    private mutating func adoptOrPresent(_ stored: StoredSession, now: Date, presenting: String? = nil) -> RefreshAction
    {
        if !stored.token.willExpireSoon(at: now, policy: configuration.expiryPolicy) { return answer(adopting: stored) }
        if adopt(stored).switchedUser { return .fail(.sessionChanged) }
        guard let presenting else { return present(seed: nil, afterRejection: false) }
        let adopted = session
        flight?.step = .presenting(sent: presenting, previous: adopted, seed: nil, afterRejection: true)
        return .present(presenting, retriesOutsideLock: false)
    }

    /// The session's refresh token was rejected and nothing newer is stored: the session ends, revoked.
    private func endAfterRejection() -> RefreshAction {
        .endSession(reason: .revoked, error: .refreshTokenRejected, failure: .refreshTokenRejected)
    }

    /// Whether `token`, a refresh's answer, is another user's than `previous`: both tokens' subjects (`sub`) known
    /// and different, or, when either token has none, both user IDs (the session's and the response's) known and
    /// different. Subjects are compared with subjects and user IDs with user IDs only, as an app's user ID need not
    /// be the token's subject.
    static func subjectChanged(from previous: Session?, to token: AuthToken, responseUserID: String?) -> Bool {
        guard let previous else { return false }
        if let before = previous.token.claims?.subject, let after = token.claims?.subject {
            return before != after
        }
        if let before = previous.userID, let after = responseUserID { return before != after }
        return false
    }

    // MARK: - Taking up a stored pair, and a refreshed one

    /// Adopts a pair another process stored. Returns whether it is another session's (another identity, or both
    /// user IDs known and different): then the session has changed, and a refresh made for the old one must not
    /// answer with it, nor write anything: ``epoch`` is bumped and the flight is taken away (returned, for the actor
    /// to fail with ``TokenRefreshError/sessionChanged``). A pair with the held session's identity is that session,
    /// rotated elsewhere.
    private mutating func adopt(
        _ stored: StoredSession, replacing: Bool = false
    ) -> (switchedUser: Bool, flight: RefreshFlight?) {
        let previousUser = session?.userID
        let otherUser = previousUser != nil && stored.userID != nil && previousUser != stored.userID
        let switchedUser = session.map { otherUser || Self.isAnotherSession(stored, than: $0) } ?? false
        var takenFlight: RefreshFlight?
        if switchedUser || (replacing && session != nil) {
            epoch &+= 1
            takenFlight = flight?.flight
            flight = nil
        }
        if replacing && session != nil {
            // The held session ends here (the one reset of an ended session, then this one starts).
            lineage.reset()
            profile = nil
            isOffline = false
        }
        pairStored()
        if session == nil || switchedUser { lineage.reset() }
        if profile?.id != stored.userID { profile = nil }
        lineage.record(stored.token)
        state = state.entering(Session(stored, persisted: true))
        noteStored(stored)
        authState = .signedIn(userID: stored.userID)
        return (switchedUser, takenFlight)
    }

    /// Whether `stored` is another session than `held`: its identity differs. Generations are not compared: a
    /// session signed in after a sign-out may be stored at a generation the held one had.
    static func isAnotherSession(_ stored: StoredSession, than held: Session) -> Bool {
        stored.sessionID != held.sessionID
    }

    /// Whether a re-read pair is worth adopting: newer than ours or another session (or we have none), and not
    /// rejected before.
    func shouldAdopt(_ stored: StoredSession) -> Bool {
        guard stored.generation != storedGeneration || stored.sessionID != storedSessionID || session == nil else {
            return false
        }
        if let refreshToken = stored.token.refreshToken, rejected.contains(refreshToken) { return false }
        return true
    }

    /// A refresh produced `token`; `persisted` says whether its write landed. `startsSession` when there was no
    /// session before (a seed, or a strategy without refresh tokens): the seed and the access token the caller held
    /// with it then count as the new session's.
    private mutating func refreshed(
        _ token: AuthToken, userID: String?, generation: UInt64, sessionID: String?, persisted: Bool,
        elapsed: Duration,
        startsSession: Bool = false, profile newProfile: AuthUser? = nil
    ) {
        if startsSession {
            lineage.reset()
            if let seed = flight?.seed { lineage.record(refreshToken: seed) }
            if let paired = flight?.pairedAccessToken { lineage.record(accessToken: paired) }
        }
        lineage.record(token)
        if let newProfile, newProfile.id == (userID ?? newProfile.id) {
            profile = newProfile
        } else if profile?.id != userID {
            profile = nil
        }
        // A pair kept in memory that kept the refresh token of a stored one: the store (and any process sharing it)
        // still holds that refresh token.
        let keptStoredRefreshToken =
            !persisted && !startsSession && token.refreshToken != nil
            && session.map { $0.refreshTokenIsShared && $0.token.refreshToken == token.refreshToken } == true
        state = state.entering(
            Session(
                token: token, userID: userID, generation: generation, sessionID: sessionID, persisted: persisted,
                keptStoredRefreshToken: keptStoredRefreshToken))
        isOffline = false
        pairStored()  // the new pair overwrites the ended session (now, or when its write is retried)
        if persisted {
            storedGeneration = generation
            storedSessionID = sessionID
        } else {
            queuePendingPair(elapsed: elapsed)
        }
        authState = .signedIn(userID: userID)
    }

    /// A refresh produced another user's `token` (a provider that switched users by itself): the old session ends
    /// and the new one starts with this pair. Bumps ``epoch`` (work started for the old session changes nothing),
    /// forgets the old session's tokens and profile, and takes the flight away (its callers asked for the old
    /// session's token; the actor fails them).
    private mutating func switchedUser(
        _ token: AuthToken, userID: String?, generation: UInt64, sessionID: String?, persisted: Bool,
        elapsed: Duration, profile newProfile: AuthUser?
    ) {
        epoch &+= 1
        flight = nil
        lineage.reset()
        profile = nil
        refreshed(
            token, userID: userID, generation: generation, sessionID: sessionID, persisted: persisted,
            elapsed: elapsed, profile: newProfile)
    }

    // MARK: - A write that met a newer pair

    /// The store's answer (`read`) after a retried write of the session of `epoch` met a newer pair: adopt it (another
    /// user's pair takes the flight away: ``RefreshAction/failTakenFlight(_:failure:)``), or end the session removed
    /// elsewhere.
    mutating func conflictRead(_ read: TokenStoreRead, epoch: UInt64) -> RefreshAction {
        guard isCurrent(epoch) else { return .fail(.signedOut) }
        switch read {
        case .found(let stored):
            // Another user's pair is never the answer to a refresh made for this one.
            let (switchedUser, flight) = adopt(stored)
            return switchedUser ? .failTakenFlight(flight, failure: .sessionChanged) : .answerAdopted(stored)
        case .absent:
            return .endSession(reason: .removedElsewhere, error: nil, failure: .signedOut)
        case .unavailable(let error):
            return .fail(TokenRefreshError.storageUnavailable.with(underlying: error))
        }
    }

    // MARK: - Another audience's session

    /// Another audience's client stored a new session; the store answered `read`, asked under `epoch`. `overtaken`:
    /// another audience's client started or ended a session since the read was asked. A session held here ends
    /// first (nothing of it carries over) and the stored one starts.
    ///
    /// A read out of date, or that found nothing newer, does nothing. A stored session taken up is announced
    /// (``AuthEvent/Kind/sessionRestored``); one that replaced the session held also makes its refresh void (its
    /// callers asked for the ended session's token: they fail with ``TokenRefreshError/sessionChanged``).
    mutating func audienceSessionRead(
        _ read: TokenStoreRead, epoch: UInt64, overtaken: Bool, now: Date
    ) -> Action {
        guard isCurrent(epoch), !overtaken else { return Action() }
        guard loaded else { return storeRead(atLoad: read, now: now) }
        guard case .found(let stored) = read,
            stored.generation != session?.generation || stored.sessionID != session?.sessionID
        else { return Action() }
        let restored = AuthEvent.sessionRestored(userID: stored.userID, tokenFingerprint: nil)
        guard session != nil else {
            _ = adopt(stored)
            return Action(events: [restored])
        }
        let voided = adopt(stored, replacing: true).flight
        return Action(callers: .failFlight(voided, .sessionChanged), events: [restored])
    }
}
