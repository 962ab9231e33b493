import AuthToken
import Foundation
import Persistence

/// The decisions around one call of the strategy, a refresh token refreshed on its own, and a conflicting write:
/// each event returns the one action the actor carries out.
extension SessionMachine {
    /// A call of the strategy for the flight started under `epoch` is about to start at `elapsed`: made with the
    /// refresh token presented, or held back. Only an attempt that sends a refresh request to a server is counted
    /// (``Flight/sendsRefreshRequest``).
    mutating func attemptStarting(epoch: UInt64, at elapsed: Duration) -> RefreshAction {
        guard isCurrent(epoch), let running = flight, case .presenting(let sent, _, _, _) = running.step else {
            return .fail(.signedOut)
        }
        let counted = running.sendsRefreshRequest
        if let blocked = admitAttempt(at: elapsed, counting: counted) { return .blocked(blocked) }
        flight?.countedAttemptStart = counted ? elapsed : nil
        return .call(sent, forced: running.forced)
    }

    /// The strategy failed with `failure` on attempt `retry` of the flight started under `epoch`. A transient failure
    /// is retried (under the lock, or with it released when `sleepsUnderLock` is false: the plan is then left in the
    /// flight, see ``flightEnded(_:_:epoch:)``) or given up; `random` is drawn only for a transient failure. A failure
    /// given up is published (unless quiet: a rejection, a cancellation) and decided by ``strategyFailed(_:epoch:)``.
    mutating func strategyCallFailed(
        _ failure: TokenRefreshError, epoch: UInt64, retry: Int, sleepsUnderLock: Bool, random: () -> Double,
        now: Date, elapsed: Duration
    ) -> RefreshAction {
        guard isCurrent(epoch) else { return .fail(.signedOut) }
        if let started = flight?.countedAttemptStart, ErrorClassification.sentNothing(failure) {
            breaker.forgetAttempt(startedAt: started)  // the server was never reached
        }
        flight?.countedAttemptStart = nil
        let event = AuthEvent.refreshFailed(failure, userID: session?.userID)
        guard failure.isTransient else {
            let quiet = failure == .refreshTokenRejected || failure == .cancelled
            if quiet { return strategyFailed(failure, epoch: epoch) }
            return .publish(event, then: strategyFailed(failure, epoch: epoch))
        }
        let plan = attemptFailed(failure, retry: retry, random: random(), now: now, elapsed: elapsed)
        guard let delay = plan else { return .publish(event, then: strategyFailed(failure, epoch: epoch)) }
        guard sleepsUnderLock else {
            flight?.retryOutsideLock = (retry + 1, delay)  // see flightEnded(_:_:epoch:)
            return strategyFailed(failure, epoch: epoch)
        }
        return .sleep(delay, retry: retry + 1)
    }

    // MARK: - The flight's attempts under the store's lock

    /// Taking the store's exclusive access (or the refresh under it) for the flight started under `epoch` failed
    /// with `error`. A lock that was not free in time is handled by ``lockTimedOut(_:epoch:)``; any other error fails
    /// the callers, classified.
    mutating func exclusiveAccessFailed(_ error: any Error, epoch: UInt64) -> RefreshAction {
        guard let persistence = error as? PersistenceError, persistence == .lockTimedOut else {
            return .fail(ErrorClassification.classify(error))
        }
        return lockTimedOut(persistence, epoch: epoch)
    }

    /// An attempt of the refresh `flight`, started under `epoch`, ended with `result`; the epoch guard is checked once,
    /// here. A transient failure planned for a retry with the lock released (by
    /// ``strategyCallFailed(_:epoch:retry:sleepsUnderLock:random:now:elapsed:)``, taken and cleared here) is retried
    /// while the flight is current; anything else ends the flight (``flightFinished(_:)``) and answers the callers.
    mutating func flightEnded(
        _ result: Result<AuthToken, TokenRefreshError>, _ flight: RefreshFlight, epoch: UInt64
    ) -> Action {
        let pending = self.flight?.retryOutsideLock
        if case .failure = result { self.flight?.retryOutsideLock = nil }
        if case .failure = result, isCurrent(epoch), self.flight?.epoch == epoch, let pending {
            return Action(callers: .retry(after: pending.delay, retry: pending.retry))
        }
        return Action(callers: .finish(flight, result, forgetTask: flightFinished(flight)))
    }

    /// The refresh `flight` has ended: cleared if it was still the current one (then `true`: its task is forgotten).
    mutating func flightFinished(_ flight: RefreshFlight) -> Bool {
        guard self.flight?.flight === flight else { return false }
        self.flight = nil
        return true
    }

    // MARK: - Refresh tokens that are not the session's

    /// What a caller of a refresh token the session never held does, given the actor's `stateless` refreshes: the
    /// chain's newest pair while it is fresh, the refresh of the chain's newest refresh token in flight, or a refresh
    /// of it.
    func decideStateless(_ refreshToken: String, stateless: StatelessRefreshes, now: Date) -> CallerAction {
        var presented = refreshToken
        if let newest = stateless.newest(after: refreshToken) {
            // Refreshed here before and rotated: the chain's newest pair, or a refresh of its newest refresh token.
            if !newest.willExpireSoon(at: now, policy: configuration.expiryPolicy) { return .token(newest) }
            if let rotated = newest.refreshToken { presented = rotated }
        }
        if let flight = stateless.flight(for: presented) { return .join(flight) }
        return .refreshStatelessly(presented)
    }

    /// A stateless refresh is about to call the strategy at `elapsed`: the error that holds it back, or `nil` when it
    /// is made (and counted by the breaker).
    mutating func statelessAttemptStarting(at elapsed: Duration) -> TokenRefreshError? {
        admitAttempt(at: elapsed)
    }

    /// Before calling the strategy at `elapsed`: the error that holds the attempt back, or `nil` (and the breaker
    /// counts the attempt if `counting`).
    private mutating func admitAttempt(at elapsed: Duration, counting: Bool = true) -> TokenRefreshError? {
        breaker.admitAttempt(
            at: elapsed, maximum: configuration.maximumRefreshes, window: configuration.breakerWindow,
            counting: counting)
    }

    /// A stateless refresh of `refreshToken`, counted by the breaker at `started`, failed with `failure`: a rejected
    /// refresh token is never sent again, and an attempt that could not reach the server no longer counts. The
    /// callers then fail with `failure` (nothing is published: the session is not involved).
    mutating func statelessAttemptFailed(
        _ failure: TokenRefreshError, refreshToken: String, startedAt started: Duration? = nil
    ) {
        if let started, ErrorClassification.sentNothing(failure) { breaker.forgetAttempt(startedAt: started) }
        if failure == .refreshTokenRejected { rejected.insert(refreshToken) }
    }
}
