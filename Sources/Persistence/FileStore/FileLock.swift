import AuthToken
import Foundation

/// A first-in, first-out asynchronous lock per key, shared by every store in the process (keys are
/// namespaced by the store: a file store uses the lock file's path).
///
/// `flock` alone would serialise tasks too (each acquisition opens its own file description), but a waiter
/// would block a thread; this queue keeps in-process waiters suspended instead, so at most one task per key
/// and process ever waits on `flock`.
package final class ProcessLocalLocks: Sendable {
    /// The one set of locks of this process.
    package static let shared = ProcessLocalLocks()

    /// The keys the current task (and its child tasks) holds, so that work inside a lock's body does not try
    /// to take it again.
    @TaskLocal package static var heldKeys: Set<String> = []

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }
    private struct Entry {
        var waiters: [Waiter] = []
    }
    private struct State {
        var nextID: UInt64 = 0
        /// Waiters whose deadline passed before they were queued.
        var expired: Set<UInt64> = []
        /// A key is held while it has an entry; its waiters queue in arrival order.
        var entries: [String: Entry] = [:]
    }
    private let state = LockedValue(State())

    /// Why a wait for a lock ended without it.
    package struct TimedOut: Error {}

    /// Waits until `key` is free and takes it, giving up after `timeout`.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while waiting; ``TimedOut`` when `timeout`
    ///   passed first.
    package func acquire(
        _ key: String, timeout: Duration?,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) async throws {
        guard let timeout else { return try await acquire(key) }
        let id: UInt64 = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let timer = Task {
            try? await sleep(timeout)
            if Task.isCancelled { return }
            let waiter: Waiter? = state.withLock { state in
                guard let index = state.entries[key]?.waiters.firstIndex(where: { $0.id == id }) else {
                    state.expired.insert(id)
                    return nil
                }
                return state.entries[key]!.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: TimedOut())
        }
        defer {
            timer.cancel()
            _ = state.withLock { $0.expired.remove(id) }
        }
        try await acquire(key, id: id)
    }

    /// Waits until `key` is free and takes it.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    package func acquire(_ key: String) async throws {
        try await acquire(key, id: nil)
    }

    private func acquire(_ key: String, id givenID: UInt64?) async throws {
        // Fast path: a free lock is taken without suspending the task.
        let id: UInt64? = state.withLock { state in
            guard state.entries[key] != nil else {
                state.entries[key] = Entry()
                return nil
            }
            if let givenID { return givenID }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case granted, cancelled, timedOut, queued }
                let outcome: Outcome = state.withLock { state in
                    guard state.entries[key] != nil else {
                        state.entries[key] = Entry()
                        return .granted
                    }
                    // The cancellation flag is set before the handler runs, and both take the mutex, so a
                    // waiter is either found by the handler or sees the flag here. The same holds for a
                    // deadline timer, which marks the waiter expired when it is not queued yet.
                    if Task.isCancelled { return .cancelled }
                    if state.expired.remove(id) != nil { return .timedOut }
                    state.entries[key]!.waiters.append(Waiter(id: id, continuation: continuation))
                    return .queued
                }
                switch outcome {
                case .granted: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .timedOut: continuation.resume(throwing: TimedOut())
                case .queued: break
                }
            }
        } onCancel: {
            let cancelled: Waiter? = state.withLock { state in
                guard let index = state.entries[key]?.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.entries[key]!.waiters.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Releases `key`, handing it to the longest waiter, if any.
    package func release(_ key: String) {
        let next: Waiter? = state.withLock { state in
            guard var entry = state.entries[key] else { return nil }
            if entry.waiters.isEmpty {
                state.entries[key] = nil
                return nil
            }
            let next = entry.waiters.removeFirst()
            state.entries[key] = entry
            return next
        }
        next?.continuation.resume()
    }

    /// Runs `body` holding `key`; when the current task already holds it, runs `body` directly.
    ///
    /// - Parameters:
    ///   - key: The lock's key.
    ///   - body: The work to run under the lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or ``PersistenceError/lockFailed`` when cancelled while waiting.
    package func withLock<T: Sendable>(_ key: String, _ body: () async throws -> T) async throws -> T {
        if Self.heldKeys.contains(key) { return try await body() }
        do {
            try await acquire(key)
        } catch {
            throw PersistenceError.lockFailed.with(detail: "cancelled while waiting")
        }
        defer { release(key) }
        return try await Self.$heldKeys.withValue(Self.heldKeys.union([key])) { try await body() }
    }
}

/// A held file-store lock: the process-local key and the `flock`ed descriptor.
struct HeldFileLock: Sendable {
    let key: String
    let descriptor: Int32
    /// Touches the lock file while the lock is held (see ``LockHolder``); `nil` for a lock not taken yet.
    var heartbeat: LockHolder.Heartbeat?

    /// Takes the process-local lock for `key`, then an exclusive `flock` on the file `lockName` in `directory`
    /// (which must belong to `expectedOwner`), waiting at most `timeout` for both (`nil`: no limit), measured and
    /// paced on `clock`; a holder seen alive (a task of this process, or a running process whose ID is in the lock
    /// file) is waited for up to `liveHolderTimeout` instead, when that is longer. `contended` runs once when
    /// another process holds the lock file.
    static func acquire(
        key: String, in directory: DirectoryHandle, lockName: String, expectedOwner: UInt32, faults: FileFaults,
        timeout: Duration?, liveHolderTimeout: Duration = .zero, clock: StoreClock,
        contended: (@Sendable () -> Void)? = nil
    ) async throws(PersistenceError) -> HeldFileLock {
        let started = clock.elapsed()
        let deadline = timeout.map { started + $0 }
        // A task of this process is alive by definition: it is waited for as a live holder.
        let liveTimeout = timeout.map { max($0, liveHolderTimeout) }
        let liveDeadline = liveTimeout.map { started + $0 }
        do {
            try await ProcessLocalLocks.shared.acquire(key, timeout: liveTimeout, sleep: clock.sleep)
        } catch is ProcessLocalLocks.TimedOut {
            throw PersistenceError.lockTimedOut.with(
                detail: "another task of this process held it for \(liveTimeout!)")
        } catch {
            throw PersistenceError.lockFailed.with(detail: "cancelled while waiting")
        }
        do throws(PersistenceError) {
            if let code = faults.errno(.openLockFile) {
                throw PersistenceError.lockFailed.with(detail: "open(lock): \(Errno(code))")
            }
            let descriptor: Int32
            switch POSIX.openLockFile(in: directory.descriptor, lockName) {
            case .success(let fd): descriptor = fd
            case .failure(let code): throw PersistenceError.lockFailed.with(detail: "open(lock): \(code)")
            }
            if case .success(let status) = POSIX.status(descriptor: descriptor), status.owner != expectedOwner {
                _ = POSIX.closeChecked(descriptor)
                throw PersistenceError.ownedByAnotherUser.with(
                    detail: "lock file \(lockName) belongs to user \(status.owner), not \(expectedOwner); not used")
            }
            switch POSIX.tryExclusiveLock(descriptor) {
            case .success(true):
                return HeldFileLock(taken: key, descriptor: descriptor)
            case .success(false):
                contended?()
                if let deadline, let liveDeadline {
                    // Another process holds it: poll until the deadline, so a process stuck in a refresh
                    // cannot hold every other one hostage; a holder still running is waited for longer, up to the
                    // refresh's own bound, because its answer is what this waiter needs.
                    do throws(PersistenceError) {
                        try await pollLock(descriptor, until: deadline, whileAliveUntil: liveDeadline, clock: clock)
                    } catch {
                        _ = POSIX.closeChecked(descriptor)
                        throw error
                    }
                    return HeldFileLock(taken: key, descriptor: descriptor)
                }
                // No limit: wait on a thread of our own, not on one of the cooperative pool.
                if let code = await blockingLockOnThread(descriptor) {
                    _ = POSIX.closeChecked(descriptor)
                    throw PersistenceError.lockFailed.with(detail: "flock: \(code)")
                }
                return HeldFileLock(taken: key, descriptor: descriptor)
            case .failure(let code):
                _ = POSIX.closeChecked(descriptor)
                throw PersistenceError.lockFailed.with(detail: "flock: \(code)")
            }
        } catch {
            ProcessLocalLocks.shared.release(key)
            throw error
        }
    }

    /// Releases the `flock` (closing the descriptor) and then the process-local lock.
    func release() {
        heartbeat?.stop()
        LockHolder.clear(descriptor)
        POSIX.unlock(descriptor)
        _ = POSIX.closeChecked(descriptor)
        ProcessLocalLocks.shared.release(key)
    }

    /// Tries the `flock` again after growing pauses (1 ms to 50 ms) until it is taken or `deadline` (a time since
    /// `clock`'s start) passes; past it, goes on while the lock file names a running process, until `liveDeadline`.
    private static func pollLock(
        _ descriptor: Int32, until deadline: Duration, whileAliveUntil liveDeadline: Duration, clock: StoreClock
    ) async throws(PersistenceError) {
        var pause = Duration.milliseconds(1)
        while true {
            let now = clock.elapsed()
            var limit = deadline
            if now >= deadline {
                guard now < liveDeadline, LockHolder.isAlive(descriptor) else {
                    throw PersistenceError.lockTimedOut.with(
                        detail: now < liveDeadline
                            ? "another process held the lock file, and it names no running process"
                            : "another process held the lock file past the wait for a live holder's refresh")
                }
                limit = liveDeadline
            }
            do {
                try await clock.sleep(min(pause, limit - now))
            } catch {
                throw PersistenceError.lockFailed.with(detail: "cancelled while waiting")
            }
            switch POSIX.tryExclusiveLock(descriptor) {
            case .success(true): return
            case .success(false): pause = min(pause * 2, .milliseconds(50))
            case .failure(let code): throw PersistenceError.lockFailed.with(detail: "flock: \(code)")
            }
        }
    }

    private static func blockingLockOnThread(_ descriptor: Int32) async -> Errno? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Errno?, Never>) in
            let thread = Thread {
                switch POSIX.blockingExclusiveLock(descriptor) {
                case .success: continuation.resume(returning: nil)
                case .failure(let code): continuation.resume(returning: code)
                }
            }
            thread.name = "TokenKit.FileTokenStore.flock"
            thread.start()
        }
    }
}
