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
        /// The failure a hold reports (``TokenRefreshError/transient`` until one holds attempts back).
        private(set) var lastTransientError = TokenRefreshError.transient
        private(set) var consecutiveTransientFailures = 0
        /// When recent attempts of this client that a server answered with a transient failure started (see
        /// ``TokenRefreshClient/Backoff/failureBudget``), each `stored` once a record holding it has landed in the
        /// store.
        private(set) var serverFailures: [(time: Duration, stored: Bool)] = []
        /// The session's server failures as its store records them (``/Persistence/StoredSession/recentServerFailures``,
        /// counted by every process and replica of the session), as last read or written under the store's lock, on the
        /// injected clock.
        private(set) var recordedFailures: [Duration] = []
        /// The instant before which the spent budget holds attempts back (`networkRestored()` does not clear it: the
        /// server failed, not the network).
        private(set) var budgetHoldsUntil: Duration?
        /// The stored session the record is written with: as read under the store's lock, in the session's `epoch`.
        private(set) var recordBase: (session: StoredSession, epoch: UInt64)?

        /// The error that holds a new attempt back at `elapsed`, if any: backoff, `Retry-After`, the failure budget,
        /// or (for an attempt the window `counting`s) `maximum` attempts already in the `window` before it.
        func blocked(
            at elapsed: Duration, maximum: Int, window: Duration, counting: Bool = true
        ) -> TokenRefreshError? {
            if let hold = [budgetHoldsUntil, retryNotBefore].compactMap({ $0 }).max(), elapsed < hold {
                return lastTransientError.with(retryAfter: hold - elapsed)
            }
            guard counting, let full = Self.hold(attemptTimes, limit: maximum, window: window), elapsed < full else {
                return nil
            }
            return TokenRefreshError.rateLimited.with(retryAfter: full - elapsed)
        }

        /// An attempt is about to start at `elapsed`: the error that holds it back (see
        /// ``blocked(at:maximum:window:counting:)``), or `nil`, and then it is counted if `counting` (attempts out of
        /// the `window` are forgotten).
        mutating func admitAttempt(
            at elapsed: Duration, maximum: Int, window: Duration, counting: Bool = true
        ) -> TokenRefreshError? {
            let blocked = blocked(at: elapsed, maximum: maximum, window: window, counting: counting)
            guard blocked == nil, counting else { return blocked }
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
            serverFailures = []
            recordedFailures = []
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
            serverFailures.removeAll { elapsed - $0.time >= backoff.failureBudgetWindow }
            serverFailures.append((elapsed, stored: false))
            judgeBudget(at: elapsed, backoff: backoff)
            return budgetHoldsUntil != nil
        }

        /// No retry now: hold attempts back until `until`.
        mutating func holdBack(until: Duration, after failure: TokenRefreshError) {
            retryNotBefore = until
            lastTransientError = failure
        }

        /// Forgets the backoff (the network is back, or a refresh succeeded).
        mutating func clearBackoff() {
            retryNotBefore = nil
            lastTransientError = .transient
        }

        /// Until when `times` hold attempts back: `limit` of them (at least one) or more hold them back until the
        /// `limit`-th newest leaves the `window` (an instant that may have passed); `nil` when fewer are given.
        static func hold(_ times: [Duration], limit: Int, window: Duration) -> Duration? {
            let limit = max(1, limit)
            guard times.count >= limit else { return nil }
            return times.sorted()[times.count - limit] + window
        }

        // MARK: - The budget shared through the store

        /// How far ahead of the reader's clock a recorded failure may be (another process's or replica's clock, the
        /// server's time learned apart): a record with a failure further ahead is not plausible, and is ignored.
        static let recordLeeway: TimeInterval = 300

        /// The failures not in the store's record yet (written when this client's hold of the store's lock ends).
        var unstoredFailures: [Duration] { serverFailures.filter { !$0.stored }.map(\.time) }

        /// Judges the budget's hold at `elapsed`: the later of the holds of this client's failures and of the
        /// session's (the store's record with this client's failures not in it yet), or `nil` when neither has spent
        /// it.
        private mutating func judgeBudget(at elapsed: Duration, backoff: TokenRefreshClient.Backoff) {
            let window = backoff.failureBudgetWindow
            let failures = [serverFailures.map(\.time), recordedFailures + unstoredFailures]
            budgetHoldsUntil = failures.compactMap { times in
                Self.hold(times.filter { elapsed - $0 < window }, limit: backoff.failureBudget, window: window)
            }.max()
        }

        /// The session `stored`, read under the store's lock in `epoch` at wall time `now` (`elapsed` on the injected
        /// clock): its record of server failures becomes the stored part of the budget (and the base of the next record
        /// written), and the budget's hold is judged again.
        mutating func noteStored(
            _ stored: StoredSession, epoch: UInt64, now: Date, elapsed: Duration, backoff: TokenRefreshClient.Backoff
        ) {
            recordBase = (stored, epoch)
            recordedFailures = Self.plausible(
                stored.recentServerFailures, now: now, elapsed: elapsed, backoff: backoff)
            judgeBudget(at: elapsed, backoff: backoff)
        }

        /// A stored record of failure instants on the injected clock (read at wall time `now`, `elapsed`): at most
        /// `failureBudget` (the newest; those out of the budget's window hold nothing back and are not written again).
        /// A record holding an instant more than ``recordLeeway`` ahead of `now` is not plausible: it counts as none.
        static func plausible(
            _ instants: [Date]?, now: Date, elapsed: Duration, backoff: TokenRefreshClient.Backoff
        ) -> [Duration] {
            let ages = instants?.map { now.timeIntervalSince($0) }
            guard let ages, ages.allSatisfy({ $0.isFinite && $0 >= -recordLeeway }) else { return [] }
            return Array(ages.map { elapsed - .seconds($0) }.sorted().suffix(max(1, backoff.failureBudget)))
        }

        /// The record to write with the session at wall time `now` (`elapsed` on the injected clock): the stored
        /// failures and this client's not stored yet, those in the window, at most `failureBudget` (the newest), oldest
        /// first; `nil` when this client has none to add.
        func recordToWrite(now: Date, elapsed: Duration, backoff: TokenRefreshClient.Backoff) -> [Date]? {
            guard !unstoredFailures.isEmpty else { return nil }
            let recent = (recordedFailures + unstoredFailures)
                .filter { elapsed - $0 < backoff.failureBudgetWindow }.sorted()
            return recent.suffix(max(1, backoff.failureBudget)).map { time in
                let (seconds, attoseconds) = (elapsed - time).components
                return now.addingTimeInterval(-(Double(seconds) + Double(attoseconds) / 1e18))
            }
        }

        /// The record's write landed: this client's failures in it are the stored part of the budget now (those out of
        /// the window or beyond `failureBudget` were left out of the record, and hold nothing back).
        mutating func recordLanded() {
            recordedFailures += unstoredFailures
            serverFailures = serverFailures.map { ($0.time, stored: true) }
        }

        /// No record is to be written on what was read (a read that found no session of this client's, or the record's
        /// write ended, landed or not): the next record is written with the session as read under the next hold of the
        /// lock.
        mutating func forgetRecordBase() {
            recordBase = nil
        }
    }
}

/// The failure budget of the session, shared by every process and replica of it through the store: each records the
/// server failures it met with the session (``/Persistence/StoredSession/recentServerFailures``) before it releases
/// the store's lock, and counts the record it finds when it re-reads the store under that lock.
extension SessionMachine {
    /// The refresh under the store's lock read `read` at wall time `now` (`elapsed` on the injected clock), in
    /// ``flightEvent(_:epoch:now:elapsed:random:)``: the record of server failures stored with this client's session
    /// counts in its failure budget from now on, so a failure of another process or replica holds this client's next
    /// attempt back as its own does. A record stored with another session (or a read that found none) is not counted. It only records.
    mutating func storedFailuresRead(_ read: TokenStoreRead, now: Date, elapsed: Duration) {
        guard case .found(let stored) = read, let session, stored.sessionID == session.sessionID else {
            breaker.forgetRecordBase()
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
        if case .some(.success) = outcome { breaker.recordLanded() }
        breaker.forgetRecordBase()
    }
}
