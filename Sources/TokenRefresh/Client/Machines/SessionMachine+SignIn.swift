import AuthToken
import Persistence

/// Starting a session (a sign-in, or a token obtained elsewhere) as an event that returns one action, and the end of
/// its save as another: the rules for a save that was overtaken, failed, or may not be kept in memory only.
extension SessionMachine {
    /// What the actor does to start a session (``signingIn(_:userID:stateBefore:profile:)``).
    struct SignInAction: Sendable {
        /// The flight to fail with ``TokenRefreshError/sessionChanged``: its callers asked for the old session's token.
        let flight: RefreshFlight?
        /// The pair to save (unconditionally), once every older write of this client has landed.
        let stored: StoredSession
        /// The epoch the new session lives under.
        let epoch: UInt64
        /// What the new session replaced, to roll back to if it cannot be stored.
        let replaced: Replaced
    }

    /// A session starts with `token`: the one reset for a new session (``beginSession(_:stateBefore:)``), and the
    /// profile the provider supplied, if any.
    ///
    /// `sessionID` is the new session's identity (a new one by default); a test passes its own.
    mutating func signingIn(
        _ token: AuthToken, userID: String?, stateBefore: AuthState, profile: AuthUser?,
        sessionID: String? = StoredSession.newSessionID()
    ) -> SignInAction {
        let stored = StoredSession(
            token: token, userID: userID, generation: nextGeneration(after: session), sessionID: sessionID)
        let (replaced, epoch, flight) = beginSession(stored, stateBefore: stateBefore)
        _ = profileSupplied(profile)
        return SignInAction(flight: flight, stored: stored, epoch: epoch, replaced: replaced)
    }

    /// Older writes have landed for `signIn`: save its pair above what is stored, or skip it when a sign-out or
    /// another sign-in came first (its own write then decides what is stored).
    func signInWriteTurn(_ signIn: SignInAction) -> Action {
        Action(store: isCurrent(signIn.epoch) ? .saveAboveStored(signIn.stored) : .none)
    }

    /// The sign-in's save ended: `.success` with the generation it was placed at (above one stored elsewhere
    /// meanwhile) when it landed, `nil` when it was skipped, else the store's error. The session takes that generation,
    /// so its next write is fenced by it; the action's events are published, and the sign-in answers with the new
    /// token or fails.
    mutating func signInWriteFinished(
        _ written: Result<UInt64?, PersistenceError>?, _ signIn: SignInAction, elapsed: Duration
    ) -> Action {
        let fingerprint = signIn.stored.token.fingerprint
        let signedIn = AuthEvent.signedIn(userID: signIn.stored.userID, tokenFingerprint: fingerprint)
        let persistenceFailed = { (failure: TokenRefreshError) in
            AuthEvent.persistenceFailed(failure, tokenFingerprint: fingerprint)
        }
        let outcome = written?.mapError { TokenRefreshError.storageUnavailable.with(underlying: $0) }
        switch (outcome, isCurrent(signIn.epoch)) {
        case (.success(let generation?)?, true):
            sessionStored(placedAt: generation)
            return Action(events: [signedIn])
        case (nil, _), (.success?, _):
            // Signed out (or signed in again) before this session was stored, or while its write was landing: the
            // later call's removal or save comes after it, so the session is over and this sign-in says so.
            return Action(callers: .fail(.signedOut))
        case (.failure(let failure)?, true) where !configuration.allowsMemoryOnlySessions:
            // A session that is never stored is lost at the next launch: say so now, and keep what was there
            // before (the previous session, still in the store, or none).
            rollBack(signIn.replaced)
            return Action(callers: .fail(failure), events: [persistenceFailed(failure)])
        case (.failure(let failure)?, true):
            keepRemovals(after: signIn.replaced)
            queuePendingPair(elapsed: elapsed)  // written again after the persist retry interval
            return Action(events: [persistenceFailed(failure), signedIn])
        case (.failure(let failure)?, false):
            return Action(events: [persistenceFailed(failure), signedIn])  // the later call's session is held
        }
    }

    // MARK: - The steps of a sign-in

    /// What a session start replaced, to roll it back if the new session cannot be stored.
    struct Replaced: Sendable {
        /// The machine's state before: the store unread, no session, or the session held (with its profile).
        let held: State
        let state: AuthState
        let lineage: SessionLineage
    }

    /// Starts a session with `started` (not stored yet): the one reset for a new session. Returns what it replaced,
    /// the epoch the session lives under, and the flight to resolve with the new token.
    private mutating func beginSession(
        _ started: StoredSession, stateBefore: AuthState
    ) -> (replaced: Replaced, epoch: UInt64, flight: RefreshFlight?) {
        let replaced = Replaced(held: state, state: stateBefore, lineage: lineage)
        let userID = started.userID
        epoch &+= 1
        state = state.entering(Session(started, persisted: false))
        lineage.reset()
        lineage.record(started.token)
        isOffline = false
        breaker = Breaker()
        let flight = self.flight?.flight
        self.flight = nil
        profile = profile(keptFor: userID)
        authState = .signedIn(userID: userID)
        return (replaced, epoch, flight)
    }

    /// The new session (still the current one) was stored at `generation`.
    private mutating func sessionStored(placedAt generation: UInt64) {
        guard var session else { return }
        session.persisted = true
        session.generation = max(session.generation, generation)
        inStore = StoredKey(session)
        pairStored()
        state = state.entering(session)
    }

    /// The new session under `epoch` could not be stored and memory-only sessions are not allowed: go back to
    /// what was there before.
    private mutating func rollBack(_ replaced: Replaced) {
        epoch &+= 1
        // The ended session's removal still has to happen: the new session never reached the store.
        keepRemovals(after: replaced)
        // The state before comes back with its profile; the refresh taken at the start stays taken.
        var restored = replaced.held
        restored.context = state.context
        restored.context.profile = replaced.held.context.profile
        state = restored
        lineage = replaced.lineage
        switch (replaced.held.session, replaced.state.hasSession) {
        case (_?, true): authState = replaced.state
        case (let session?, false): authState = .signedIn(userID: session.userID)
        case (nil, _): authState = .signedOut
        }
    }
}
