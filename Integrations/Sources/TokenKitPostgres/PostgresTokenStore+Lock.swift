import Logging
import Persistence
import PostgresNIO
import Synchronization

extension PostgresTokenStore {
    /// Runs `body` while holding the account's PostgreSQL advisory lock, so that one replica at a time refreshes
    /// the account's session.
    ///
    /// The lock is a session-level `pg_advisory_lock` on a 64-bit key derived from the table and the account,
    /// held on one pooled connection for the whole body and released with `pg_advisory_unlock` after it (or by
    /// closing that connection if the unlock fails). A process killed while holding it releases it when its
    /// connection drops. The store's own operations inside `body` use other pooled connections and do not take
    /// the lock; a nested `withExclusiveAccess` for the same account in this task (or its child tasks) runs
    /// `body` under the lock already held.
    ///
    /// A waiter asks again every ``Configuration/lockRetryInterval`` until ``Configuration/lockTimeout`` has
    /// passed. Waiting can be cancelled.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The read-refresh-write to run under the lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; ``Persistence/PersistenceError/lockTimedOut`` when another holder kept the
    ///   lock past the timeout; ``Persistence/PersistenceError/lockFailed`` when the database cannot be reached
    ///   (no connection within ``Configuration/operationTimeout``) or the wait was cancelled.
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let key = SessionRowFormat.lockKey(table: table, account: account)
        if HeldAdvisoryLocks.keys.contains(key) { return try await body() }
        if configuration.migratesAutomatically {
            // Not required for the lock, but the body's reads and writes need the table.
            _ = try? await database(.unavailable) {}
        }
        return try await withoutActuallyEscaping(body) { body in
            try await withThrowingTaskGroup(of: T?.self) { group in
                let leased = LeaseFlag()
                group.addTask {
                    let value: T = try await self.client.withConnection { connection in
                        leased.set()
                        return try await self.holdingLock(key, on: connection, body)
                    }
                    return value
                }
                if let timeout = configuration.operationTimeout {
                    // Only the wait for a connection is bounded here (a pool with an unreachable server queues
                    // requests for a long time); the lock wait has its own bound, and the body is the caller's.
                    group.addTask {
                        try? await timer.sleep(timeout)
                        guard !leased.isSet else { return nil }
                        throw PersistenceError.lockFailed.with(
                            detail: "no database connection within \(timeout)")
                    }
                }
                do {
                    while let next = try await group.next() {
                        if let value = next {
                            group.cancelAll()
                            return value
                        }
                    }
                } catch let error as PersistenceError {
                    throw error
                } catch let error as PSQLError {
                    throw PersistenceError.lockFailed.with(detail: Self.describe(error, timeout: nil))
                }
                throw PersistenceError.lockFailed.with(detail: "the lock holder ended without a result")
            }
        }
    }

    /// The key of `account`'s advisory lock (`pg_advisory_lock(bigint)`), for finding its holder: in `pg_locks`,
    /// `locktype = 'advisory'`, `objsubid = 1`, `classid` the high 32 bits and `objid` the low 32 bits.
    ///
    /// - Parameter account: The account key.
    /// - Returns: The first 8 bytes of a SHA-256 of the table name and the account, as a signed 64-bit number.
    public func advisoryLockKey(account: String) -> Int64 {
        SessionRowFormat.lockKey(table: table, account: account)
    }

    /// Takes the lock on `connection`, runs `body`, and releases it.
    private func holdingLock<T: Sendable>(
        _ key: Int64, on connection: PostgresConnection, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await acquire(key, on: connection)
        configuration.logger.trace("advisory lock taken")
        let result: Result<T, any Error>
        do {
            result = .success(
                try await HeldAdvisoryLocks.$keys.withValue(HeldAdvisoryLocks.keys.union([key])) { try await body() })
        } catch {
            result = .failure(error)
        }
        await release(key, on: connection)
        return try result.get()
    }

    /// Asks for the lock until it is granted or the lock timeout passes.
    private func acquire(_ key: Int64, on connection: PostgresConnection) async throws {
        let started = timer.elapsed()
        var interval = min(configuration.lockRetryInterval, .milliseconds(2))
        while true {
            let rows = try await connection.query("SELECT pg_try_advisory_lock(\(key))", logger: configuration.logger)
            var granted = false
            for try await value in rows.decode(Bool.self) { granted = value }
            if granted { return }
            let waited = timer.elapsed() - started
            if let timeout = configuration.lockTimeout, waited >= timeout {
                configuration.logger.debug("advisory lock wait timed out", metadata: ["waited": "\(waited)"])
                throw PersistenceError.lockTimedOut.with(detail: "waited \(waited) for the account's advisory lock")
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

    /// Releases the lock; if that fails, closes the connection, which releases it too. A connection that is
    /// already closed (the server ended it) holds no lock. Bounded by ``Configuration/operationTimeout``.
    private func release(_ key: Int64, on connection: PostgresConnection) async {
        if connection.isClosed {
            configuration.logger.debug("the lock's connection was closed; the server released the lock")
            return
        }
        let logger = configuration.logger
        let unlocked =
            (try? await withDeadline(configuration.operationTimeout, sleep: timer.sleep) {
                let rows = try await connection.query("SELECT pg_advisory_unlock(\(key))", logger: logger)
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

/// The advisory lock keys this task (and its child tasks) hold, so a nested call does not wait for itself.
enum HeldAdvisoryLocks {
    @TaskLocal static var keys: Set<Int64> = []
}

/// Set once a connection has been leased.
final class LeaseFlag: Sendable {
    private let flag = Mutex(false)
    var isSet: Bool { flag.withLock { $0 } }
    func set() { flag.withLock { $0 = true } }
}
