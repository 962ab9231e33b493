// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Foundation
import Logging
import Persistence
package import PostgresNIO
import AuthToken

extension PostgresTokenStore {
    /// Runs `body` while this replica holds the account's refresh lease, so that one replica at a time refreshes
    /// the account's session and no replica presents a refresh token another one may already have rotated.
    ///
    /// `body` never runs under another owner's live lease; the lease is renewed while `body` runs, outliving the lock's
    /// connection and a database restart; saves and reads by `body` are fenced by it. A nested call for the same account
    /// runs `body` under the lease already held. How the lease is taken, renewed and let go:
    /// <doc:SharingSessionsAcrossReplicas>.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The read-refresh-write to run under the lease.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; ``/Persistence/PersistenceError/lockTimedOut`` when another holder kept the
    ///   lock or lease past the timeout; ``/Persistence/PersistenceError/lockFailed`` when the database could not be
    ///   reached until then (the detail names the last error) or the wait was cancelled.
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let key = advisoryLockKey(account: account)
        if let held = HeldAdvisoryLock.current, held.keys.contains(key), held.client == ObjectIdentifier(client) {
            return try await body()
        }
        let started = timer.elapsed()
        let lockTimeout = configuration.lockTimeout
        let errorBound = lockTimeout ?? configuration.operationTimeout
        var pollInterval = min(configuration.lockRetryInterval, .milliseconds(2))
        var errorPause = Duration.milliseconds(10)
        var lastError: String?
        // Whether another holder was seen: a wait that ends then timed out, even if its last attempt failed.
        var sawHolder = false
        // Whether the last attempt found the holder at work (its lease live): then the wait lasts up to the
        // live-holder timeout instead of the lock timeout, when that is longer.
        var holderAtWork = false
        // When an attempt last found the holder at work: a holder that stops working (its lease given back an
        // instant before its lock, as every refresh ends) is waited for the lock timeout from then.
        var lastSeenAtWork: Duration?
        while true {
            // An attempt (a connection, the lock, the lease) gets the operation timeout, as any other operation;
            // without one, what is left of the wait.
            var attemptBound = configuration.operationTimeout
            if attemptBound == nil, let bound = errorBound {
                attemptBound = max(bound - (timer.elapsed() - started), .milliseconds(50))
            }
            let pause: Duration
            let offer: LockOffer
            do {
                offer = try await acquire(key, account: account, within: attemptBound)
                lastError = nil
            } catch is CancelledWaiting {
                throw PersistenceError.lockFailed.with(detail: "cancelled while waiting for the lock")
            } catch {
                configuration.testHooks.lockAttempt?(.failed)
                let detail = Self.describe(error, timeout: attemptBound)
                logger.debug("taking the lock failed; retrying", metadata: ["error": "\(detail)"])
                lastError = detail
                offer = .busy
            }
            if lastError != nil, case .busy = offer {
                pause = errorPause
                errorPause = min(errorPause * 2, .milliseconds(250))
            } else {
                switch offer {
                case .acquired(let grant):
                    configuration.testHooks.lockAttempt?(.acquired)
                    return try await holding(grant, account: account, body)
                case .busy, .busyAtWork:
                    configuration.testHooks.lockAttempt?(.busy)
                    sawHolder = true
                    holderAtWork = offer.isAtWork
                    if holderAtWork { lastSeenAtWork = timer.elapsed() - started }
                    pause = pollInterval
                case .leaseHeld(let left):
                    configuration.testHooks.lockAttempt?(.leaseHeld)
                    sawHolder = true
                    holderAtWork = true
                    lastSeenAtWork = timer.elapsed() - started
                    logger.debug("another replica's live lease on the session; waiting")
                    pause = min(pollInterval, max(left, .milliseconds(1)))
                }
                pollInterval = min(pollInterval * 2, configuration.lockRetryInterval)
            }
            let elapsed = timer.elapsed() - started
            let waitBound = lockTimeout.map { timeout in
                if holderAtWork { return max(timeout, configuration.liveHolderTimeout) }
                return max(timeout, (lastSeenAtWork ?? .zero) + timeout)
            }
            if let lastError, !sawHolder {
                if let bound = errorBound, elapsed >= bound {
                    throw PersistenceError.lockFailed.with(detail: "\(lastError); retried for \(elapsed)")
                }
            } else if let waitBound, elapsed >= waitBound {
                logger.debug("lock wait timed out", metadata: ["waited": "\(elapsed)"])
                let last = lastError.map { "; last attempt: \($0)" } ?? ""
                throw PersistenceError.lockTimedOut.with(
                    detail: "waited \(elapsed) for the account's lock and lease\(last)")
            }
            var sleep = pause
            if let bound = lastError == nil ? waitBound : errorBound {
                sleep = min(sleep, max(bound - elapsed, .zero))
            }
            do {
                try await timer.sleep(sleep)
            } catch {
                throw PersistenceError.lockFailed.with(detail: "cancelled while waiting for the lock")
            }
        }
    }

    /// The key of `account`'s advisory lock (`pg_advisory_lock(bigint)`), for finding its holder: in `pg_locks`,
    /// `locktype = 'advisory'`, `objsubid = 1`, `classid` the high 32 bits and `objid` the low 32 bits.
    ///
    /// - Parameter account: The account key.
    /// - Returns: The first 8 bytes of a SHA-256 of the table name and the account (an HMAC-SHA-256 keyed with
    ///   ``Configuration/lockKeySecret`` when set), as a signed 64-bit number.
    public func advisoryLockKey(account: String) -> Int64 {
        SessionRowFormat.lockKey(table: table, account: account, secret: configuration.lockKeySecret)
    }

    /// Runs `body` on the lock's connection when this task holds a lock of this store's client and that connection
    /// is open, else on a pooled connection.
    func withSessionConnection<R: Sendable>(
        _ body: @Sendable (PostgresConnection) async throws -> R
    ) async throws -> R {
        if let held = HeldAdvisoryLock.current, held.client == ObjectIdentifier(client), !held.connection.isClosed {
            return try await body(held.connection)
        }
        return try await client.withConnection { connection in try await body(connection) }
    }

    /// One attempt, bounded by `bound`: a pooled connection, the advisory lock, the lease. The connection stays
    /// with a task of its own until the caller hands back the grant, so that `body` runs in the caller's task and a
    /// hung connection never holds the caller past `bound`.
    private func acquire(_ key: Int64, account: String, within bound: Duration?) async throws -> LockOffer {
        let handoff = LockHandoff()
        let owner = newLeaseOwner()
        let needsSchema = configuration.migratesAutomatically && !schema.isDone
        let task = Task {
            do {
                try await client.withConnection { connection in
                    guard handoff.start() else { return }
                    if needsSchema {
                        try await self.createTable(on: connection)
                        self.schema.markDone()
                    }
                    guard try await self.tryLock(key, on: connection) else {
                        let atWork = try await self.hasLiveLease(account: account, on: connection)
                        _ = handoff.offer(.success(atWork ? .busyAtWork : .busy))
                        return
                    }
                    let lease: LeaseTaking
                    do {
                        lease = try await self.takeLease(account: account, owner: owner, on: connection)
                    } catch {
                        await self.unlock(key, on: connection)
                        throw error
                    }
                    var grant = LockGrant(key: key, connection: connection, lease: nil, handoff: handoff)
                    switch lease {
                    case .heldByAnother(let left):
                        await self.unlock(key, on: connection)
                        _ = handoff.offer(.success(.leaseHeld(left)))
                        return
                    case .noRow:
                        break
                    case .taken(let fence):
                        grant.lease = ActiveLease(account: account, take: LeaseTake(owner: owner, fence: fence))
                    }
                    guard handoff.offer(.success(.acquired(grant))) else {
                        // The caller gave up meanwhile: give everything back.
                        if let lease = grant.lease { await self.releaseLease(lease, preferring: connection) }
                        await self.unlock(key, on: connection)
                        return
                    }
                    await handoff.waitUntilFinished()
                    await self.unlock(key, on: connection)
                }
            } catch {
                _ = handoff.offer(.failure(error))
            }
            handoff.connectionReturned()
        }
        do {
            return try await handoff.wait(within: bound, sleep: timer.sleep)
        } catch {
            // Only a wait for a connection is cancelled: a task that has one gives back what it took by itself.
            if !handoff.hasStarted { task.cancel() }
            throw error
        }
    }

    /// Runs `body` with the grant held, then lets go of the lease and the lock.
    private func holding<T: Sendable>(
        _ grant: LockGrant, account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        logger.trace("lock taken", metadata: ["lease": "\(grant.lease != nil)"])
        if let lease = grant.lease { startHeartbeat(lease) }
        let outer = HeldAdvisoryLock.current
        var leases = outer?.leases ?? [:]
        leases[account] = grant.lease
        let held = HeldAdvisoryLock(
            keys: (outer?.keys ?? []).union([grant.key]), connection: grant.connection,
            client: ObjectIdentifier(client), leases: leases)
        let result: Result<T, any Error>
        do {
            result = .success(try await HeldAdvisoryLock.$current.withValue(held) { try await body() })
        } catch {
            result = .failure(error)
        }
        if let lease = grant.lease, lease.bodyEnded() {
            await releaseLease(lease, preferring: grant.connection)
        }
        grant.handoff.finish()
        await grant.handoff.waitUntilConnectionReturned()
        return try result.get()
    }

    private func tryLock(_ key: Int64, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query("SELECT pg_try_advisory_lock(\(key))", logger: queryLogger)
        var granted = false
        for try await value in rows.decode(Bool.self) { granted = value }
        return granted
    }

    /// Releases the advisory lock; if that fails, closes the connection, which releases it too. A connection that
    /// is already closed (the server ended it) holds no lock. Bounded by ``Configuration/operationTimeout``.
    private func unlock(_ key: Int64, on connection: PostgresConnection) async {
        if connection.isClosed {
            logger.debug("the lock's connection was closed; the server released the lock")
            return
        }
        let queryLogger = self.queryLogger
        let unlocked =
            (try? await withDeadline(configuration.operationTimeout, sleep: timer.sleep) {
                let rows = try await connection.query("SELECT pg_advisory_unlock(\(key))", logger: queryLogger)
                var released = false
                for try await value in rows.decode(Bool.self) { released = value }
                return released
            }) ?? false
        if unlocked {
            logger.trace("advisory lock released")
            return
        }
        logger.debug("advisory unlock failed; closing the connection to release the lock")
        connection.close().whenComplete { _ in }
    }
}

/// What one lock attempt came to.
enum LockOffer: Sendable {
    /// Another connection holds the advisory lock.
    case busy
    /// Another connection holds the advisory lock, and its owner's lease is live: a refresh at work.
    case busyAtWork
    /// Another owner's lease is live for about this long.
    case leaseHeld(Duration)
    /// The lock (and the lease, when the account has a row) is this caller's.
    case acquired(LockGrant)

    /// Whether the holder was seen at work.
    var isAtWork: Bool {
        if case .busyAtWork = self { return true }
        return false
    }
}

/// A lock attempt's outcome as a test sees it.
package enum LockAttemptOutcome: Sendable {
    case acquired, busy, leaseHeld, failed
}

/// Switches for tests.
package struct TestHooks: Sendable {
    /// Whether a holder leaves its lease unrenewed (a holder cut off from the database).
    package var pausesHeartbeat = false
    /// Called after each lock attempt.
    package var lockAttempt: (@Sendable (LockAttemptOutcome) -> Void)?
    /// Asked before each fenced write (a save under a lease): `true` makes the attempt fail as a database error
    /// would, with the database still up for everything else.
    package var failsFencedWrite: (@Sendable () -> Bool)?
    /// Awaited at the start of each lease renewal attempt, within the attempt's time bound: a hook that does not
    /// return stands for a connection attempt lost in a database outage.
    package var renewalAttempt: (@Sendable () async -> Void)?
    /// Awaited at the start of each fenced write attempt (a save under a lease), within the attempt's time bound: a
    /// test takes the row's lock here from another session, so that the write is held in the database itself.
    package var fencedWriteAttempt: (@Sendable () async -> Void)?
    /// Awaited before each time the database is asked whether a write whose commit went unanswered took effect.
    package var commitOutcomeCheck: (@Sendable () async -> Void)?
    /// Awaited in each removal's transaction outside a lease (a sign-out's), on its connection, before it reads the
    /// row: a test holds the removal up in the database here, at a point where it holds nothing a later save needs.
    package var removalAttempt: (@Sendable (PostgresConnection) async throws -> Void)?

    package init() {}
}

/// The lock and lease a caller was granted.
struct LockGrant: Sendable {
    let key: Int64
    let connection: PostgresConnection
    var lease: ActiveLease?
    let handoff: LockHandoff
}

/// Thrown when the caller was cancelled while waiting for an attempt.
struct CancelledWaiting: Error {}

/// Hands a lock attempt's outcome from the task holding the connection to the caller, once; a caller that gave up
/// first (timeout, cancellation) makes the offer fail, and the connection's task gives the lock back.
final class LockHandoff: Sendable {
    private enum State {
        case waiting(CheckedContinuation<LockOffer, any Error>?)
        case offered(Result<LockOffer, any Error>)
        case taken
        case abandoned(any Error)
    }
    private let state = LockedValue<State>(.waiting(nil))
    private let started = LockedValue(false)
    private let finished = Gate()
    private let returned = Gate()

    /// Whether the connection's task has a connection.
    var hasStarted: Bool { started.withLock { $0 } }

    /// The connection's task has a connection; `false` when the caller has already given up.
    func start() -> Bool {
        started.withLock { $0 = true }
        return state.withLock { if case .abandoned = $0 { false } else { true } }
    }

    /// Offers an outcome; `false` when the caller gave up.
    func offer(_ outcome: Result<LockOffer, any Error>) -> Bool {
        let (accepted, continuation): (Bool, CheckedContinuation<LockOffer, any Error>?) = state.withLock { state in
            switch state {
            case .waiting(let continuation?):
                state = .taken
                return (true, continuation)
            case .waiting(nil):
                state = .offered(outcome)
                return (true, nil)
            case .offered, .taken, .abandoned:
                return (false, nil)
            }
        }
        continuation?.resume(with: outcome)
        return accepted
    }

    /// Waits for the outcome, at most `bound`.
    func wait(
        within bound: Duration?, sleep: @escaping @Sendable (Duration) async throws -> Void
    ) async throws
        -> LockOffer
    {
        let timer = bound.map { bound in
            Task {
                do { try await sleep(bound) } catch { return }
                self.abandon(with: DeadlineExceeded())
            }
        }
        defer { timer?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<LockOffer, any Error>) in
                let early: Result<LockOffer, any Error>? = state.withLock { state in
                    switch state {
                    case .waiting:
                        state = .waiting(continuation)
                        return nil
                    case .offered(let outcome):
                        state = .taken
                        return outcome
                    case .taken:
                        return .failure(CancelledWaiting())
                    case .abandoned(let error):
                        return .failure(error)
                    }
                }
                if let early { continuation.resume(with: early) }
            }
        } onCancel: {
            self.abandon(with: CancelledWaiting())
        }
    }

    /// Gives up waiting, unless an outcome was offered already (the caller then picks it up: a granted lock is
    /// never dropped here).
    private func abandon(with error: any Error) {
        let continuation: CheckedContinuation<LockOffer, any Error>?? = state.withLock { state in
            switch state {
            case .waiting(let continuation):
                state = .abandoned(error)
                return .some(continuation)
            case .offered, .taken, .abandoned:
                return nil
            }
        }
        if let continuation { continuation?.resume(throwing: error) }
    }

    /// The caller is done with the connection.
    func finish() { finished.open() }
    func waitUntilFinished() async { await finished.wait() }
    /// The connection's task has returned the connection to the pool.
    func connectionReturned() { returned.open() }
    func waitUntilConnectionReturned() async { await returned.wait() }
}

/// A gate that opens once; waiters before and after pass.
final class Gate: Sendable {
    private let state = LockedValue<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            defer { state = (true, []) }
            return state.open ? [] : state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// The lock this task (and its child tasks) holds: its keys, the connection it is held on, the client that
/// connection came from, and the leases taken with it. A nested call does not wait for itself, and the store's
/// operations inside the body use the lock's connection (while it is open) and fence their writes by the lease.
struct HeldAdvisoryLock: Sendable {
    @TaskLocal static var current: HeldAdvisoryLock?

    let keys: Set<Int64>
    let connection: PostgresConnection
    let client: ObjectIdentifier
    let leases: [String: ActiveLease]
}
#endif
