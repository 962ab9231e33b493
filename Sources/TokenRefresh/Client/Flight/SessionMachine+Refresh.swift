import AuthToken
import Foundation
import Persistence

/// The session's side of the shared refresh: the one entry for the flight's events, and the session changes a flight
/// asks for.
///
/// The actor takes the store's lock and hands each thing that happens in the refresh to
/// ``flightEvent(_:epoch:now:elapsed:random:)``: the one place where the event is checked against the epoch the
/// refresh started under (rule 6: after a sign-out or a newer session the answer is a failure, and nothing is
/// written). The flight's own rules live in ``FlightMachine``; what its answer asks of the session (adopt a pair
/// another process stored, record the refreshed pair, remember a rejected refresh token, the breaker's part of an
/// attempt) is applied here.
extension SessionMachine {
    /// `event` happened in the refresh started under `epoch`, at wall time `now` (`elapsed` on the injected clock):
    /// what the actor does next. An event of another epoch, or of a flight no longer current, fails the callers
    /// (``TokenRefreshError/signedOut``) and changes nothing. `random` is drawn only to plan a transient failure's
    /// retry.
    mutating func flightEvent(
        _ event: FlightMachine.Event, epoch: UInt64, now: Date, elapsed: Duration, random: () -> Double = { 0.5 }
    ) -> FlightMachine.Action {
        guard isCurrent(epoch), var running = flight, running.epoch == epoch else { return .failure(.signedOut) }
        var action = running.receive(event, in: self, now: now, elapsed: elapsed)
        flight = running
        for step in action.session { apply(step, now: now, elapsed: elapsed) }
        if let transient = action.transient {
            let delay = attemptFailed(
                transient.failure, retry: transient.retry, random: random(), now: now, elapsed: elapsed)
            action = running.retryPlanned(delay, after: transient.failure, userID: session?.userID)
            flight = running
        }
        if case .call = action.work, let blocked = admitAttempt(at: elapsed, counting: running.sendsRefreshRequest) {
            action.work = .blocked(blocked)
        }
        return action
    }

    /// Applies a session change the flight's step asked for.
    private mutating func apply(_ step: FlightMachine.SessionStep, now: Date, elapsed: Duration) {
        switch step {
        case .adopt(let stored): _ = adopt(stored)
        case .record(let pair, let persisted): refreshed(pair, persisted: persisted, elapsed: elapsed)
        case .reject(let refreshToken): rejected.insert(refreshToken)
        case .attemptSucceeded: attemptSucceeded()
        case .forgetAttempt(let started): breaker.forgetAttempt(startedAt: started)
        case .storedFailuresRead(let read): storedFailuresRead(read, now: now, elapsed: elapsed)
        }
    }

    /// The store's lock could not be taken for the refresh started under `epoch` (or the refresh under it failed)
    /// with `error`. A lock that was not free in time re-reads the store without it
    /// (``FlightMachine/Event/lockTimedOut(_:)``); any other error fails the callers, classified.
    mutating func exclusiveAccessFailed(
        _ error: any Error, epoch: UInt64, now: Date, elapsed: Duration
    ) -> FlightMachine.Action {
        guard let persistence = error as? PersistenceError, persistence == .lockTimedOut else {
            return .failure(ErrorClassification.classify(error))
        }
        return flightEvent(.lockTimedOut(persistence), epoch: epoch, now: now, elapsed: elapsed)
    }

    /// Whether adopting `stored` changes the session: another identity, or both user IDs known and different.
    func switchesUser(to stored: StoredSession) -> Bool {
        let previousUser = session?.userID
        let otherUser = previousUser != nil && stored.userID != nil && previousUser != stored.userID
        return session.map { otherUser || Self.isAnotherSession(stored, than: $0) } ?? false
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

    /// Adopts a pair another process stored. Another session's pair (another identity, or both user IDs known and
    /// different) changes the session: a refresh made for the old one must not answer with it, nor write anything, so
    /// ``epoch`` is bumped and the flight is taken away (returned, for the actor to fail with
    /// ``TokenRefreshError/sessionChanged``). A pair with the held session's identity is that session, rotated
    /// elsewhere.
    private mutating func adopt(_ stored: StoredSession) -> RefreshFlight? {
        let switchedUser = switchesUser(to: stored)
        var takenFlight: RefreshFlight?
        // Another session ends the held one (its tokens are forgotten); without a session held, none are known.
        if switchedUser {
            epoch &+= 1
            takenFlight = flight?.flight
            flight = nil
            lineage.reset()
        }
        pairStored()
        profile = profile(keptFor: stored.userID)
        lineage.record(stored.token)
        state = state.entering(Session(stored, persisted: true))
        noteStored(stored)
        authState = .signedIn(userID: stored.userID)
        return takenFlight
    }

    /// Whether `stored` is another session than `held`: its identity differs. Generations are not compared: a
    /// session signed in after a sign-out may be stored at a generation the held one had.
    static func isAnotherSession(_ stored: StoredSession, than held: Session) -> Bool {
        stored.sessionID != held.sessionID
    }

    /// Whether `stored` is the session the held one replaced: it has the identity known to be stored, while the held
    /// session, another one, was never stored (its sign-in's save failed, or a provider's switch of users). The held
    /// session is the newer: the replaced one (as it was, or refreshed since by another process) is never adopted over
    /// it, and its being in the store does not end the held one.
    func isReplacedByHeldSession(_ stored: StoredSession) -> Bool {
        replacedStoredSession.map { $0.sessionID == stored.sessionID } == true
    }

    /// Whether a re-read pair is worth adopting: newer than ours or another session (or we have none), not the
    /// session the held one replaced (``isReplacedByHeldSession(_:)``), and not rejected before.
    func shouldAdopt(_ stored: StoredSession) -> Bool {
        guard StoredKey(stored) != inStore || session == nil, !isReplacedByHeldSession(stored) else {
            return false
        }
        if let refreshToken = stored.token.refreshToken, rejected.contains(refreshToken) { return false }
        return true
    }

    /// The refreshed `pair` is the session's (`persisted`: its write landed). Another user's pair (a provider that
    /// switched users by itself) ends the old session first: ``epoch`` is bumped (work started for the old session
    /// changes nothing), the old session's tokens and profile are forgotten, and the flight is taken away (its callers
    /// asked for the old session's token; they fail). A pair that starts a session (a seed, or a strategy without
    /// refresh tokens): the seed and the access token the caller held with it then count as the new session's.
    private mutating func refreshed(_ pair: FlightMachine.Persisting, persisted: Bool, elapsed: Duration) {
        let (token, userID, stored) = (pair.stored.token, pair.stored.userID, pair.stored)
        if pair.switchedUser {
            epoch &+= 1
            flight = nil
            profile = nil
            lineage.reset()
        }
        if pair.startsSession {
            lineage.reset()
            if let seed = flight?.seed { lineage.record(refreshToken: seed) }
            if let paired = flight?.pairedAccessToken { lineage.record(accessToken: paired) }
        }
        lineage.record(token)
        // A pair kept in memory that kept the refresh token of a stored one: the store (and any process sharing it)
        // still holds that refresh token.
        let keptStoredRefreshToken =
            !persisted && !pair.startsSession && token.refreshToken != nil
            && session.map { $0.refreshTokenIsShared && $0.token.refreshToken == token.refreshToken } == true
        state = state.entering(
            Session(
                token: token, userID: userID, generation: stored.generation, sessionID: stored.sessionID,
                persisted: persisted, keptStoredRefreshToken: keptStoredRefreshToken))
        // The provider's profile of the user, else the one held while it is still this user's.
        profile = profile(keptFor: userID)
        _ = profileSupplied(pair.profile)
        isOffline = false
        pairStored()  // the new pair overwrites the ended session (now, or when its write is retried)
        if persisted {
            noteStored(stored)
        } else {
            queuePendingPair(elapsed: elapsed)
        }
        authState = .signedIn(userID: userID)
    }

    // MARK: - A write that met a newer pair

    /// The store's answer (`read`) after a retried write of the session of `epoch` met a newer pair, at wall time
    /// `now` (`elapsed` on the injected clock): as in a flight (``FlightMachine/afterConflict(_:_:)``), the newer pair
    /// is adopted (another user's pair takes the flight away: ``FlightMachine/Answer/failTakenFlight(_:_:)``), or the
    /// session ends, removed elsewhere.
    mutating func conflictRead(
        _ read: TokenStoreRead, epoch: UInt64, now: Date, elapsed: Duration
    ) -> FlightMachine.Action {
        guard isCurrent(epoch) else { return .failure(.signedOut) }
        let action = FlightMachine.afterConflict(read, self)
        for step in action.session { apply(step, now: now, elapsed: elapsed) }
        return action
    }

    // MARK: - Another audience's session

    /// Another audience's client stored a new session; the store answered `read`, asked under `epoch`. `overtaken`:
    /// another audience's client started or ended a session since the read was asked. A session held here ends
    /// first (nothing of it carries over) and the stored one starts.
    ///
    /// A read out of date, or that found nothing newer (the session held, at its generation or an older one; the one
    /// known stored while a newer pair is held in memory only; a pair whose refresh token was rejected), does
    /// nothing. A stored session taken up is announced (``AuthEvent/Kind/sessionRestored``); one that replaced the
    /// session held also makes its refresh void (its callers asked for the ended session's token: they fail with
    /// ``TokenRefreshError/sessionChanged``).
    mutating func audienceSessionRead(
        _ read: TokenStoreRead, epoch: UInt64, overtaken: Bool, now: Date
    ) -> Action {
        guard isCurrent(epoch), !overtaken else { return Action() }
        guard loaded else { return storeRead(atLoad: read, now: now) }
        // Judged as a re-read under the lock is (``shouldAdopt(_:)``), and, as this read is not made under it, never
        // the held session at a generation it has passed already (the client's own refresh landed meanwhile).
        guard case .found(let stored) = read, shouldAdopt(stored),
            session.map({ Self.isAnotherSession(stored, than: $0) || stored.generation > $0.generation }) ?? true
        else { return Action() }
        let restored = AuthEvent.sessionRestored(userID: stored.userID, tokenFingerprint: nil)
        // A session held ends by the one reset of an ended session (nothing of it carries over; its refresh is void),
        // announced as the stored session's restore, not as a sign-out; then the stored one is adopted.
        let ended = endingSessionIfHeld(reason: .removedElsewhere, error: .sessionChanged)
        _ = adopt(stored)
        return Action(callers: ended.callers, events: [restored])
    }
}
