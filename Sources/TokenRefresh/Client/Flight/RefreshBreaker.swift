import Foundation
import Persistence

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
        /// The session's server failures as its store records them (``/Persistence/StoredSession/recentServerFailures``,
        /// counted by every process and replica of the session), as last read or written under the store's lock, on the
        /// injected clock.
        private(set) var storedServerFailures: [Duration] = []
        /// This client's server failures not in that record yet (written when its hold of the store's lock ends).
        private(set) var unstoredServerFailures: [Duration] = []
        /// The stored session the record is written with: as read under the store's lock, in the session's `epoch`.
        private(set) var recordBase: (session: StoredSession, epoch: UInt64)?
        /// The record being written, on the injected clock: it becomes ``storedServerFailures`` once it has landed.
        private var recordBeingWritten: [Duration]?

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
            storedServerFailures = []
            unstoredServerFailures = []
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
        /// The budget counts this client's failures, and the session's (the store's record with this client's failures
        /// not in it yet), whichever holds attempts back longer.
        mutating func recordServerFailure(at elapsed: Duration, backoff: TokenRefreshClient.Backoff) -> Bool {
            serverFailureTimes.removeAll { elapsed - $0 >= backoff.failureBudgetWindow }
            serverFailureTimes.append(elapsed)
            unstoredServerFailures.removeAll { elapsed - $0 >= backoff.failureBudgetWindow }
            unstoredServerFailures.append(elapsed)
            guard let hold = budgetHold(at: elapsed, backoff: backoff) else { return false }
            budgetHoldsUntil = hold
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

        // MARK: - The budget shared through the store

        /// How far ahead of the reader's clock a recorded failure may be (another process's or replica's clock, the
        /// server's time learned apart): a record with a failure further ahead is not plausible, and is ignored.
        static let recordLeeway: TimeInterval = 300

        /// When the budget holds attempts back, at `elapsed`: the later of the holds of this client's failures and of
        /// the session's, or `nil` when neither has spent it.
        func budgetHold(at elapsed: Duration, backoff: TokenRefreshClient.Backoff) -> Duration? {
            let shared = storedServerFailures + unstoredServerFailures
            return [serverFailureTimes, shared].compactMap { Self.hold(of: $0, at: elapsed, backoff: backoff) }.max()
        }

        /// Until when `failures` hold attempts back at `elapsed`: `failureBudget` of them or more in the window hold
        /// them back until enough of them have left it; `nil` when fewer are in it.
        static func hold(
            of failures: [Duration], at elapsed: Duration, backoff: TokenRefreshClient.Backoff
        ) -> Duration? {
            let budget = max(1, backoff.failureBudget)
            let recent = failures.filter { elapsed - $0 < backoff.failureBudgetWindow }.sorted()
            guard recent.count >= budget else { return nil }
            return recent[recent.count - budget] + backoff.failureBudgetWindow
        }

        /// The session `stored`, read under the store's lock in `epoch` at wall time `now` (`elapsed` on the injected
        /// clock), or `nil` when the read found no session of this client's: its record of server failures becomes the
        /// stored part of the budget (and the base of the next record written), and the budget's hold is judged
        /// again.
        mutating func noteStored(
            _ stored: StoredSession?, epoch: UInt64, now: Date, elapsed: Duration, backoff: TokenRefreshClient.Backoff
        ) {
            guard let stored else {
                recordBase = nil
                return
            }
            recordBase = (stored, epoch)
            storedServerFailures = Self.plausible(
                stored.recentServerFailures, now: now, elapsed: elapsed, backoff: backoff)
            budgetHoldsUntil = budgetHold(at: elapsed, backoff: backoff)
        }

        /// A stored record of failure instants on the injected clock (read at wall time `now`, `elapsed`): those in the
        /// budget's window, at most `failureBudget` (the newest). A record holding an instant more than
        /// ``recordLeeway`` ahead of `now` is not plausible: it counts as none.
        static func plausible(
            _ instants: [Date]?, now: Date, elapsed: Duration, backoff: TokenRefreshClient.Backoff
        ) -> [Duration] {
            let window = backoff.failureBudgetWindow
            var times: [Duration] = []
            for instant in instants ?? [] {
                let age = now.timeIntervalSince(instant)
                guard age.isFinite, age >= -recordLeeway else { return [] }
                let time = elapsed - .seconds(age)
                if elapsed - time < window { times.append(time) }
            }
            return Array(times.sorted().suffix(max(1, backoff.failureBudget)))
        }

        /// The record to write with the session at wall time `now` (`elapsed` on the injected clock): the stored
        /// failures and this client's not stored yet, those in the window, at most `failureBudget` (the newest), oldest
        /// first; `nil` when this client has none to add.
        mutating func recordToWrite(now: Date, elapsed: Duration, backoff: TokenRefreshClient.Backoff) -> [Date]? {
            guard !unstoredServerFailures.isEmpty else { return nil }
            let recent = (storedServerFailures + unstoredServerFailures)
                .filter { elapsed - $0 < backoff.failureBudgetWindow }.sorted()
            let record = Array(recent.suffix(max(1, backoff.failureBudget)))
            recordBeingWritten = record
            return record.map { time in
                let (seconds, attoseconds) = (elapsed - time).components
                return now.addingTimeInterval(-(Double(seconds) + Double(attoseconds) / 1e18))
            }
        }

        /// The record's write ended (`landed` or not): a record that landed is the stored part of the budget now.
        /// The base is forgotten either way: the next record is written with the session as read under the next hold
        /// of the lock.
        mutating func recordWriteEnded(landed: Bool) {
            if landed, let written = recordBeingWritten {
                storedServerFailures = written
                unstoredServerFailures = []
            }
            recordBeingWritten = nil
            recordBase = nil
        }
    }
}

/// The failure budget of the session, shared by every process and replica of it through the store: each records the
/// server failures it met with the session (``/Persistence/StoredSession/recentServerFailures``) before it releases
/// the store's lock, and counts the record it finds when it re-reads the store under that lock.
extension SessionMachine {
    /// The refresh under the store's lock read `read` at wall time `now` (`elapsed` on the injected clock), after
    /// ``storeRead(_:epoch:now:)``: the record of server failures stored with this client's session counts in its
    /// failure budget from now on, so a failure of another process or replica holds this client's next attempt back as
    /// its own does. A record stored with another session (or a read that found none) is not counted. It only records.
    mutating func storedFailuresRead(_ read: TokenStoreRead, now: Date, elapsed: Duration) {
        guard case .found(let stored) = read, let session, stored.sessionID == session.sessionID else {
            breaker.noteStored(nil, epoch: epoch, now: now, elapsed: elapsed, backoff: configuration.backoff)
            return
        }
        breaker.noteStored(stored, epoch: epoch, now: now, elapsed: elapsed, backoff: configuration.backoff)
    }

    /// The refresh's hold of the store's lock ends at wall time `now` (`elapsed`): the write that records the server
    /// failures it met with the session, before the lock is released. It writes the session as it was read under
    /// that lock (the same tokens, identity and generation, conditional on both, so it never replaces another session
    /// or a newer pair, and no other client takes it for a new session or a refresh), with the record; nothing when
    /// there is nothing to record, or the session changed since that read (no store step then).
    mutating func serverFailuresWrite(now: Date, elapsed: Duration) -> Action {
        guard let base = breaker.recordBase, isCurrent(base.epoch), let session,
            session.sessionID == base.session.sessionID,
            let record = breaker.recordToWrite(now: now, elapsed: elapsed, backoff: configuration.backoff)
        else { return Action() }
        let stored = base.session
        return Action(
            store: .save(
                stored.with(recentServerFailures: record), .session(stored.sessionID, generation: stored.generation)))
    }

    /// The write of ``serverFailuresWrite(now:elapsed:)`` ended with `outcome` (`nil`: nothing was written). A write
    /// that failed loses nothing: the session stored is as it was, and the failures stay counted here, recorded with
    /// the next write. It only records.
    mutating func serverFailuresWriteEnded(_ outcome: Result<UInt64?, PersistenceError>?) {
        let landed = if case .some(.success) = outcome { true } else { false }
        breaker.recordWriteEnded(landed: landed)
    }
}
