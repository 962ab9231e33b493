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
/// the saves made under it are still running. The fencing number changes when a read under the lease finds the
/// lease cleared by a write outside it and takes it again.
final class ActiveLease: Sendable {
    let account: String
    let owner: String

    private struct State {
        var fence: Int64
        var bodyRunning = true
        var pendingWrites = 0
        var ended = false
        var endedByOwnWrite = false
        var heartbeat: Task<Void, Never>?
    }
    private let state: LockedValue<State>

    init(account: String, owner: String, fence: Int64) {
        self.account = account
        self.owner = owner
        self.state = LockedValue(State(fence: fence))
    }

    /// The fencing number the lease is held with now.
    var fence: Int64 { state.withLock { $0.fence } }

    /// Whether the lease was ended by a write (stored or removed) or found lost.
    var isEnded: Bool { state.withLock { $0.ended } }

    /// Whether a write of this holder (a save or removal that landed) ended the lease.
    var wasEndedByOwnWrite: Bool { state.withLock { $0.endedByOwnWrite } }

    func setHeartbeat(_ task: Task<Void, Never>) {
        let stale: Task<Void, Never>? = state.withLock { state in
            if state.ended || (!state.bodyRunning && state.pendingWrites == 0) { return task }
            defer { state.heartbeat = task }
            return state.heartbeat
        }
        stale?.cancel()
    }

    /// The row no longer carries this lease (a write of ours ended it, or another owner or a write outside any
    /// lease replaced it): nothing to renew or release.
    func markEnded(byOwnWrite: Bool = false) {
        let heartbeat: Task<Void, Never>? = state.withLock { state in
            state.ended = true
            if byOwnWrite { state.endedByOwnWrite = true }
            defer { state.heartbeat = nil }
            return state.heartbeat
        }
        heartbeat?.cancel()
    }

    /// A renewal with `fence` found the row without this lease; ignored when the lease was taken again since.
    func markLost(fence: Int64) {
        let heartbeat: Task<Void, Never>? = state.withLock { state in
            guard state.fence == fence else { return nil }
            state.ended = true
            defer { state.heartbeat = nil }
            return state.heartbeat
        }
        heartbeat?.cancel()
    }

    /// The lease was taken again with `fence` (a write outside it had cleared it); later writes are fenced by it.
    func retaken(fence: Int64) {
        state.withLock { state in
            state.fence = fence
            state.ended = false
            state.endedByOwnWrite = false
        }
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

/// The failure ``TestHooks/failsFencedWrite`` injects.
struct InjectedWriteFailure: Error {}

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

    /// Renews the lease held with `fence`, waiting at most `bound`; `false` when the row no longer carries it.
    private func renewLease(_ lease: ActiveLease, fence: Int64, within bound: Duration) async throws -> Bool {
        let milliseconds = leaseMilliseconds
        let queryLogger = self.queryLogger
        let table = self.table
        let attemptHook = configuration.testHooks.renewalAttempt
        return try await withDeadline(bound, sleep: timer.sleep) {
            if let attemptHook { await attemptHook() }
            return try await self.client.withConnection { connection in
                let rows = try await connection.query(
                    """
                    UPDATE \(unescaped: table)
                    SET lease_expires_at = now() + \(milliseconds)::float8 * interval '1 millisecond'
                    WHERE account = \(lease.account) AND lease_owner = \(lease.owner) AND lease_fence = \(fence)
                    RETURNING 1
                    """, logger: queryLogger)
                var renewed = false
                for try await _ in rows { renewed = true }
                return renewed
            }
        }
    }

    /// Renews `lease` every third of its duration until the body and the saves under it are done. A renewal that
    /// failed is tried again soon (50 ms, doubling up to a third of the lease), each attempt bounded by the time the
    /// lease has left (and by ``Configuration/operationTimeout``), so that a database back within the lease is
    /// reached before the lease ends.
    func startHeartbeat(_ lease: ActiveLease) {
        guard !configuration.testHooks.pausesHeartbeat else { return }
        let duration = configuration.leaseDuration
        let interval = duration / 3
        let operationTimeout = configuration.operationTimeout
        let fence = lease.fence
        let task = Task {
            // When the last renewal that landed was sent: the lease lasts at least `duration` from then.
            var renewedAt = timer.elapsed()
            var pause = interval
            var retryPause = Duration.milliseconds(50)
            while !Task.isCancelled {
                do { try await timer.sleep(pause) } catch { return }
                let sent = timer.elapsed()
                let left = duration - (sent - renewedAt)
                // Past its end the lease may still be ours (nobody took it): then no hurry.
                let bound =
                    left > .milliseconds(20)
                    ? min(operationTimeout ?? left, left) : min(operationTimeout ?? interval, interval)
                do {
                    if try await renewLease(lease, fence: fence, within: bound) {
                        renewedAt = sent
                        pause = interval
                        retryPause = .milliseconds(50)
                        continue
                    }
                    logger.debug("the lease was ended or taken over; heartbeat stopped")
                    lease.markLost(fence: fence)
                    return
                } catch {
                    logger.debug(
                        "renewing the lease failed; retrying",
                        metadata: ["error": "\(Self.describe(error, timeout: bound))"])
                    pause = retryPause
                    retryPause = min(retryPause * 2, interval)
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

    // MARK: Fenced reads

    /// Reads `account`'s row under `lease`. While the row carries the lease (or a write of this holder ended it),
    /// the read answers with what it found. When a write outside any lease (a sign-in, a sign-out elsewhere) has
    /// cleared it, the lease is taken again first (waiting for another owner's live lease, within
    /// ``Configuration/lockTimeout``), with the heartbeat restarted and a new fencing number for later writes, so
    /// that the body never refreshes a session another replica may refresh at the same time.
    func loadUnderLease(account: String, lease: ActiveLease) async -> TokenStoreRead {
        let started = timer.elapsed()
        var pause = min(configuration.lockRetryInterval, .milliseconds(2))
        while true {
            let found: (Row, String?, Int64)?
            let taking: LeaseTaking
            do {
                found = try await database(.unavailable) { try await self.fetchLeasedRow(account: account) }
                guard let (row, owner, fence) = found else { return .absent }
                if (owner == lease.owner && fence == lease.fence) || lease.wasEndedByOwnWrite {
                    return decode(row, account: account)
                }
                logger.debug("the lease was cleared by a write outside it; taking it again")
                let me = lease.owner
                taking = try await database(.unavailable) {
                    try await self.withSessionConnection { connection in
                        try await self.takeLease(account: account, owner: me, on: connection)
                    }
                }
            } catch {
                logger.debug("session row unavailable", metadata: ["error": "\(error)"])
                return .unavailable(error)
            }
            switch taking {
            case .noRow:
                return .absent
            case .taken(let fence):
                lease.retaken(fence: fence)
                startHeartbeat(lease)
            case .heldByAnother(let left):
                let waited = timer.elapsed() - started
                if let lockTimeout = configuration.lockTimeout, waited >= lockTimeout {
                    return .unavailable(
                        PersistenceError.lockTimedOut.with(
                            detail: "waited \(waited) for the account's lease, cleared by a write outside it"))
                }
                var sleep = min(pause, max(left, .milliseconds(1)))
                if let lockTimeout = configuration.lockTimeout { sleep = min(sleep, lockTimeout - waited) }
                do {
                    try await timer.sleep(sleep)
                } catch {
                    return .unavailable(
                        PersistenceError.lockFailed.with(detail: "cancelled while waiting for the lease"))
                }
                pause = min(pause * 2, configuration.lockRetryInterval)
            }
        }
    }

    /// The row with its lease owner and fencing number, or `nil`.
    private func fetchLeasedRow(account: String) async throws -> (Row, String?, Int64)? {
        let queryLogger = self.queryLogger
        let table = self.table
        return try await withSessionConnection { connection in
            let rows = try await connection.query(
                """
                SELECT generation, format_version, key_check, payload, lease_owner, lease_fence
                FROM \(unescaped: table) WHERE account = \(account)
                """, logger: queryLogger)
            for try await (generation, version, keyCheck, payload, owner, fence) in rows.decode(
                (Int64, Int32, String?, ByteBuffer, String?, Int64).self)
            {
                let row = Row(
                    generation: UInt64(bitPattern: generation), formatVersion: version, keyCheck: keyCheck,
                    payload: Array(payload.readableBytesView))
                return (row, owner, fence)
            }
            return nil
        }
    }

    // MARK: Fenced writes

    /// Stores a session under the lease: only while the row carries this lease and the condition holds. Retried on
    /// a fresh connection with backoff within ``Configuration/operationTimeout``; after that the caller gets
    /// `writeFailed` and the write goes on in the background, with the lease kept alive, until it lands or is
    /// refused, however long that takes: no other replica presents the refresh token the server has rotated.
    func fencedSave(_ request: WriteRequest, lockConnection: PostgresConnection) async throws(PersistenceError) {
        let lease = request.lease
        lease.beginWrite()
        let started = timer.elapsed()
        let budget = configuration.operationTimeout ?? .seconds(30)
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
                lease.markEnded(byOwnWrite: true)
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
        Task { await self.persistInBackground(request) }
        throw PersistenceError.writeFailed.with(detail: "\(lastError); still retrying in the background")
    }

    /// Retries a fenced save until it lands or is refused (backoff from 50 ms, doubling up to 1 s). The lease stays
    /// alive meanwhile (the heartbeat runs while a write is pending): a holder never lets its lease lapse while it
    /// holds a rotated pair it has not stored. If the holder cannot reach the database at all, the lease expires.
    private func persistInBackground(_ request: WriteRequest) async {
        let lease = request.lease
        defer { lease.endWrite() }
        var pause = Duration.milliseconds(50)
        let attemptBound = configuration.operationTimeout ?? .seconds(5)
        while true {
            do { try await timer.sleep(pause) } catch { return }
            pause = min(pause * 2, .seconds(1))
            do {
                let refusal = try await withDeadline(attemptBound, sleep: timer.sleep) {
                    try await self.fencedWrite(request, on: nil)
                }
                if let refusal {
                    if refusal == .conflict { lease.markEnded() }
                    logger.debug("the background save was refused", metadata: ["error": "\(refusal)"])
                } else {
                    lease.markEnded(byOwnWrite: true)
                    logger.debug("the background save landed")
                }
                return
            } catch {
                logger.debug(
                    "the background save failed again", metadata: ["error": "\(Self.describe(error, timeout: nil))"])
            }
        }
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
        if configuration.testHooks.failsFencedWrite?() == true { throw InjectedWriteFailure() }
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
        if refusal == nil {
            lease.markEnded(byOwnWrite: true)
        } else if refusal == .conflict {
            lease.markEnded()
        }
        return refusal
    }
}
#endif
