import AuthToken
import Persistence

/// The writes to make again (an ended session's removal, a pending pair's save) as one ordered queue, and the end of a
/// removal: each event returns the one action the actor carries out.
extension SessionMachine {
    /// A write of this client's to make again.
    enum PendingWrite: Sendable, Equatable {
        /// Remove the session ended under `epoch`, under `condition`: its removal failed, or an older write may have
        /// landed after it.
        case remove(WriteCondition, epoch: UInt64)
        /// Save the session of `epoch`'s pair, held in memory only (its write failed), conditional on the generation
        /// stored.
        case save(Session, epoch: UInt64)

        /// The epoch the write belongs to: it is dropped once another session has begun.
        var epoch: UInt64 {
            switch self {
            case .remove(_, let epoch), .save(_, let epoch): epoch
            }
        }

        /// The condition of a removal; `nil` for a save.
        var removal: WriteCondition? {
            switch self {
            case .remove(let condition, _): condition
            case .save: nil
            }
        }

        /// This write, moved to `epoch` when it is a removal (a save stays with its session).
        func keptForRemoval(under epoch: UInt64) -> Self {
            switch self {
            case .remove(let condition, _): .remove(condition, epoch: epoch)
            case .save: self
            }
        }
    }

    /// The writes to make again, first in first out, so a removal queued before a pair's save lands before it (the
    /// save is then conditional on nothing stored). One write runs at a time, at most once per
    /// ``TokenRefreshClient/Configuration/persistRetryInterval``.
    struct PendingWrites: Sendable, Equatable {
        fileprivate(set) var queue: [PendingWrite] = []
        /// When a write was last tried or queued, by the injected clock (every write queued sets it, so it is known
        /// whenever the queue holds one).
        fileprivate(set) var lastAttempt: Duration = .zero
        /// Whether the first write is running.
        fileprivate(set) var inProgress = false

        /// Whether nothing is left to write, and nothing runs.
        var isEmpty: Bool { queue.isEmpty && !inProgress }
    }

    /// The removals still queued (an ended session's, to make again).
    var pendingRemovals: [WriteCondition] {
        pendingWrites.queue.compactMap(\.removal)
    }

    // MARK: - Queueing

    /// Queues the removal of the session ended under `epoch`, tried again `due` after `elapsed`'s interval: replaces
    /// any removal queued before it (one removal at most), behind the saves queued before.
    private mutating func queueRemoval(_ condition: WriteCondition, epoch: UInt64, lastAttempt: Duration) {
        pendingWrites.queue.removeAll { $0.removal != nil }
        pendingWrites.queue.append(.remove(condition, epoch: epoch))
        pendingWrites.lastAttempt = lastAttempt
    }

    /// The session's pair (not stored) is queued to be saved again after the interval from `elapsed`, behind a
    /// removal queued before it; a save queued before is replaced by this newer pair.
    mutating func queuePendingPair(elapsed: Duration) {
        guard let session, !session.persisted else { return }
        pendingWrites.queue.removeAll { $0.removal == nil }
        pendingWrites.queue.append(.save(session, epoch: epoch))
        pendingWrites.lastAttempt = elapsed
    }

    /// A pair is stored: it overwrote the ended session, so no removal is left to make.
    mutating func pairStored() {
        pendingWrites.queue.removeAll { $0.removal != nil }
    }

    /// A new session replaced a signed-out one and could not be stored (it is rolled back, or kept in memory
    /// only): the ended session's removal still has to happen, under the current epoch, before anything is saved.
    mutating func keepRemovals(after replaced: Replaced) {
        guard case .signedOut = replaced.held else { return }
        pendingWrites.queue = pendingWrites.queue.map { $0.keptForRemoval(under: epoch) }
    }

    // MARK: - Making them again

    /// A call at `elapsed` may make the first pending write again: that write (now marked running), or `nil` when none
    /// is pending, one runs, or the last try was too recent. Writes of an ended session, and saves of a pair no longer
    /// held in memory only, are dropped first (a running one too: what it ends with changes nothing any more).
    mutating func writeRetryStarting(elapsed: Duration) -> PendingWrite? {
        pendingWrites.queue = pendingWrites.queue.filter(isLive)
        guard !pendingWrites.inProgress, let first = pendingWrites.queue.first,
            elapsed - pendingWrites.lastAttempt >= configuration.persistRetryInterval
        else { return nil }
        pendingWrites.inProgress = true
        pendingWrites.lastAttempt = elapsed
        return first
    }

    /// Whether `write` is still to be made: its session is current, and a save's pair is the one held in memory only.
    private func isLive(_ write: PendingWrite) -> Bool {
        switch write {
        case .remove(_, let epoch): isCurrent(epoch)
        case .save(let pending, let epoch): isCurrent(epoch) && session == pending
        }
    }

    /// Older writes have landed for `write` (``writeRetryStarting(elapsed:)``): make it, or drop it when a sign-out or
    /// a new session came meanwhile (their own writes decide what is stored).
    mutating func writeRetryTurn(_ write: PendingWrite) -> Action {
        guard isCurrent(write.epoch) else {
            pendingWrites.inProgress = false
            pendingWrites.queue.removeAll { $0 == write }
            return Action()
        }
        switch write {
        case .remove(let condition, _):
            return Action(store: .remove(condition))
        case .save(let pending, _):
            let stored = StoredSession(
                token: pending.token, userID: pending.userID, generation: pending.generation,
                sessionID: pending.sessionID)
            return Action(store: .save(stored, writeCondition))
        }
    }

    /// `write` ended with `outcome`. A removal that landed leaves nothing stored; one that lost to a newer session is
    /// left. A save that landed stores the pair if it is still the session's (``AuthEvent/Kind/persistenceRecovered``);
    /// a newer pair it lost to is read and adopted. A failure keeps the write first in the queue, tried again later.
    mutating func writeRetryEnded(_ write: PendingWrite, _ outcome: Result<Void, PersistenceError>) -> Action {
        pendingWrites.inProgress = false
        switch (write, outcome) {
        case (_, .failure(.conflict)) where isCurrent(write.epoch) && write.removal == nil:
            pendingWrites.queue.removeAll { $0 == write }
            return Action(store: .readAfterConflict(epoch: write.epoch))
        case (_, .failure(.conflict)):
            pendingWrites.queue.removeAll { $0 == write }
            return Action()
        case (_, .failure):
            return Action()
        case (.remove, .success):
            // Nothing is stored now: a newer session's writes wait for this one to land (the actor's write fence).
            pendingWrites.queue.removeAll { $0 == write }
            noteStored(nil)
            return Action()
        case (.save(let pending, _), .success):
            pendingWrites.queue.removeAll { $0 == write }
            guard isCurrent(write.epoch), var session, session.generation == pending.generation else { return Action() }
            session.persisted = true
            state = state.entering(session)
            inStore = StoredKey(pending)
            pairStored()
            return Action(events: [.persistenceRecovered(tokenFingerprint: pending.token.fingerprint)])
        }
    }

    // MARK: - The end of a removal

    /// An ended session's removal ended (`error`: `nil` when it landed). `overtaken` says whether an older write of
    /// this client was still on its way when the removal started (it may land after it): the removal is then made
    /// again at the next call. A removal that failed is retried after
    /// ``TokenRefreshClient/Configuration/persistRetryInterval``; one that lost to a newer session is left. It only
    /// records: the actor says how the removal ended from its own outcome.
    mutating func removalEnded(_ error: PersistenceError?, _ removal: Removal, overtaken: Bool, elapsed: Duration) {
        switch error {
        case nil:
            noteStored(nil)
            pairStored()
            guard overtaken, let ended = removal.endedSession, isCurrent(removal.epoch) else { return }
            queueRemoval(ended, epoch: epoch, lastAttempt: elapsed - configuration.persistRetryInterval)
        case .conflict?:
            break  // The ended session was replaced in the store meanwhile: left there.
        case _?:
            if isCurrent(removal.epoch) { queueRemoval(removal.condition, epoch: epoch, lastAttempt: elapsed) }
        }
    }

    /// The sign-out's removal under `epoch` finished (`failure` when it did not happen) at `elapsed`: what the
    /// sign-out returns. A store that could not be cleared (memory is) has the removal retried later under
    /// ``signOutRemoval(of:)`` (the session it `ended` only: another process may sign a new one in meanwhile) unless a
    /// new session began here, and the sign-out throws. A removal that lost to another session leaves it: the
    /// sign-out is over.
    mutating func signOutRemovalFinished(
        _ failure: PersistenceError?, ended: Session? = nil, epoch: UInt64, elapsed: Duration
    ) -> Result<Void, TokenRefreshError> {
        // As any removal of an ended session ends; the sign-out's waited for every older write, so none overtakes it.
        removalEnded(
            failure, Removal(condition: signOutRemoval(of: ended), epoch: epoch, endedSession: nil), overtaken: false,
            elapsed: elapsed)
        // Another session is stored (a conflict): not this sign-out's to remove.
        guard let failure, failure != .conflict else { return .success(()) }
        return .failure(TokenRefreshError.storageUnavailable.with(underlying: failure))
    }

    /// The server answered `status` to a request that ends the session there (account deletion, sign-out
    /// everywhere): a success ends the session here too; a refusal (not 2xx) keeps it, and fails with this error.
    static func serverAnswered(endingSession status: Int) -> Result<Void, TokenRefreshError> {
        guard (200..<300).contains(status) else {
            return .failure(TokenRefreshError.serverRefused.with(status: status))
        }
        return .success(())
    }
}
