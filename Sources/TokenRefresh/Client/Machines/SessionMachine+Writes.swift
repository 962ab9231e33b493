import AuthToken
import Persistence

/// Writing a pending pair again, removing an ended session again, and the end of a removal: each event returns the
/// one action the actor carries out.
extension SessionMachine {
    /// An ended session's removal ended (`error`: `nil` when it landed). `overtaken` says whether an older write of
    /// this client was still on its way when the removal started (it may land after it): the removal is then made
    /// again at the next call. A removal that failed is retried after
    /// ``TokenRefreshClient/Configuration/persistRetryInterval``; one that lost to a newer session is left. It only
    /// records: the actor says how the removal ended from its own outcome.
    mutating func removalEnded(_ error: PersistenceError?, _ removal: Removal, overtaken: Bool, elapsed: Duration) {
        switch error {
        case nil:
            noteStored(nil)
            pendingRemoval = nil
            guard overtaken, let ended = removal.endedSession, isCurrent(removal.epoch) else { return }
            pendingRemoval = PendingRemoval(
                epoch: epoch, condition: ended,
                lastAttempt: elapsed - configuration.persistRetryInterval)
        case .conflict?:
            break  // The ended session was replaced in the store meanwhile: left there.
        case _?:
            if isCurrent(removal.epoch) {
                pendingRemoval = PendingRemoval(epoch: epoch, condition: removal.condition, lastAttempt: elapsed)
            }
        }
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
