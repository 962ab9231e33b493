// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
import Logging
import NIOCore
import Persistence
import PostgresNIO

/// What taking the lease found.
enum LeaseTaking: Sendable {
    /// The lease is ours, with this fencing number.
    case taken(fence: Int64)
    /// Another owner's lease is live for about this long.
    case heldByAnother(Duration)
    /// The account has no row: nothing to protect.
    case noRow
}

/// A lease this process holds: its owner and fencing number, the heartbeat renewing it, and whether the body and
/// the saves made under it are still running.
final class ActiveLease: Sendable {
    let account: String
    let owner: String
    let fence: Int64

    private struct State {
        var bodyRunning = true
        var pendingWrites = 0
        var ended = false
        var heartbeat: Task<Void, Never>?
    }
    private let state = LockedValue(State())

    init(account: String, owner: String, fence: Int64) {
        self.account = account
        self.owner = owner
        self.fence = fence
    }

    /// Whether the lease was ended by a write (stored or removed) or found lost.
    var isEnded: Bool { state.withLock { $0.ended } }

    func setHeartbeat(_ task: Task<Void, Never>) {
        let stale: Task<Void, Never>? = state.withLock { state in
            if state.ended || (!state.bodyRunning && state.pendingWrites == 0) { return task }
            state.heartbeat = task
            return nil
        }
        stale?.cancel()
    }

    /// The row no longer carries this lease (a write of ours ended it, or another owner or a write outside any
    /// lease replaced it): nothing to renew or release.
    func markEnded() {
        let heartbeat: Task<Void, Never>? = state.withLock { state in
            state.ended = true
            defer { state.heartbeat = nil }
            return state.heartbeat
        }
        heartbeat?.cancel()
    }

    func beginWrite() { state.withLock { $0.pendingWrites += 1 } }

    func endWrite() { stopIfIdle { $0.pendingWrites -= 1 } }

    /// The body has returned; returns whether the lease is to be released now (nothing pending, not ended).
    func bodyEnded() -> Bool {
        var release = false
        stopIfIdle { state in
            state.bodyRunning = false
            release = state.pendingWrites == 0 && !state.ended
        }
        return release
    }

    private func stopIfIdle(_ change: (inout State) -> Void) {
        let heartbeat: Task<Void, Never>? = state.withLock { state in
            change(&state)
            guard !state.bodyRunning, state.pendingWrites == 0 else { return nil }
            defer { state.heartbeat = nil }
            return state.heartbeat
        }
        heartbeat?.cancel()
    }
}

/// A save to make under a lease.
struct WriteRequest: Sendable {
    let account: String
    let generation: Int64
    let payload: [UInt8]
    let condition: WriteCondition
    let lease: ActiveLease
}

extension PostgresTokenStore {
    /// The lease duration in milliseconds, for SQL.
    var leaseMilliseconds: Int64 {
        let components = configuration.leaseDuration.components
        return components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }

    /// Takes `account`'s lease for `owner` in one statement, if no other owner's lease is live.
    func takeLease(account: String, owner: String, on connection: PostgresConnection) async throws -> LeaseTaking {
        let milliseconds = leaseMilliseconds
        let rows = try await connection.query(
            """
            WITH taken AS (
                UPDATE \(unescaped: table)
                SET lease_owner = \(owner), lease_fence = lease_fence + 1,
                    lease_expires_at = now() + \(milliseconds)::float8 * interval '1 millisecond'
                WHERE account = \(account)
                    AND (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= now())
                RETURNING lease_fence
            )
            SELECT (SELECT lease_fence FROM taken),
                (SELECT GREATEST(0, ceil(EXTRACT(EPOCH FROM lease_expires_at - now()) * 1000))::bigint
                    FROM \(unescaped: table) WHERE account = \(account)),
                EXISTS (SELECT 1 FROM \(unescaped: table) WHERE account = \(account))
            """, logger: queryLogger)
        for try await (fence, left, exists) in rows.decode((Int64?, Int64?, Bool).self) {
            if let fence { return .taken(fence: fence) }
            if exists { return .heldByAnother(.milliseconds(left ?? 0)) }
        }
        return .noRow
    }

    /// Renews the lease; `false` when the row no longer carries it.
    private func renewLease(_ lease: ActiveLease) async throws -> Bool {
        let milliseconds = leaseMilliseconds
        let queryLogger = self.queryLogger
        let table = self.table
        return try await withDeadline(configuration.operationTimeout, sleep: timer.sleep) {
            try await self.client.withConnection { connection in
                let rows = try await connection.query(
                    """
                    UPDATE \(unescaped: table)
                    SET lease_expires_at = now() + \(milliseconds)::float8 * interval '1 millisecond'
                    WHERE account = \(lease.account) AND lease_owner = \(lease.owner) AND lease_fence = \(lease.fence)
                    RETURNING 1
                    """, logger: queryLogger)
                var renewed = false
                for try await _ in rows { renewed = true }
                return renewed
            }
        }
    }

    /// Renews `lease` every third of its duration until the body and the saves under it are done.
    func startHeartbeat(_ lease: ActiveLease) {
        guard !configuration.testHooks.pausesHeartbeat else { return }
        let interval = configuration.leaseDuration / 3
        let task = Task {
            while !Task.isCancelled {
                do { try await timer.sleep(interval) } catch { return }
                do {
                    if try await renewLease(lease) { continue }
                    logger.debug("the lease was ended or taken over; heartbeat stopped")
                    lease.markEnded()
                    return
                } catch {
                    // Retried at the next tick; the lease lasts three ticks.
                    logger.debug(
                        "renewing the lease failed", metadata: ["error": "\(Self.describe(error, timeout: nil))"])
                }
            }
        }
        lease.setHeartbeat(task)
    }

    /// Lets go of the lease if it is still ours: on the lock's connection while it is open, else on a pooled one,
    /// a few times within ``Configuration/operationTimeout``. If that fails, the lease expires by itself.
    func releaseLease(_ lease: ActiveLease, preferring lockConnection: PostgresConnection) async {
        let queryLogger = self.queryLogger
        let table = self.table
        let release: @Sendable (PostgresConnection) async throws -> Void = { connection in
            try await connection.query(
                """
                UPDATE \(unescaped: table) SET lease_owner = NULL, lease_expires_at = NULL
                WHERE account = \(lease.account) AND lease_owner = \(lease.owner) AND lease_fence = \(lease.fence)
                """, logger: queryLogger)
        }
        let budget = configuration.operationTimeout ?? .seconds(5)
        let started = timer.elapsed()
        var useLockConnection = !lockConnection.isClosed
        var pause = Duration.milliseconds(10)
        while true {
            let left = budget - (timer.elapsed() - started)
            guard left > .zero else { break }
            let onLockConnection = useLockConnection
            do {
                try await withDeadline(onLockConnection ? min(left, budget / 4) : left, sleep: timer.sleep) {
                    if onLockConnection {
                        try await release(lockConnection)
                    } else {
                        try await self.client.withConnection { connection in try await release(connection) }
                    }
                }
                lease.markEnded()
                logger.trace("lease released")
                return
            } catch {
                useLockConnection = false
                do { try await timer.sleep(pause) } catch { break }
                pause = min(pause * 2, .milliseconds(200))
            }
        }
        lease.markEnded()
        logger.debug("releasing the lease failed; it expires by itself")
    }

    // MARK: Fenced writes

    /// Stores a session under the lease: only while the row carries this lease and the condition holds. Retried on
    /// a fresh connection with backoff within ``Configuration/operationTimeout``; after that the caller gets
    /// `writeFailed` and the write goes on in the background (lease kept alive) for up to
    /// ``Configuration/persistRetryLimit``.
    func fencedSave(_ request: WriteRequest, lockConnection: PostgresConnection) async throws(PersistenceError) {
        let lease = request.lease
        lease.beginWrite()
        let started = timer.elapsed()
        let budget = configuration.operationTimeout ?? configuration.persistRetryLimit
        var pause = Duration.milliseconds(10)
        var onLockConnection = !lockConnection.isClosed
        var lastError = "no attempt"
        while true {
            let left = budget - (timer.elapsed() - started)
            if left <= .zero { break }
            let connection = onLockConnection ? lockConnection : nil
            // The lock's connection may be dead without knowing it yet: it gets a quarter of the time.
            let bound = onLockConnection ? min(left, budget / 4) : left
            onLockConnection = false
            do {
                let refusal = try await withDeadline(bound, sleep: timer.sleep) {
                    try await self.fencedWrite(request, on: connection)
                }
                lease.endWrite()
                if let refusal {
                    if refusal == .conflict { lease.markEnded() }
                    throw refusal
                }
                lease.markEnded()
                return
            } catch let error as PersistenceError {
                throw error
            } catch {
                lastError = Self.describe(error, timeout: bound)
                logger.debug("a save under the lease failed; retrying", metadata: ["error": "\(lastError)"])
            }
            do { try await timer.sleep(min(pause, max(budget - (timer.elapsed() - started), .zero))) } catch { break }
            pause = min(pause * 2, .milliseconds(500))
        }
        // The caller hears of the failure now; the write goes on (and the lease stays alive) in the background.
        Task { await self.persistInBackground(request, since: started) }
        throw PersistenceError.writeFailed.with(detail: "\(lastError); still retrying in the background")
    }

    /// Retries a fenced save until it lands, is refused, or ``Configuration/persistRetryLimit`` is spent.
    private func persistInBackground(_ request: WriteRequest, since started: Duration) async {
        let lease = request.lease
        defer { lease.endWrite() }
        var pause = Duration.milliseconds(50)
        let attemptBound = configuration.operationTimeout ?? .seconds(5)
        while timer.elapsed() - started < configuration.persistRetryLimit {
            do { try await timer.sleep(pause) } catch { return }
            pause = min(pause * 2, .seconds(1))
            do {
                let refusal = try await withDeadline(attemptBound, sleep: timer.sleep) {
                    try await self.fencedWrite(request, on: nil)
                }
                lease.markEnded()
                if let refusal {
                    logger.debug("the background save was refused", metadata: ["error": "\(refusal)"])
                } else {
                    logger.debug("the background save landed")
                }
                return
            } catch {
                logger.debug(
                    "the background save failed again", metadata: ["error": "\(Self.describe(error, timeout: nil))"])
            }
        }
        logger.debug("gave up the background save; the lease expires by itself")
    }

    /// One fenced write on `connection` (a pooled one when `nil`): `nil` when stored, else the refusal.
    private func fencedWrite(
        _ request: WriteRequest, on connection: PostgresConnection?
    ) async throws
        -> PersistenceError?
    {
        let queryLogger = self.queryLogger
        let table = self.table
        let version = SessionRowFormat.currentVersion
        let keyCheck = format.keyCheck
        let bytes = ByteBuffer(bytes: request.payload)
        let lease = request.lease
        let write: @Sendable (PostgresConnection) async throws -> PersistenceError? = { connection in
            try await connection.withTransaction(logger: queryLogger) { connection -> PersistenceError? in
                let rows = try await connection.query(
                    """
                    SELECT generation, format_version, key_check, lease_owner, lease_fence, payload = \(bytes)
                    FROM \(unescaped: table) WHERE account = \(request.account) FOR UPDATE
                    """, logger: queryLogger)
                var found: (Header, String?, Int64, Bool)?
                for try await (generation, formatVersion, storedKeyCheck, owner, fence, same) in rows.decode(
                    (Int64, Int32, String?, String?, Int64, Bool).self)
                {
                    found = (
                        Header(
                            generation: UInt64(bitPattern: generation), formatVersion: formatVersion,
                            keyCheck: storedKeyCheck), owner, fence, same
                    )
                }
                // The row went (a sign-out elsewhere): the lease went with it.
                guard let (header, owner, fence, same) = found else { return .conflict }
                // An earlier attempt landed, and its answer was lost.
                if same, header.generation == UInt64(bitPattern: request.generation), fence == lease.fence {
                    return nil
                }
                if let refusal = self.unreadable(header) { return refusal }
                guard owner == lease.owner, fence == lease.fence else { return .conflict }
                guard request.condition.allows(current: header.generation) else { return .conflict }
                try await connection.query(
                    """
                    UPDATE \(unescaped: table) SET generation = \(request.generation), format_version = \(version),
                        key_check = \(keyCheck), payload = \(bytes), updated_at = now(),
                        lease_owner = NULL, lease_expires_at = NULL
                    WHERE account = \(request.account)
                    """, logger: queryLogger)
                return nil
            }
        }
        if let connection { return try await write(connection) }
        return try await client.withConnection { connection in try await write(connection) }
    }

    /// Removes the row under the lease: only while the row carries it and the condition holds.
    func fencedDelete(
        account: String, condition: WriteCondition, lease: ActiveLease
    ) async throws
        -> PersistenceError?
    {
        let queryLogger = self.queryLogger
        let table = self.table
        let refusal = try await withSessionConnection { connection in
            try await connection.withTransaction(logger: queryLogger) { connection -> PersistenceError? in
                let rows = try await connection.query(
                    """
                    SELECT generation, format_version, key_check, lease_owner, lease_fence
                    FROM \(unescaped: table) WHERE account = \(account) FOR UPDATE
                    """, logger: queryLogger)
                var found: (Header, String?, Int64)?
                for try await (generation, formatVersion, storedKeyCheck, owner, fence) in rows.decode(
                    (Int64, Int32, String?, String?, Int64).self)
                {
                    found = (
                        Header(
                            generation: UInt64(bitPattern: generation), formatVersion: formatVersion,
                            keyCheck: storedKeyCheck), owner, fence
                    )
                }
                guard let (header, owner, fence) = found else { return nil }
                if condition != .always, let refusal = self.unreadable(header) { return refusal }
                guard owner == lease.owner, fence == lease.fence else { return .conflict }
                guard condition.allows(current: header.generation) else { return .conflict }
                try await connection.query(
                    "DELETE FROM \(unescaped: table) WHERE account = \(account)", logger: queryLogger)
                return nil
            }
        }
        if refusal == nil || refusal == .conflict { lease.markEnded() }
        return refusal
    }
}
#endif
