/// The client's store writes in progress, by the session epoch they were started under.
///
/// A write started for an older session (a sign-in's save, a refresh's save) may still be on its way to a slow
/// store when the session ends. Anything a later session does to the store (sign-out's removal, the next sign-in's
/// save) first waits until every write started under an older epoch has landed or failed, so that an older write
/// can never land after it: the older write is then removed or overwritten, never the other way round.
///
/// Writes only ever start under the current epoch, so no older write can appear once a wait has begun; a wait
/// holds nothing (no lock of the store), so it cannot deadlock with the write it waits for.
struct StoreWriteFence: Sendable {
    private var nextID: UInt64 = 0
    /// The epoch of each write in progress, by its ID.
    private var inProgress: [UInt64: UInt64] = [:]
    private var waiters: [(epoch: UInt64, continuation: CheckedContinuation<Void, Never>)] = []

    /// Records a write starting under `epoch`; returns its ID for ``end(_:)``.
    mutating func begin(epoch: UInt64) -> UInt64 {
        nextID &+= 1
        inProgress[nextID] = epoch
        return nextID
    }

    /// Records the end of write `id`; returns the waiters that no longer wait for anything, to resume.
    mutating func end(_ id: UInt64) -> [CheckedContinuation<Void, Never>] {
        inProgress[id] = nil
        var free: [CheckedContinuation<Void, Never>] = []
        var still: [(epoch: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        for waiter in waiters {
            if hasWrites(before: waiter.epoch) { still.append(waiter) } else { free.append(waiter.continuation) }
        }
        waiters = still
        return free
    }

    /// Whether a write started under an epoch older than `epoch` is still in progress.
    func hasWrites(before epoch: UInt64) -> Bool {
        inProgress.values.contains { $0 < epoch }
    }

    /// Parks `continuation` until no write older than `epoch` is in progress (the caller checked that one is).
    mutating func wait(before epoch: UInt64, _ continuation: CheckedContinuation<Void, Never>) {
        waiters.append((epoch, continuation))
    }
}
