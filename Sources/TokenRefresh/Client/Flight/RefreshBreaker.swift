/// The breaker the session machine holds (see ``SessionMachine/breaker``). A value of its own, like
/// ``SessionLineage`` and ``RejectedRefreshTokens``: the machine's transitions consult and update it.
extension SessionMachine {
    /// Rate control: backoff after transient failures, `Retry-After`, and the breaker's window of attempts.
    ///
    /// The window counts refresh requests sent to a server, nothing else: a check (at launch, after
    /// `networkRestored()`, an SDK's change callback) and a call a provider may answer from its cache are not
    /// counted (`counting: false`), and an attempt that could not reach the server is forgotten
    /// (``forgetAttempt(startedAt:)``). Backoff and `Retry-After` hold every attempt back.
    struct Breaker: Sendable {
        /// When recent counted attempts started, by the injected clock.
        private(set) var attemptTimes: [Duration] = []
        /// No attempt before this instant of the injected clock.
        private(set) var retryNotBefore: Duration?
        private(set) var lastTransientError: TokenRefreshError?
        private(set) var consecutiveTransientFailures = 0
        /// When recent attempts that a server answered with a transient failure started (see
        /// ``TokenRefreshClient/Backoff/failureBudget``), and the instant before which the spent budget holds
        /// attempts back (`networkRestored()` does not clear it: the server failed, not the network).
        private(set) var serverFailureTimes: [Duration] = []
        private(set) var budgetHoldsUntil: Duration?

        /// The error that holds a new attempt back at `elapsed`, if any: backoff, `Retry-After`, or (for an attempt
        /// the window `counting`s) `maximum` attempts already in the `window` before it.
        func blocked(
            at elapsed: Duration, maximum: Int, window: Duration, counting: Bool = true
        ) -> TokenRefreshError? {
            if let budgetHoldsUntil, elapsed < budgetHoldsUntil {
                return (lastTransientError ?? .transient).with(retryAfter: budgetHoldsUntil - elapsed)
            }
            if let retryNotBefore, elapsed < retryNotBefore {
                return (lastTransientError ?? .transient).with(retryAfter: retryNotBefore - elapsed)
            }
            guard counting else { return nil }
            var inWindow = 0
            var oldest: Duration?
            for time in attemptTimes where elapsed - time < window {
                inWindow += 1
                oldest = min(oldest ?? time, time)
            }
            guard inWindow >= maximum, let oldest else { return nil }
            return TokenRefreshError.rateLimited.with(retryAfter: oldest + window - elapsed)
        }

        /// An attempt is about to start at `elapsed`: the error that holds it back (see
        /// ``blocked(at:maximum:window:counting:)``), or `nil`, and then it is counted if `counting` (attempts out of
        /// the `window` are forgotten).
        mutating func admitAttempt(
            at elapsed: Duration, maximum: Int, window: Duration, counting: Bool = true
        ) -> TokenRefreshError? {
            if let blocked = blocked(at: elapsed, maximum: maximum, window: window, counting: counting) {
                return blocked
            }
            guard counting else { return nil }
            attemptTimes.removeAll { elapsed - $0 >= window }
            attemptTimes.append(elapsed)
            return nil
        }

        /// The attempt counted at `started` sent nothing (the server could not be reached): it no longer counts.
        mutating func forgetAttempt(startedAt started: Duration) {
            guard let index = attemptTimes.lastIndex(of: started) else { return }
            attemptTimes.remove(at: index)
        }

        mutating func recordSuccess() {
            consecutiveTransientFailures = 0
            serverFailureTimes = []
            budgetHoldsUntil = nil
            clearBackoff()
        }

        /// A transient failure: returns the delay before the next attempt (`Retry-After` or jittered backoff).
        mutating func recordTransientFailure(
            _ failure: TokenRefreshError, backoff: TokenRefreshClient.Backoff, random: Double
        ) -> Duration {
            let delay = failure.retryAfter ?? backoff.delay(attempt: consecutiveTransientFailures, random: random)
            consecutiveTransientFailures += 1
            return delay
        }

        /// A server answered the attempt at `elapsed` with a transient failure: returns whether that spent the
        /// failure budget (attempts are then held back until the oldest of them leaves the budget's window).
        mutating func recordServerFailure(at elapsed: Duration, backoff: TokenRefreshClient.Backoff) -> Bool {
            serverFailureTimes.removeAll { elapsed - $0 >= backoff.failureBudgetWindow }
            serverFailureTimes.append(elapsed)
            guard serverFailureTimes.count >= max(1, backoff.failureBudget), let oldest = serverFailureTimes.first
            else { return false }
            budgetHoldsUntil = oldest + backoff.failureBudgetWindow
            return true
        }

        /// No retry now: hold attempts back until `until`.
        mutating func holdBack(until: Duration, after failure: TokenRefreshError) {
            retryNotBefore = until
            lastTransientError = failure
        }

        /// Forgets the backoff (the network is back, or a refresh succeeded).
        mutating func clearBackoff() {
            retryNotBefore = nil
            lastTransientError = nil
        }
    }
}
