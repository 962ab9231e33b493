// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
public import Crypto
import Foundation
public import Logging
import NIOCore
public import Persistence
public import PostgresNIO

/// A token store that keeps one row per account in a PostgreSQL table, so that the replicas of a backend share
/// sessions and refresh each one once.
///
/// Writes are conditional on the session's identity and generation, in one statement; a database that cannot be reached reads as
/// `.unavailable`, never `.absent`; under ``withExclusiveAccess(account:_:)`` a lease in the account's row keeps every
/// other replica from presenting the refresh token; a refreshed pair is stored, or its outcome is reported unknown; no
/// token text is logged. The store borrows the app's `PostgresClient`, which the app runs:
///
/// ```swift
/// let store = PostgresTokenStore(client: client)
/// let refresher = TokenRefreshClient(strategy: strategy, store: store, configuration: .init(account: userID))
/// ```
///
/// Each guarantee in full, the table, and why the lock is a lease: <doc:SharingSessionsAcrossReplicas>.
public struct PostgresTokenStore: TokenStore {
    /// Options for a ``PostgresTokenStore``.
    public struct Configuration: Sendable {
        /// The table holding the sessions, optionally schema-qualified (`auth.sessions`). Letters, digits and
        /// underscores only, starting with a letter or underscore; it is part of the SQL text, never a parameter.
        public var tableName: String
        /// A key to seal sessions with AES-GCM (128, 192 or 256 bits), or `nil` to store plain JSON.
        public var encryptionKey: SymmetricKey?
        /// The longest wait for another holder of the account's lock or lease before
        /// ``withExclusiveAccess(account:_:)`` gives up with ``/Persistence/PersistenceError/lockTimedOut``;
        /// `nil` waits without limit. Database errors meanwhile are retried until it has passed (then
        /// ``/Persistence/PersistenceError/lockFailed``), so a restart shorter than this fails no refresh.
        public var lockTimeout: Duration?
        /// The longest wait for the account's lock while its holder is seen at work: another replica whose refresh
        /// lease is live (renewed by its heartbeat, so its refresh is in flight). 30 s by default, the
        /// `TokenRefreshClient`'s default refresh timeout: a token endpoint slower than ``lockTimeout`` is waited for,
        /// and the waiter then reads the pair the holder stored instead of failing. A holder whose lease has lapsed
        /// (its process stopped) is waited for ``lockTimeout`` only. It has no effect when ``lockTimeout`` is `nil`
        /// or longer.
        public var liveHolderTimeout: Duration
        /// How often (at most) a waiter asks PostgreSQL for the lock and the lease again.
        public var lockRetryInterval: Duration
        /// The longest an operation waits for the database (a pooled connection and the query) before a read
        /// reports `.unavailable` and a write fails; `nil` waits as long as the pool does. A write whose `COMMIT` was
        /// sent waits at most this long again for the answer, and this long again to learn from the database
        /// whether it took effect.
        public var operationTimeout: Duration?
        /// Whether the first operation runs ``PostgresTokenStore/migrate()`` (once per store value and its copies).
        public var migratesAutomatically: Bool
        /// A secret shared by the deployment's replicas that the advisory lock keys are derived with (an
        /// HMAC-SHA-256 of the table and the account), or `nil` to derive them from the table and the account alone.
        ///
        /// PostgreSQL advisory locks belong to the whole database: any role that can connect can take any key. Without
        /// a secret, a role that knows an account's name can compute its key and hold the lock, so that account's
        /// refreshes wait ``lockTimeout`` and fail transiently (the session is kept). With a secret that role cannot
        /// compute keys, but it can still see the keys held at the moment in `pg_locks` (not which account they
        /// belong to) and take one of them once it is free. Give the token table a database of its own, or a
        /// database that untrusted roles cannot connect to, to rule that out.
        public var lockKeySecret: SymmetricKey?
        /// How long a refresh lease lasts without renewal. The holder renews it every third of this while its
        /// refresh runs, so the lease outlives the holder's connection, its advisory lock and a database restart,
        /// and ends this long after a holder that died (or lost the database for longer) last renewed it.
        ///
        /// Keep it shorter than ``lockTimeout``: a holder killed before the token server answered is then taken over
        /// within a waiter's wait. Keep it longer than the longest database outage a refresh should survive: a live
        /// holder must reach the database at least once per lease.
        public var leaseDuration: Duration
        /// Switches for tests: the lease heartbeat off, and a callback per lock attempt.
        package var testHooks = TestHooks()

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - tableName: The table holding the sessions; `tokenkit_sessions` by default.
        ///   - encryptionKey: A key to seal sessions with, or `nil` for plain JSON.
        ///   - lockTimeout: The longest wait for the account's lock; 5 s by default.
        ///   - lockRetryInterval: How often a waiter asks for the lock again; 20 ms by default.
        ///   - operationTimeout: The longest wait for the database per operation; 5 s by default.
        ///   - migratesAutomatically: Whether the first operation creates the table if needed.
        ///   - lockKeySecret: A secret shared by the replicas to derive advisory lock keys with, or `nil`.
        ///   - leaseDuration: How long a refresh lease lasts without renewal; 3 s by default (renewed every 1 s, so a
        ///     database outage of up to 2 s is survived, and a dead holder is taken over within 3 s, inside the
        ///     default 5-s lock wait).
        ///   - liveHolderTimeout: The longest wait for a holder whose lease is live; 30 s by default.
        public init(
            tableName: String = "tokenkit_sessions",
            encryptionKey: SymmetricKey? = nil,
            lockTimeout: Duration? = .seconds(5),
            lockRetryInterval: Duration = .milliseconds(20),
            operationTimeout: Duration? = .seconds(5),
            migratesAutomatically: Bool = true,
            lockKeySecret: SymmetricKey? = nil,
            leaseDuration: Duration = .seconds(3),
            liveHolderTimeout: Duration = .seconds(30)
        ) {
            self.tableName = tableName
            self.encryptionKey = encryptionKey
            self.lockTimeout = lockTimeout
            self.lockRetryInterval = lockRetryInterval
            self.operationTimeout = operationTimeout
            self.migratesAutomatically = migratesAutomatically
            self.lockKeySecret = lockKeySecret
            self.leaseDuration = max(leaseDuration, .milliseconds(3))
            self.liveHolderTimeout = liveHolderTimeout
        }
    }

    /// The client (connection pool) the store queries through.
    public let client: PostgresClient
    /// The store's options.
    public let configuration: Configuration
    /// Where debug and trace messages go. Nothing from a session's tokens is ever logged.
    let logger: Logger
    /// The logger handed to PostgresNIO with each query: ``logger`` raised to `debug` at least, because PostgresNIO
    /// logs the bytes of the rows it sends and receives (the session's tokens) at `trace`.
    let queryLogger: Logger

    let format: SessionRowFormat
    let timer: StoreClock
    let schema = SchemaState()
    /// Saves under a lease still going on in the background, for the caller's later retry of the same pair.
    let unstored = UnstoredPairs()
    /// This store value's part of a lease owner (`lease_owner`); each acquisition adds a nonce.
    let instanceID = UUID().uuidString.lowercased()

    /// Creates a store over the app's client. Nothing is queried until the first operation (or ``migrate()``).
    ///
    /// The app must run `client` (`client.run()` in a long-running task or a `ServiceGroup`).
    ///
    /// - Parameters:
    ///   - client: The app's PostgreSQL client; its pool is shared with the app.
    ///   - configuration: Table name, encryption and timeouts.
    ///   - clock: The clock for lock waits, timeouts, retries and lease renewals (the lease's expiry itself is on the
    ///     database's clock).
    ///   - logger: Where debug and trace messages go (never token text).
    /// - Precondition: ``Configuration/tableName`` is a plain or schema-qualified SQL identifier.
    public init(
        client: PostgresClient, configuration: Configuration = Configuration(),
        clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "TokenKit.Persistence.PostgresTokenStore")
    ) {
        precondition(
            Self.isPlainIdentifier(configuration.tableName),
            "PostgresTokenStore: the table name must be letters, digits and underscores (optionally schema.table)")
        self.client = client
        self.configuration = configuration
        self.logger = logger
        var queryLogger = logger
        if queryLogger.logLevel < .debug { queryLogger.logLevel = .debug }
        self.queryLogger = queryLogger
        self.format = SessionRowFormat(key: configuration.encryptionKey)
        self.timer = StoreClock(clock)
    }

    // MARK: TokenStore

    /// Reads the session stored for `account`.
    ///
    /// - Parameter account: The account key.
    /// - Returns: `.found`; `.absent` when the table has no row for the account; `.unavailable` when the
    ///   database cannot be reached or answered an error (``/Persistence/PersistenceError/unavailable``), or the
    ///   row cannot be read by this store (``/Persistence/PersistenceError/wrongKey``,
    ///   ``/Persistence/PersistenceError/unsupportedFormatVersion``, ``/Persistence/PersistenceError/corrupt``; the
    ///   row is left as it is).
    public func load(account: String) async -> TokenStoreRead {
        if let held = HeldAdvisoryLock.current, held.client == ObjectIdentifier(client),
            let lease = held.leases[account]
        {
            return await loadUnderLease(account: account, lease: lease)
        }
        let row: Row?
        do {
            row = try await database(.unavailable) { try await self.fetchRow(account: account) }
        } catch {
            logger.debug("session row unavailable", metadata: ["error": "\(error)"])
            return .unavailable(error)
        }
        guard let row else { return .absent }
        return decode(row, account: account)
    }

    /// The session in `row`, or why this store cannot read it.
    func decode(_ row: Row, account: String) -> TokenStoreRead {
        let read = format.decode(
            account: account, generation: row.generation, sessionID: row.sessionID, formatVersion: row.formatVersion,
            keyCheck: row.keyCheck, payload: row.payload)
        if case .unavailable(let error) = read {
            logger.debug("session row unreadable", metadata: ["error": "\(error)"])
        }
        return read
    }

    /// Stores `session` for `account` if `condition` holds.
    ///
    /// The check and the write run in one transaction holding the row lock, so two replicas writing with the same condition
    /// cannot both succeed. Under ``withExclusiveAccess(account:_:)``, or for a later save of the same session, the save is
    /// fenced by the lease and retried until it lands or is refused (<doc:SharingSessionsAcrossReplicas>). Any other save
    /// ends whatever lease the row carries.
    ///
    /// - Parameters:
    ///   - session: The session to store.
    ///   - account: The account key.
    ///   - condition: When the write may happen, judged under the row lock.
    /// - Throws: ``/Persistence/PersistenceError/conflict`` when the condition fails;
    ///   ``/Persistence/PersistenceError/wrongKey`` or ``/Persistence/PersistenceError/unsupportedFormatVersion``
    ///   when the stored row cannot be read by this store (it is left as it is);
    ///   ``/Persistence/PersistenceError/writeFailed`` when the database cannot be reached or fails, with what was
    ///   stored before intact, and never landing afterwards, unless its detail says the outcome is unknown (a commit
    ///   sent and not answered, which the database could not settle in time).
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        let payload = try format.encode(session, account: account)
        let generation = Int64(bitPattern: session.generation)
        let sessionID = session.sessionID
        if let held = HeldAdvisoryLock.current, held.client == ObjectIdentifier(client),
            let lease = held.leases[account]
        {
            try await fencedSave(
                WriteRequest(account: account, session: session, payload: payload, condition: condition, lease: lease),
                lockConnection: held.connection)
            logger.debug(
                "session saved under the lease",
                metadata: ["generation": "\(session.generation)", "token": "\(session.token.fingerprint)"])
            return
        }
        if let (request, outcome) = unstored.claim(account: account, session: session) {
            // A retry of a pair whose save under a lease failed: under that lease, never outside it.
            try await saveUnstored(request, outcome: outcome)
            logger.debug(
                "session saved under the lease it was refreshed in",
                metadata: ["generation": "\(session.generation)", "token": "\(session.token.fingerprint)"])
            return
        }
        let fence = CommitFence()
        let outcome: PersistenceError?
        do {
            outcome = try await database(.writeFailed, fence: fence) {
                try await self.write(
                    account: account, generation: generation, sessionID: sessionID, payload: payload,
                    condition: condition, fence: fence)
            }
        } catch {
            try await settleFailedWrite(error, fence: fence)
            outcome = nil
        }
        if let refusal = outcome { throw refusal }
        logger.debug(
            "session saved", metadata: ["generation": "\(session.generation)", "token": "\(session.token.fingerprint)"])
    }

    /// Removes the session for `account` if `condition` holds.
    ///
    /// With ``/Persistence/WriteCondition/always`` the row goes whatever it holds (a row sealed with another key
    /// included); with another condition, a row this store cannot read is left and its error thrown. Inside
    /// ``withExclusiveAccess(account:_:)`` the removal is fenced by the lease like a save.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen, judged under the row lock.
    /// - Throws: ``/Persistence/PersistenceError/conflict`` when the condition fails;
    ///   ``/Persistence/PersistenceError/writeFailed`` when the database cannot be reached or fails, with what was
    ///   stored before intact. A removal reported failed does not land afterwards (and delete a session stored
    ///   since, a later sign-in's): an attempt still held in the database when its time is up rolls back. The one
    ///   exception is an attempt that sent its commit and got no answer, when the database could not tell within
    ///   one more ``Configuration/operationTimeout`` whether that commit took effect: the detail then says the
    ///   outcome is unknown, and the session may be removed (a commit that did take effect is reported as a
    ///   removal).
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        if let lease = HeldAdvisoryLock.current.flatMap({
            $0.client == ObjectIdentifier(client) ? $0.leases[account] : nil
        }) {
            // Fenced by the lease: a late attempt finds the lease ended by any write since, and is refused.
            let outcome = try await database(.writeFailed) {
                try await self.fencedDelete(account: account, condition: condition, lease: lease)
            }
            if let refusal = outcome { throw refusal }
            logger.debug("session removed under the lease")
            return
        }
        let fence = CommitFence()
        let outcome: PersistenceError?
        do {
            outcome = try await database(.writeFailed, fence: fence) {
                try await self.delete(account: account, condition: condition, fence: fence)
            }
        } catch {
            try await settleFailedWrite(error, fence: fence, removal: true)
            outcome = nil
        }
        if let refusal = outcome { throw refusal }
        logger.debug("session removed")
    }

    /// Creates the table (and the pending sign-outs' table beside it, `<table>_sign_outs`) if it does not exist, and
    /// adds the lease columns to a table an earlier version made.
    /// Idempotent, and safe to run from several replicas at once.
    ///
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the database cannot be reached or refuses
    ///   (the detail names the SQLSTATE, a permission error say).
    public func migrate() async throws(PersistenceError) {
        try await database(.unavailable, migrating: true) { try await self.createTable() }
        schema.markDone()
    }

    // MARK: Internals

    /// A row as stored.
    struct Row: Sendable {
        let generation: UInt64
        /// The session's identity (`session_id`; `NULL` for a row written before identities).
        let sessionID: String?
        let formatVersion: Int32
        let keyCheck: String?
        let payload: [UInt8]
    }

    /// The table name as SQL text (validated at init).
    var table: String { configuration.tableName }

    /// Runs a database operation under ``Configuration/operationTimeout`` (creating the table first when due),
    /// turning any failure into `failure` with a secret-free detail.
    func database<T: Sendable>(
        _ failure: PersistenceError, migrating: Bool = false, fence: CommitFence? = nil,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws(PersistenceError) -> T {
        let timeout = configuration.operationTimeout
        let needsSchema = !migrating && configuration.migratesAutomatically && !schema.isDone
        do {
            let result = try await withDeadline(timeout, fence: fence, sleep: timer.sleep) {
                if needsSchema { try await self.createTable() }
                return try await body()
            }
            if needsSchema { schema.markDone() }
            return result
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw failure.with(detail: Self.describe(error, timeout: timeout))
        }
    }

    /// A write through ``database(_:migrating:fence:_:)`` that failed with `error`: stored (or, for a `removal`,
    /// removed) after all when its attempt had sent its commit and the database says the commit took effect; else
    /// `error`, whose detail then says when the outcome is unknown.
    func settleFailedWrite(
        _ error: PersistenceError, fence: CommitFence, removal: Bool = false
    ) async throws(PersistenceError) {
        switch await commitOutcome(of: fence) {
        case .landed:
            logger.debug("a \(removal ? "removal" : "save") landed though the database's answer to its commit was lost")
        case .unknown:
            let unknown = removal ? Self.removalOutcomeUnknown : Self.outcomeUnknown
            throw error.with(detail: "\(error.detail ?? "failed"); \(unknown)")
        case .notSent, .rolledBack:
            throw error
        }
    }

    /// The detail of a save whose commit was sent without an answer, and which the database could not settle.
    static let outcomeUnknown = "its commit was sent and its outcome is unknown: the session may be stored"
    /// The detail of a removal whose commit was sent without an answer, and which the database could not settle.
    static let removalOutcomeUnknown = "its commit was sent and its outcome is unknown: the session may be removed"

    /// What became of a write attempt that failed or went unanswered.
    enum CommitOutcome: Sendable {
        /// It had not sent its commit: it rolled back.
        case notSent
        /// Its commit took effect (or an earlier attempt's had).
        case landed
        /// Its transaction rolled back.
        case rolledBack
        /// Not learned within ``Configuration/operationTimeout``: its transaction is still open in the database, or
        /// the database could not be asked.
        case unknown
    }

    /// What became of the attempt `fence` watched, asking the database about its transaction (`txid_status`) within
    /// ``Configuration/operationTimeout`` when it had sent its commit. Not cut short by the caller's cancellation.
    func commitOutcome(of fence: CommitFence) async -> CommitOutcome {
        switch fence.claim {
        case nil:
            return .notSent
        case .alreadyStored:
            return .landed
        case .transaction(let transaction):
            return await Task { await self.transactionOutcome(transaction) }.value
        }
    }

    private func transactionOutcome(_ transaction: Int64) async -> CommitOutcome {
        let bound = configuration.operationTimeout ?? .seconds(5)
        let started = timer.elapsed()
        let queryLogger = self.queryLogger
        let checkHook = configuration.testHooks.commitOutcomeCheck
        var pause = Duration.milliseconds(10)
        while true {
            let left = bound - (timer.elapsed() - started)
            guard left > .zero else { return .unknown }
            if let checkHook { await checkHook() }
            let status = try? await withDeadline(left, sleep: timer.sleep) {
                try await self.client.withConnection { connection -> String? in
                    let rows = try await connection.query("SELECT txid_status(\(transaction))", logger: queryLogger)
                    for try await status in rows.decode(String?.self) { return status }
                    return nil
                }
            }
            switch status {
            case "committed": return .landed
            case "aborted": return .rolledBack
            default: break  // still in progress, or not asked
            }
            do {
                try await timer.sleep(min(pause, max(bound - (timer.elapsed() - started), .zero)))
            } catch {
                return .unknown
            }
            pause = min(pause * 2, .milliseconds(200))
        }
    }

    /// The transaction ID a write's `RETURNING txid_current()` answered.
    static func transactionID(_ rows: PostgresRowSequence) async throws -> Int64 {
        for try await transaction in rows.decode(Int64.self) { return transaction }
        throw NoTransactionID()
    }

    /// A write's `RETURNING txid_current()` answered no row.
    struct NoTransactionID: Error {}

    private func fetchRow(account: String) async throws -> Row? {
        try await withSessionConnection { connection in try await self.fetchRow(account: account, on: connection) }
    }

    private func fetchRow(account: String, on connection: PostgresConnection) async throws -> Row? {
        let rows = try await connection.query(
            """
            SELECT generation, session_id, format_version, key_check, payload FROM \(unescaped: table)
            WHERE account = \(account)
            """, logger: queryLogger)
        for try await (generation, sessionID, version, keyCheck, payload) in rows.decode(
            (Int64, String?, Int32, String?, ByteBuffer).self)
        {
            return Row(
                generation: UInt64(bitPattern: generation), sessionID: sessionID, formatVersion: version,
                keyCheck: keyCheck, payload: Array(payload.readableBytesView))
        }
        return nil
    }

    /// The stored row's generation, format and key check, locked until the transaction ends.
    struct Header: Sendable {
        let generation: UInt64
        let sessionID: String?
        let formatVersion: Int32
        let keyCheck: String?
    }

    func lockedHeader(account: String, on connection: PostgresConnection) async throws -> Header? {
        let rows = try await connection.query(
            """
            SELECT generation, session_id, format_version, key_check FROM \(unescaped: table)
            WHERE account = \(account) FOR UPDATE
            """, logger: queryLogger)
        for try await (generation, sessionID, version, keyCheck) in rows.decode((Int64, String?, Int32, String?).self) {
            return Header(
                generation: UInt64(bitPattern: generation), sessionID: sessionID, formatVersion: version,
                keyCheck: keyCheck)
        }
        return nil
    }

    /// Why this store may not write over `header`'s row, if it may not: a newer format or another key.
    func unreadable(_ header: Header) -> PersistenceError? {
        if header.formatVersion > SessionRowFormat.currentVersion {
            return PersistenceError.unsupportedFormatVersion.with(detail: "row format \(header.formatVersion)")
        }
        if header.keyCheck != format.keyCheck {
            return PersistenceError.wrongKey.with(detail: "the stored row is sealed differently; it is left as it is")
        }
        return nil
    }

    /// Writes the row if `condition` holds; the refusal when it does not. Rolled back when `fence` was withdrawn.
    private func write(
        account: String, generation: Int64, sessionID: String?, payload: [UInt8], condition: WriteCondition,
        fence: CommitFence
    ) async throws -> PersistenceError? {
        let version = SessionRowFormat.currentVersion
        let keyCheck = format.keyCheck
        let bytes = ByteBuffer(bytes: payload)
        let queryLogger = queryLogger
        return try await withSessionConnection { connection in
            try await connection.withTransaction(logger: queryLogger) { connection -> PersistenceError? in
                let header = try await self.lockedHeader(account: account, on: connection)
                if let header, let refusal = self.unreadable(header) { return refusal }
                guard condition.allows(generation: header?.generation, sessionID: header?.sessionID) else {
                    return .conflict
                }
                if header != nil {
                    let rows = try await connection.query(
                        """
                        UPDATE \(unescaped: self.table) SET generation = \(generation), session_id = \(sessionID),
                            format_version = \(version),
                            key_check = \(keyCheck), payload = \(bytes), updated_at = now(),
                            lease_owner = NULL, lease_expires_at = NULL
                        WHERE account = \(account)
                        RETURNING txid_current()
                        """, logger: queryLogger)
                    let transaction = try await Self.transactionID(rows)
                    guard fence.claimCommit(.transaction(transaction)) else { throw WithdrawnAttempt() }
                    return nil
                }
                // No row to lock: a concurrent insert may win the race, and then this one is the conflict.
                let rows = try await connection.query(
                    """
                    INSERT INTO \(unescaped: self.table)
                        (account, generation, session_id, format_version, key_check, payload)
                    VALUES (\(account), \(generation), \(sessionID), \(version), \(keyCheck), \(bytes))
                    ON CONFLICT (account) DO NOTHING
                    RETURNING txid_current()
                    """, logger: queryLogger)
                var inserted: Int64?
                for try await transaction in rows.decode(Int64.self) { inserted = transaction }
                guard let inserted else { return PersistenceError.conflict }
                guard fence.claimCommit(.transaction(inserted)) else { throw WithdrawnAttempt() }
                return nil
            }
        }
    }

    /// Deletes the row if `condition` holds; the refusal when it does not. Rolled back when `fence` was withdrawn.
    private func delete(
        account: String, condition: WriteCondition, fence: CommitFence
    ) async throws -> PersistenceError? {
        let queryLogger = queryLogger
        let attemptHook = configuration.testHooks.removalAttempt
        return try await withSessionConnection { connection in
            try await connection.withTransaction(logger: queryLogger) { connection -> PersistenceError? in
                if let attemptHook { try await attemptHook(connection) }
                let header = try await self.lockedHeader(account: account, on: connection)
                if condition != .always, let header, let refusal = self.unreadable(header) { return refusal }
                guard condition.allows(generation: header?.generation, sessionID: header?.sessionID) else {
                    return .conflict
                }
                guard header != nil else { return nil }
                let rows = try await connection.query(
                    "DELETE FROM \(unescaped: self.table) WHERE account = \(account) RETURNING txid_current()",
                    logger: queryLogger)
                let transaction = try await Self.transactionID(rows)
                guard fence.claimCommit(.transaction(transaction)) else { throw WithdrawnAttempt() }
                return nil
            }
        }
    }

    func createTable() async throws {
        try await client.withConnection { connection in try await self.createTable(on: connection) }
    }

    /// Creates the table (and the pending sign-outs' table beside it), or adds the lease columns to a table made by
    /// an earlier version.
    func createTable(on connection: PostgresConnection) async throws {
        let lockKey = SessionRowFormat.lockKey(
            table: table, account: "\u{0}schema", secret: configuration.lockKeySecret)
        try await connection.withTransaction(logger: queryLogger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: queryLogger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                    account text PRIMARY KEY,
                    generation bigint NOT NULL,
                    format_version integer NOT NULL,
                    key_check text,
                    payload bytea NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    lease_owner text,
                    lease_fence bigint NOT NULL DEFAULT 0,
                    lease_expires_at timestamptz,
                    session_id text
                )
                """, logger: queryLogger)
            try await self.createSignOutTable(on: connection)
            // ALTER TABLE locks the whole table even when it changes nothing: only when a column is missing.
            let rows = try await connection.query(
                """
                SELECT count(*) FROM pg_attribute
                WHERE attrelid = to_regclass(\(table)) AND NOT attisdropped
                    AND attname IN ('lease_owner', 'lease_fence', 'lease_expires_at', 'session_id')
                """, logger: queryLogger)
            var present = 0
            for try await count in rows.decode(Int64.self) { present = Int(count) }
            if present < 4 {
                try await connection.query(
                    """
                    ALTER TABLE \(unescaped: table)
                        ADD COLUMN IF NOT EXISTS lease_owner text,
                        ADD COLUMN IF NOT EXISTS lease_fence bigint NOT NULL DEFAULT 0,
                        ADD COLUMN IF NOT EXISTS lease_expires_at timestamptz,
                        ADD COLUMN IF NOT EXISTS session_id text
                    """, logger: queryLogger)
            }
        }
    }

    static func isPlainIdentifier(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return false }
        return parts.allSatisfy { part in
            guard let first = part.unicodeScalars.first, first == "_" || ("a"..."z").contains(first) else {
                return false
            }
            return part.count <= 63
                && part.unicodeScalars.allSatisfy { $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }
        }
    }

    /// A secret-free description of a database failure: the error's kind and SQLSTATE, never its query or binds.
    static func describe(_ error: any Error, timeout: Duration?) -> String {
        switch error {
        case is DeadlineExceeded:
            return "no answer from the database within \(timeout.map { "\($0)" } ?? "the timeout")"
        case is CommitUnanswered:
            return "no answer to the commit within \(timeout.map { "\($0)" } ?? "the timeout") more"
        case is CancellationError:
            return "cancelled"
        case let error as PostgresTransactionError:
            let inner = error.beginError ?? error.closureError ?? error.commitError
            return inner.map { describe($0, timeout: timeout) } ?? "postgres: transaction failed"
        case let error as PSQLError:
            if let state = error.serverInfo?[.sqlState] { return "postgres: \(error.code) SQLSTATE \(state)" }
            return "postgres: \(error.code)"
        default:
            return "postgres: \(type(of: error))"
        }
    }
}

/// Whether the table has been created by this store value (or a copy of it).
final class SchemaState: Sendable {
    private let done = LockedValue(false)
    var isDone: Bool { done.withLock { $0 } }
    func markDone() { done.withLock { $0 = true } }
}
#endif
