import Logging
import Persistence

extension TokenRefreshClient {
    /// Starts a store write (a save or removal of this client's session) of session `epoch`, after every write
    /// started under an older epoch has landed or failed (see ``StoreWriteFence``). Call ``endWrite(_:)`` with the
    /// returned ID once the write is over, and write only if `epoch` is still current.
    ///
    /// With `waiting` false the write is only recorded: for writes made under the store's exclusive access (a
    /// refresh waits for older writes before it takes that lock, and an older write may need the lock to land).
    func beginWrite(epoch: UInt64, waiting: Bool = true) async -> UInt64 {
        let id = writeFence.begin(epoch: epoch)
        if waiting { await drainWrites(before: epoch) }
        return id
    }

    /// Ends the write `id` begun with ``beginWrite(epoch:waiting:)``, letting later writes go.
    func endWrite(_ id: UInt64) {
        for waiter in writeFence.end(id) { waiter.resume() }
    }

    /// Waits until no write started under an epoch older than `epoch` is in progress.
    func drainWrites(before epoch: UInt64) async {
        while writeFence.hasWrites(before: epoch) {
            await withCheckedContinuation { writeFence.wait(before: epoch, $0) }
        }
    }

    /// Removes an ended session again after a removal that failed (a lock timeout, a locked Keychain) or that an
    /// older write may have overtaken, at most once per ``Configuration/persistRetryInterval``, unless a new
    /// session has started since.
    func retryPendingRemovalIfDue() async {
        guard let (epoch, condition) = machine.removalRetryDue(elapsed: clock.elapsed) else { return }
        let write = await beginWrite(epoch: epoch)
        defer { endWrite(write) }
        guard machine.isCurrent(epoch) else {
            machine.removalRetryEnded(done: true)
            return
        }
        do {
            try await store.remove(account: configuration.account, condition: condition)
            machine.removalRetryEnded(done: true)
            logger.debug("removed the ended session from the store on a retry")
        } catch .conflict {
            // A newer session is stored (by another process): there is nothing of the ended one to remove.
            machine.removalRetryEnded(done: true)
        } catch {
            machine.removalRetryEnded(done: false)
            logger.debug("removing the ended session failed again", metadata: ["error": "\(error)"])
        }
    }
}
