// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Logging
import Persistence
import PostgresNIO
import AuthToken

extension PostgresTokenStore {
    /// Runs `body` while holding the account's PostgreSQL advisory lock, so that one replica at a time refreshes
    /// the account's session.
    ///
    /// The lock is a session-level `pg_advisory_lock` on a 64-bit key derived from the table and the account
    /// (``advisoryLockKey(account:)``), held on one pooled connection for the whole body and released with
    /// `pg_advisory_unlock` after it (or by closing that connection if the unlock fails). A process killed while
    /// holding it releases it when its connection drops. The store's own operations inside `body` (by this task
    /// or its child tasks) run on the lock's connection, so a holder needs one connection however busy the pool
    /// is; a nested `withExclusiveAccess` for the same account runs `body` under the lock already held.
    ///
    /// A waiter asks with `pg_try_advisory_lock` every ``Configuration/lockRetryInterval`` (at most), returning
    /// its connection to the pool between attempts, until ``Configuration/lockTimeout`` has passed. Waiting can
    /// be cancelled.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The read-refresh-write to run under the lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; ``/Persistence/PersistenceError/lockTimedOut`` when another holder kept the
    ///   lock past the timeout; ``/Persistence/PersistenceError/lockFailed`` when the database cannot be reached
    ///   (no connection within ``Configuration/operationTimeout``) or the wait was cancelled.
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let key = advisoryLockKey(account: account)
        if let held = HeldAdvisoryLock.current, held.keys.contains(key), held.client == ObjectIdentifier(client) {
            return try await body()
        }
        if configuration.migratesAutomatically {
            // Not required for the lock, but the body's reads and writes need the table.
            _ = try? await database(.unavailable) {}
        }
        return try await withoutActuallyEscaping(body) { body in
            let started = timer.elapsed()
            var interval = min(configuration.lockRetryInterval, .milliseconds(2))
            while true {
                if let result = try await attempt(key, body) { return try result.get() }
                let waited = timer.elapsed() - started
                if let timeout = configuration.lockTimeout, waited >= timeout {
                    logger.debug("advisory lock wait timed out", metadata: ["waited": "\(waited)"])
                    throw PersistenceError.lockTimedOut.with(
                        detail: "waited \(waited) for the account's advisory lock")
                }
                var pause = interval
                if let timeout = configuration.lockTimeout { pause = min(pause, timeout - waited) }
                do {
                    try await timer.sleep(pause)
                } catch {
                    throw PersistenceError.lockFailed.with(detail: "cancelled while waiting for the advisory lock")
                }
                interval = min(interval * 2, configuration.lockRetryInterval)
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

    /// Runs `body` on the lock's connection when this task holds a lock of this store's client, else on a pooled
    /// connection.
    func withSessionConnection<R: Sendable>(
        _ body: @Sendable (PostgresConnection) async throws -> R
    ) async throws -> R {
        if let held = HeldAdvisoryLock.current, held.client == ObjectIdentifier(client) {
            return try await body(held.connection)
        }
        return try await client.withConnection { connection in try await body(connection) }
    }

    /// One attempt: leases a connection (within the operation timeout), asks for the lock, and if granted runs
    /// `body` under it and releases it. `nil` when another holder has the lock.
    private func attempt<T: Sendable>(
        _ key: Int64, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> Result<T, any Error>? {
        let leased = LeaseFlag()
        return try await withThrowingTaskGroup(of: Attempt<T>.self) { group in
            group.addTask {
                let outcome: Attempt<T> = try await self.client.withConnection { connection in
                    leased.set()
                    guard try await self.tryLock(key, on: connection) else { return .busy }
                    return .done(await self.holdingLock(key, on: connection, body))
                }
                return outcome
            }
            if let timeout = configuration.operationTimeout {
                // Only the wait for a connection is bounded here (a pool with an unreachable server queues
                // requests for a long time); the lock wait has its own bound, and the body is the caller's.
                group.addTask {
                    try? await timer.sleep(timeout)
                    guard !leased.isSet else { return .timerDone }
                    throw PersistenceError.lockFailed.with(detail: "no database connection within \(timeout)")
                }
            }
            do {
                while let next = try await group.next() {
                    switch next {
                    case .timerDone: continue
                    case .busy:
                        group.cancelAll()
                        return nil
                    case .done(let result):
                        group.cancelAll()
                        return result
                    }
                }
            } catch let error as PersistenceError {
                throw error
            } catch {
                throw PersistenceError.lockFailed.with(detail: Self.describe(error, timeout: nil))
            }
            throw PersistenceError.lockFailed.with(detail: "the lock attempt ended without a result")
        }
    }

    private func tryLock(_ key: Int64, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query("SELECT pg_try_advisory_lock(\(key))", logger: queryLogger)
        var granted = false
        for try await value in rows.decode(Bool.self) { granted = value }
        return granted
    }

    /// Runs `body` with the lock held on `connection`, then releases it.
    private func holdingLock<T: Sendable>(
        _ key: Int64, on connection: PostgresConnection, _ body: @Sendable () async throws -> T
    ) async -> Result<T, any Error> {
        logger.trace("advisory lock taken")
        let outer = HeldAdvisoryLock.current
        let held = HeldAdvisoryLock(
            keys: (outer?.keys ?? []).union([key]), connection: connection, client: ObjectIdentifier(client))
        let result: Result<T, any Error>
        do {
            result = .success(try await HeldAdvisoryLock.$current.withValue(held) { try await body() })
        } catch {
            result = .failure(error)
        }
        await release(key, on: connection)
        return result
    }

    /// Releases the lock; if that fails, closes the connection, which releases it too. A connection that is
    /// already closed (the server ended it) holds no lock. Bounded by ``Configuration/operationTimeout``.
    private func release(_ key: Int64, on connection: PostgresConnection) async {
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
private enum Attempt<T: Sendable>: Sendable {
    case busy
    case done(Result<T, any Error>)
    case timerDone
}

/// The advisory lock this task (and its child tasks) holds: its keys, the connection it is held on, and the
/// client that connection came from. A nested call does not wait for itself, and the store's operations inside
/// the body use the lock's connection instead of waiting for another one from the pool.
struct HeldAdvisoryLock: Sendable {
    @TaskLocal static var current: HeldAdvisoryLock?

    let keys: Set<Int64>
    let connection: PostgresConnection
    let client: ObjectIdentifier
}

/// Set once a connection has been leased.
final class LeaseFlag: Sendable {
    private let flag = LockedValue(false)
    var isSet: Bool { flag.withLock { $0 } }
    func set() { flag.withLock { $0 = true } }
}
#endif
