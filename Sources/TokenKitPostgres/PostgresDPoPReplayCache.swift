// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
public import Foundation
public import Logging
import Persistence
public import PostgresNIO
public import TokenVerification

/// A ``/TokenVerification/DPoPReplayCache`` in a PostgreSQL table, shared by every replica of a backend: a DPoP
/// proof accepted by one replica is refused as a replay by all the others.
///
/// ```swift
/// let replayCache = PostgresDPoPReplayCache(client: client)
/// try await replayCache.migrate()
/// let proofs = DPoPVerifier(replayCache: replayCache)
/// ```
///
/// Each spend is one statement, `INSERT ... ON CONFLICT DO NOTHING RETURNING`, keyed by the proof key's thumbprint
/// and the `jti`: of two replicas spending the same proof at once, exactly one gets the row, whatever the timing.
/// A row lives until the proof's expiry; rows past it are deleted every ``Configuration/pruneInterval`` by the
/// spend that finds the interval over (in the background, so no request waits for it) and by ``prune(now:)``. A
/// database that cannot answer within ``Configuration/operationTimeout`` makes the spend throw, so the proof is
/// refused with a 503 (fail closed). No `jti`, key or token is logged.
public struct PostgresDPoPReplayCache: DPoPReplayCache {
    /// Options for a ``PostgresDPoPReplayCache``.
    public struct Configuration: Sendable {
        /// The table, optionally schema-qualified; letters, digits and underscores only. Default
        /// `tokenkit_dpop_proofs`.
        public var tableName: String
        /// The longest a spend waits for the database before it throws; `nil` waits as long as the pool does.
        /// Default 2 seconds.
        public var operationTimeout: Duration?
        /// How often expired rows are deleted; `nil` leaves it to ``PostgresDPoPReplayCache/prune(now:)``.
        /// Default 60 seconds.
        public var pruneInterval: Duration?
        /// Whether the first spend creates the table when needed (once per cache value and its copies). Default
        /// `true`.
        public var migratesAutomatically: Bool

        /// A configuration.
        ///
        /// - Parameters:
        ///   - tableName: The table.
        ///   - operationTimeout: The longest wait per spend.
        ///   - pruneInterval: How often expired rows are deleted, or `nil`.
        ///   - migratesAutomatically: Whether the first spend creates the table.
        public init(
            tableName: String = "tokenkit_dpop_proofs", operationTimeout: Duration? = .seconds(2),
            pruneInterval: Duration? = .seconds(60), migratesAutomatically: Bool = true
        ) {
            self.tableName = tableName
            self.operationTimeout = operationTimeout
            self.pruneInterval = pruneInterval
            self.migratesAutomatically = migratesAutomatically
        }
    }

    /// The client (connection pool) the cache queries through; the app runs it.
    public let client: PostgresClient
    /// The options.
    public let configuration: Configuration
    private let queryLogger: Logger
    private let timer: StoreClock
    private let schema = SchemaState()
    private let lastPrune = LockedValue<Date?>(nil)

    /// A cache over the app's client. Nothing is queried until the first spend (or ``migrate()``).
    ///
    /// - Parameters:
    ///   - client: The app's PostgreSQL client.
    ///   - configuration: Table name and timeouts.
    ///   - clock: The clock of ``Configuration/operationTimeout``.
    ///   - logger: Where PostgresNIO's query messages go (raised to `debug` at least).
    /// - Precondition: ``Configuration/tableName`` is a plain or schema-qualified SQL identifier.
    public init(
        client: PostgresClient, configuration: Configuration = Configuration(),
        clock: some Clock<Duration> = ContinuousClock(),
        logger: Logger = Logger(label: "TokenKit.Verification.PostgresDPoPReplayCache")
    ) {
        precondition(
            PostgresTokenStore.isPlainIdentifier(configuration.tableName),
            "PostgresDPoPReplayCache: the table name must be letters, digits and underscores (optionally schema.table)")
        self.client = client
        self.configuration = configuration
        var queryLogger = logger
        if queryLogger.logLevel < .debug { queryLogger.logLevel = .debug }
        self.queryLogger = queryLogger
        timer = StoreClock(clock)
    }

    /// Spends the proof: one atomic insert, first writer wins.
    ///
    /// - Parameters:
    ///   - keyThumbprint: The proof key's thumbprint.
    ///   - jwtID: The proof's `jti`.
    ///   - expiry: How long the row must live.
    ///   - now: The verifier's time, which decides when expired rows are pruned.
    /// - Returns: `true` if this call inserted the row; `false` if it was there (a replay).
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the database cannot answer in time.
    public func spend(keyThumbprint: String, jwtID: String, until expiry: Date, now: Date) async throws -> Bool {
        let table = configuration.tableName
        let needsSchema = configuration.migratesAutomatically && !schema.isDone
        let inserted = try await database {
            if needsSchema { try await self.createTable() }
            let rows = try await self.client.query(
                """
                INSERT INTO \(unescaped: table) (jkt, jti, expires_at) VALUES (\(keyThumbprint), \(jwtID), \(expiry))
                ON CONFLICT (jkt, jti) DO NOTHING RETURNING 1
                """, logger: self.queryLogger)
            var inserted = false
            for try await _ in rows { inserted = true }
            return inserted
        }
        if needsSchema { schema.markDone() }
        if let interval = configuration.pruneInterval, pruneIsDue(now: now, interval: interval) {
            Task { [self] in _ = try? await self.prune(now: now) }
        }
        return inserted
    }

    /// Deletes the rows whose expiry has passed.
    ///
    /// - Parameter now: The time to compare expiries with.
    /// - Returns: How many rows were deleted.
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the database cannot answer in time.
    @discardableResult
    public func prune(now: Date) async throws -> Int {
        let table = configuration.tableName
        return try await database {
            let rows = try await self.client.query(
                "WITH gone AS (DELETE FROM \(unescaped: table) WHERE expires_at < \(now) RETURNING 1) SELECT count(*) FROM gone",
                logger: self.queryLogger)
            var count = 0
            for try await value in rows.decode(Int64.self) { count = Int(value) }
            return count
        }
    }

    /// Creates the table and its expiry index if they do not exist; idempotent, and safe from several replicas
    /// at once.
    ///
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the database cannot be reached or refuses.
    public func migrate() async throws {
        try await database { try await self.createTable() }
        schema.markDone()
    }

    private func createTable() async throws {
        let table = configuration.tableName
        let index = (table.split(separator: ".").last.map(String.init) ?? table) + "_expires_at"
        try await client.withConnection { connection in
            try await connection.withTransaction(logger: self.queryLogger) { connection in
                try await connection.query(
                    "SELECT pg_advisory_xact_lock(hashtext(\("tokenkit-dpop:" + table)))", logger: self.queryLogger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                        jkt text NOT NULL,
                        jti text NOT NULL,
                        expires_at timestamptz NOT NULL,
                        PRIMARY KEY (jkt, jti)
                    )
                    """, logger: self.queryLogger)
                try await connection.query(
                    "CREATE INDEX IF NOT EXISTS \(unescaped: index) ON \(unescaped: table) (expires_at)",
                    logger: self.queryLogger)
            }
        }
    }

    /// Whether this spend should start a prune: the first one, and then one per interval.
    private func pruneIsDue(now: Date, interval: Duration) -> Bool {
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        return lastPrune.withLock { last in
            if let previous = last, now.timeIntervalSince(previous) < seconds, now >= previous { return false }
            last = now
            return true
        }
    }

    /// Runs `body` under the operation timeout, turning any failure into `unavailable` with a secret-free detail.
    private func database<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let timeout = configuration.operationTimeout
        do {
            return try await withDeadline(timeout, sleep: timer.sleep, body)
        } catch {
            throw PersistenceError.unavailable.with(detail: PostgresTokenStore.describe(error, timeout: timeout))
        }
    }
}
#endif
