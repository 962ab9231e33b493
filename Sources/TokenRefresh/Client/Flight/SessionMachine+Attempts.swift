import AuthToken
import Foundation
import Persistence

/// The decisions around one call of the strategy, a refresh token refreshed on its own, and a conflicting write:
/// each event returns the one action the actor carries out.
extension SessionMachine {
    // MARK: - The end of a flight

    /// An attempt of the refresh `flight`, started under `epoch`, ended with `result`. A transient failure that the
    /// flight plans to retry with the store's lock released (``FlightMachine/takeRetry()``) is retried while the flight
    /// is current; anything else ends the flight (``flightFinished(_:)``) and answers the callers.
    mutating func flightEnded(
        _ result: Result<AuthToken, TokenRefreshError>, _ flight: RefreshFlight, epoch: UInt64
    ) -> Action {
        if case .failure = result, isCurrent(epoch), var running = self.flight, running.epoch == epoch,
            let pending = running.takeRetry()
        {
            self.flight = running
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
            if !newest.token.willExpireSoon(at: now, policy: configuration.expiryPolicy) { return .token(newest.token) }
            presented = newest.refreshToken
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
    mutating func admitAttempt(at elapsed: Duration, counting: Bool = true) -> TokenRefreshError? {
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
