import AuthToken
import Logging
import Persistence

extension TokenRefreshClient {
    /// Starts a store write (a save or removal of this client's session) of session `epoch`, after every write
    /// started under an older epoch has landed or failed (see ``StoreWriteFence``). Call ``endWrite(_:)`` with the
    /// returned ID once the write is over, and write only if `epoch` is still current.
    func beginWrite(epoch: UInt64) async -> UInt64 {
        let id = writeFence.begin(epoch: epoch)
        await drainWrites(before: epoch)
        return id
    }

    /// As ``beginWrite(epoch:)``, but the write is only recorded, without waiting: for writes made under the store's
    /// exclusive access (a refresh waits for older writes before it takes that lock, and an older write may need the
    /// lock to land).
    func recordWrite(epoch: UInt64) -> UInt64 {
        writeFence.begin(epoch: epoch)
    }

    /// Ends the write `id` begun with ``beginWrite(epoch:)`` or ``recordWrite(epoch:)``, letting later writes go.
    func endWrite(_ id: UInt64) {
        for waiter in writeFence.end(id) { waiter.resume() }
    }

    /// Waits until no write started under an epoch older than `epoch` is in progress.
    func drainWrites(before epoch: UInt64) async {
        while writeFence.hasWrites(before: epoch) {
            await withCheckedContinuation { writeFence.wait(before: epoch, $0) }
        }
    }

    /// Makes the first pending write (an ended session's removal, a pending pair's save) again, if one is due (see
    /// ``SessionMachine/writeRetryStarting(elapsed:)``).
    func retryPendingWriteIfDue() async {
        switch machine.writeRetryStarting(elapsed: clock.elapsed) {
        case .some(let due): await retryWrite(due)
        case .none: break
        }
    }

    /// Makes `write` again once older writes have landed, and carries out what the machine makes of the outcome.
    func retryWrite(_ write: SessionMachine.PendingWrite) async {
        let fence = await beginWrite(epoch: write.epoch)
        defer { endWrite(fence) }
        switch await perform(machine.writeRetryTurn(write)) {
        case .some(let written):
            let outcome = written.map { _ in () }
            logWriteRetry(outcome, write)
            try? await carryOut(machine.writeRetryEnded(write, outcome))
        case .none:
            break
        }
    }

    /// Makes the write the store step of `turn` asks for, once older writes have landed: its outcome (the generation a
    /// save above the stored one took, `nil` for any other write), or `nil` when nothing is written. A turn's action
    /// holds nothing but its write.
    func perform(_ turn: SessionMachine.Action) async -> Result<UInt64?, PersistenceError>? {
        let (store, account) = (self.store, configuration.account)
        switch turn.store {
        case .saveAboveStored(let stored):
            let stamped = stampingServerTime(stored)
            return await Result.of { () async throws(PersistenceError) in
                try await store.saveAboveStored(stamped, account: account).generation
            }
        case .save(let stored, let condition):
            let stamped = stampingServerTime(stored)
            return await Result.of { () async throws(PersistenceError) in
                try await store.save(stamped, account: account, condition: condition)
                return nil
            }
        case .remove(let condition):
            return await Result.of { () async throws(PersistenceError) in
                try await store.remove(account: account, condition: condition)
                return nil
            }
        case .none, .readAtLoad, .readBeforeSessionChange, .readAfterConflict, .discard, .removeEnded:
            return nil  // not a write's turn: carryOut(_:) takes these steps
        }
    }

    /// Reads this client's session from the store; an offset stored with it seeds ``Configuration/serverClock``.
    func loadSession() async -> TokenStoreRead {
        noteServerTime(in: await store.load(account: configuration.account))
    }

    /// Seeds ``Configuration/serverClock`` with the offset stored with the session `read` found (unless the clock has
    /// learned one itself), and returns `read`.
    func noteServerTime(in read: TokenStoreRead) -> TokenStoreRead {
        ServerClock.seed(configuration.serverClock, from: read)
        return read
    }

    /// `stored` with the offset ``Configuration/serverClock`` has learned, for a write of the session.
    func stampingServerTime(_ stored: StoredSession) -> StoredSession {
        ServerClock.stamp(stored, with: configuration.serverClock)
    }

    /// Says how a write made again ended (a failure is tried again later).
    func logWriteRetry(_ outcome: Result<Void, PersistenceError>, _ write: SessionMachine.PendingWrite) {
        switch (outcome, write) {
        case (.success, .remove):
            logger.debug("removed the ended session from the store on a retry")
        case (.success, .save), (.failure(.conflict), _):
            break  // A newer session is stored: it is adopted, or there is nothing of the ended one to remove.
        case (.failure(let error), .remove):
            logger.debug("removing the ended session failed again", metadata: ["error": "\(error)"])
        case (.failure, .save(let pending, _)):
            logger.debug(
                "persisting the pending pair failed again", metadata: ["token": "\(pending.token.fingerprint)"])
        }
    }
}
