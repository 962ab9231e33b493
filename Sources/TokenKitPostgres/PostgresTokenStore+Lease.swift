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

/// One taking of a lease: the owner written to the row and the fencing number the row answered with. A lease taken
/// again (a write outside it had cleared it) is a new take with a new owner, so that a write fenced by an earlier
/// take never matches it, even where a sign-out deleted the row and the new row's fencing numbers start again.
struct LeaseTake: Sendable, Equatable {
    let owner: String
    let fence: Int64
}

/// A lease this process holds: its current take, the heartbeat renewing it, and whether the body and the saves made
/// under it are still running. The take changes when a read under the lease finds the lease cleared by a write
/// outside it and takes it again.
final class ActiveLease: Sendable {
    let account: String

    private struct State {
        var take: LeaseTake
        var bodyRunning = true
        var pendingWrites = 0
        var ended = false
        var endedByOwnWrite = false
        var heartbeat: Task<Void, Never>?
    }
    private let state: LockedValue<State>

    init(account: String, take: LeaseTake) {
        self.account = account
        self.state = LockedValue(State(take: take))
    }

    /// The take the lease is held with now.
    var take: LeaseTake { state.withLock { $0.take } }

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
    /// lease replaced it): nothing to renew or release. With `take`, only if the lease is still held with it (a
    /// write fenced by an earlier take says nothing of the lease taken since).
    func markEnded(byOwnWrite: Bool = false, take: LeaseTake? = nil) {
        let heartbeat: Task<Void, Never>? = state.withLock { state in
            if let take, take != state.take { return nil }
            state.ended = true
            if byOwnWrite { state.endedByOwnWrite = true }
            defer { state.heartbeat = nil }
            return state.heartbeat
        }
        heartbeat?.cancel()
    }

    /// A renewal with `take` found the row without this lease; ignored when the lease was taken again since.
    func markLost(take: LeaseTake) {
        let heartbeat: Task<Void, Never>? = state.withLock { state in
            guard state.take == take else { return nil }
            state.ended = true
            defer { state.heartbeat = nil }
            return state.heartbeat
        }
        heartbeat?.cancel()
    }

    /// The lease was taken again as `take` (a write outside it had cleared it); later writes are fenced by it.
    func retaken(_ take: LeaseTake) {
        state.withLock { state in
            state.take = take
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

/// A save to make under a lease, fenced by the take the lease was held with when the save was asked for.
struct WriteRequest: Sendable {
    let account: String
    let session: StoredSession
    let generation: Int64
    let payload: [UInt8]
    let condition: WriteCondition
    let lease: ActiveLease
    let take: LeaseTake

    init(account: String, session: StoredSession, payload: [UInt8], condition: WriteCondition, lease: ActiveLease) {
        self.account = account
        self.session = session
        self.generation = Int64(bitPattern: session.generation)
        self.payload = payload
        self.condition = condition
        self.lease = lease
        self.take = lease.take
    }

    /// Whether `other` is this save (the same pair under the same take).
    func isSame(as other: WriteRequest) -> Bool { session == other.session && take == other.take }
}

/// Saves under a lease that failed within ``PostgresTokenStore/Configuration/operationTimeout`` and go on in the
/// background, one per account. The caller's own later save of the same pair (a refresh client retrying the pair it
/// keeps in memory) is made under the same take, as the background save is, never as a save outside any lease,
/// which would obey only its generation condition and end whatever lease the row carries.
final class UnstoredPairs: Sendable {
    /// Where a background save stands.
    enum Outcome: Sendable {
        case pending
        case landed
        case refused(PersistenceError)
    }

    private struct Entry {
        let request: WriteRequest
        var outcome: Outcome
    }
    private let entries = LockedValue<[String: Entry]>([:])

    /// `request` failed within the operation timeout and goes on in the background.
    func pending(_ request: WriteRequest) {
        entries.withLock { $0[request.account] = Entry(request: request, outcome: .pending) }
    }

    /// The background save of `request` landed or was refused.
    func settled(_ request: WriteRequest, _ outcome: Outcome) {
        entries.withLock { entries in
            guard let entry = entries[request.account], entry.request.isSame(as: request) else { return }
            entries[request.account]?.outcome = outcome
        }
    }

    /// The save of `session` for `account` still pending or settled in the background, if there is one; forgotten
    /// once settled (the caller has heard the outcome).
    func claim(account: String, session: StoredSession) -> (WriteRequest, Outcome)? {
        entries.withLock { entries in
            guard let entry = entries[account], entry.request.session == session else { return nil }
            if case .pending = entry.outcome {} else { entries[account] = nil }
            return (entry.request, entry.outcome)
        }
    }

    /// Forgets `request` (its outcome was told to the caller).
    func forget(_ request: WriteRequest) {
        entries.withLock { entries in
            if let entry = entries[request.account], entry.request.isSame(as: request) {
                entries[request.account] = nil
            }
        }
    }
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

    /// Whether `account`'s row carries a live lease of another owner: its holder renews it while its refresh runs.
    func hasLiveLease(account: String, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            """
            SELECT 1 FROM \(unescaped: table)
            WHERE account = \(account) AND lease_owner IS NOT NULL AND lease_expires_at > now()
            """, logger: queryLogger)
        for try await _ in rows { return true }
        return false
    }

    /// Renews `lease`'s take `take`, waiting at most `bound`; `false` when the row no longer carries it.
    private func renewLease(_ lease: ActiveLease, take: LeaseTake, within bound: Duration) async throws -> Bool {
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
                    WHERE account = \(lease.account) AND lease_owner = \(take.owner) AND lease_fence = \(take.fence)
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
        let take = lease.take
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
                    if try await renewLease(lease, take: take, within: bound) {
                        renewedAt = sent
                        pause = interval
                        retryPause = .milliseconds(50)
                        continue
                    }
                    logger.debug("the lease was ended or taken over; heartbeat stopped")
                    lease.markLost(take: take)
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
        let take = lease.take
        let release: @Sendable (PostgresConnection) async throws -> Void = { connection in
            try await connection.query(
                """
                UPDATE \(unescaped: table) SET lease_owner = NULL, lease_expires_at = NULL
                WHERE account = \(lease.account) AND lease_owner = \(take.owner) AND lease_fence = \(take.fence)
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
                lease.markEnded(take: take)
                logger.trace("lease released")
                return
            } catch {
                useLockConnection = false
                do { try await timer.sleep(pause) } catch { break }
                pause = min(pause * 2, .milliseconds(200))
            }
        }
        lease.markEnded(take: take)
        logger.debug("releasing the lease failed; it expires by itself")
    }

    /// A lease owner no other take has had: this store value's ID and a random nonce.
    func newLeaseOwner() -> String { "\(instanceID):\(UInt64.random(in: 1...UInt64.max))" }

    // MARK: Fenced reads

    /// Reads `account`'s row under `lease`. While the row carries the lease (or a write of this holder ended it),
    /// the read answers with what it found. When a write outside any lease (a sign-in, a sign-out elsewhere) has
    /// cleared it, the lease is taken again first (waiting for another owner's live lease, within
    /// ``Configuration/lockTimeout``), with the heartbeat restarted and a new fencing number for later writes, so
    /// that the body never refreshes a session another replica may refresh at the same time.
    func loadUnderLease(account: String, lease: ActiveLease) async -> TokenStoreRead {
        let started = timer.elapsed()
        var pause = min(configuration.lockRetryInterval, .milliseconds(2))
        var me = ""
        while true {
            let found: (Row, String?, Int64)?
            let taking: LeaseTaking
            do {
                found = try await database(.unavailable) { try await self.fetchLeasedRow(account: account) }
                guard let (row, owner, fence) = found else { return .absent }
                let take = lease.take
                if (owner == take.owner && fence == take.fence) || lease.wasEndedByOwnWrite {
                    return decode(row, account: account)
                }
                logger.debug("the lease was cleared by a write outside it; taking it again")
                // A new owner: a write fenced by the earlier take must never match this one (a sign-out deletes the
                // row, and the new row's fencing numbers start again from 0).
                let newOwner = newLeaseOwner()
                me = newOwner
                taking = try await database(.unavailable) {
                    try await self.withSessionConnection { connection in
                        try await self.takeLease(account: account, owner: newOwner, on: connection)
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
                lease.retaken(LeaseTake(owner: me, fence: fence))
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
                SELECT generation, session_id, format_version, key_check, payload, lease_owner, lease_fence
                FROM \(unescaped: table) WHERE account = \(account)
                """, logger: queryLogger)
            for try await (generation, sessionID, version, keyCheck, payload, owner, fence) in rows.decode(
                (Int64, String?, Int32, String?, ByteBuffer, String?, Int64).self)
            {
                let row = Row(
                    generation: UInt64(bitPattern: generation), sessionID: sessionID, formatVersion: version,
                    keyCheck: keyCheck, payload: Array(payload.readableBytesView))
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
            let fence = CommitFence()
            do {
                let refusal = try await withDeadline(bound, fence: fence, sleep: timer.sleep) {
                    try await self.fencedWrite(request, on: connection, fence: fence)
                }
                lease.endWrite()
                if let refusal {
                    if refusal == .conflict { lease.markEnded(take: request.take) }
                    throw refusal
                }
                lease.markEnded(byOwnWrite: true, take: request.take)
                return
            } catch let error as PersistenceError {
                throw error
            } catch {
                lastError = Self.describe(error, timeout: bound)
                // An attempt that sent its commit may have landed: the database is asked before anything else.
                switch await commitOutcome(of: fence) {
                case .landed:
                    lease.endWrite()
                    lease.markEnded(byOwnWrite: true, take: request.take)
                    logger.debug("a save under the lease landed though the answer to its commit was lost")
                    return
                case .unknown where SaveFailure.dropsSession:
                    // The caller drops the session: it is told that the save may be stored, and nothing is retried.
                    lease.endWrite()
                    throw PersistenceError.writeFailed.with(detail: "\(lastError); \(Self.outcomeUnknown)")
                case .unknown:
                    // A retry finds the row as that attempt left it, and takes an earlier landing for its own.
                    lastError += "; its outcome is unknown"
                case .notSent, .rolledBack:
                    break
                }
                logger.debug("a save under the lease failed; retrying", metadata: ["error": "\(lastError)"])
            }
            do { try await timer.sleep(min(pause, max(budget - (timer.elapsed() - started), .zero))) } catch { break }
            pause = min(pause * 2, .milliseconds(500))
        }
        if SaveFailure.dropsSession {
            // The caller drops the session (a sign-in goes back to the one it replaced): nothing goes on in the
            // background, and every attempt still held in the database was withdrawn at its deadline.
            lease.endWrite()
            throw PersistenceError.writeFailed.with(detail: "\(lastError); given up, as the caller drops the session")
        }
        // The caller hears of the failure now; the write goes on (and the lease stays alive) in the background, and
        // the caller's own later save of this pair is made under the same take.
        unstored.pending(request)
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
                let fence = CommitFence()
                let refusal = try await withDeadline(attemptBound, fence: fence, sleep: timer.sleep) {
                    try await self.fencedWrite(request, on: nil, fence: fence)
                }
                if let refusal {
                    if refusal == .conflict { lease.markEnded(take: request.take) }
                    unstored.settled(request, .refused(refusal))
                    logger.debug("the background save was refused", metadata: ["error": "\(refusal)"])
                } else {
                    lease.markEnded(byOwnWrite: true, take: request.take)
                    unstored.settled(request, .landed)
                    logger.debug("the background save landed")
                }
                return
            } catch {
                logger.debug(
                    "the background save failed again", metadata: ["error": "\(Self.describe(error, timeout: nil))"])
            }
        }
    }

    /// The caller's own later save of a pair whose save under a lease failed (``UnstoredPairs``): made under that
    /// save's take, as the background save is, so it lands only while the row still carries that take. A write
    /// outside the lease since (a sign-in or sign-out elsewhere) makes it a conflict; an outcome the background save
    /// already had is the answer.
    func saveUnstored(_ request: WriteRequest, outcome: UnstoredPairs.Outcome) async throws(PersistenceError) {
        switch outcome {
        case .landed:
            return
        case .refused(let refusal):
            throw refusal
        case .pending:
            break
        }
        let fence = CommitFence()
        let refusal: PersistenceError?
        do {
            refusal = try await database(.writeFailed, fence: fence) {
                try await self.fencedWrite(request, on: nil, fence: fence)
            }
        } catch {
            try await settleFailedWrite(error, fence: fence)
            refusal = nil
        }
        unstored.forget(request)
        if let refusal {
            if refusal == .conflict { request.lease.markEnded(take: request.take) }
            throw refusal
        }
        request.lease.markEnded(byOwnWrite: true, take: request.take)
    }

    /// One fenced write on `connection` (a pooled one when `nil`): `nil` when stored, else the refusal. Rolled back
    /// when `commit` was withdrawn (its caller stopped waiting) before the commit.
    private func fencedWrite(
        _ request: WriteRequest, on connection: PostgresConnection?, fence commit: CommitFence
    ) async throws
        -> PersistenceError?
    {
        let queryLogger = self.queryLogger
        let table = self.table
        let version = SessionRowFormat.currentVersion
        let keyCheck = format.keyCheck
        let bytes = ByteBuffer(bytes: request.payload)
        let take = request.take
        if let attemptHook = configuration.testHooks.fencedWriteAttempt { await attemptHook() }
        if configuration.testHooks.failsFencedWrite?() == true { throw InjectedWriteFailure() }
        let write: @Sendable (PostgresConnection) async throws -> PersistenceError? = { connection in
            try await connection.withTransaction(logger: queryLogger) { connection -> PersistenceError? in
                let rows = try await connection.query(
                    """
                    SELECT generation, session_id, format_version, key_check, lease_owner, lease_fence,
                        payload = \(bytes)
                    FROM \(unescaped: table) WHERE account = \(request.account) FOR UPDATE
                    """, logger: queryLogger)
                var found: (Header, String?, Int64, Bool)?
                for try await (generation, sessionID, formatVersion, storedKeyCheck, owner, fence, same) in rows.decode(
                    (Int64, String?, Int32, String?, String?, Int64, Bool).self)
                {
                    found = (
                        Header(
                            generation: UInt64(bitPattern: generation), sessionID: sessionID,
                            formatVersion: formatVersion, keyCheck: storedKeyCheck), owner, fence, same
                    )
                }
                // The row went (a sign-out elsewhere): the lease went with it.
                guard let (header, owner, fence, same) = found else { return .conflict }
                // An earlier attempt landed, and its answer was lost: this attempt's answer is the save's.
                if same, header.generation == UInt64(bitPattern: request.generation), fence == take.fence {
                    guard commit.claimCommit(.alreadyStored) else { throw WithdrawnAttempt() }
                    return nil
                }
                if let refusal = self.unreadable(header) { return refusal }
                guard owner == take.owner, fence == take.fence else { return .conflict }
                guard request.condition.allows(generation: header.generation, sessionID: header.sessionID) else {
                    return .conflict
                }
                let updated = try await connection.query(
                    """
                    UPDATE \(unescaped: table) SET generation = \(request.generation),
                        session_id = \(request.session.sessionID), format_version = \(version),
                        key_check = \(keyCheck), payload = \(bytes), updated_at = now(),
                        lease_owner = NULL, lease_expires_at = NULL
                    WHERE account = \(request.account)
                    RETURNING txid_current()
                    """, logger: queryLogger)
                let transaction = try await Self.transactionID(updated)
                guard commit.claimCommit(.transaction(transaction)) else { throw WithdrawnAttempt() }
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
        let take = lease.take
        let refusal = try await withSessionConnection { connection in
            try await connection.withTransaction(logger: queryLogger) { connection -> PersistenceError? in
                let rows = try await connection.query(
                    """
                    SELECT generation, session_id, format_version, key_check, lease_owner, lease_fence
                    FROM \(unescaped: table) WHERE account = \(account) FOR UPDATE
                    """, logger: queryLogger)
                var found: (Header, String?, Int64)?
                for try await (generation, sessionID, formatVersion, storedKeyCheck, owner, fence) in rows.decode(
                    (Int64, String?, Int32, String?, String?, Int64).self)
                {
                    found = (
                        Header(
                            generation: UInt64(bitPattern: generation), sessionID: sessionID,
                            formatVersion: formatVersion, keyCheck: storedKeyCheck), owner, fence
                    )
                }
                guard let (header, owner, fence) = found else { return nil }
                if condition != .always, let refusal = self.unreadable(header) { return refusal }
                guard owner == take.owner, fence == take.fence else { return .conflict }
                guard condition.allows(generation: header.generation, sessionID: header.sessionID) else {
                    return .conflict
                }
                try await connection.query(
                    "DELETE FROM \(unescaped: table) WHERE account = \(account)", logger: queryLogger)
                return nil
            }
        }
        if refusal == nil {
            lease.markEnded(byOwnWrite: true, take: take)
        } else if refusal == .conflict {
            lease.markEnded(take: take)
        }
        return refusal
    }
}
#endif
