import DemoAuthServer
import Foundation
import PostgresNIO
import Synchronization
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitPostgres

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ChildProcessTests {
    /// Replicas of a backend: four `session-worker` processes, each with its own PostgreSQL connection pool, share
    /// one session row in a real PostgreSQL and one demo server with reuse detection on and no grace window, where a
    /// second refresh with the same refresh token would revoke the session. The advisory lock and the re-read
    /// after taking it must make each expiry cost one refresh, when the lock holder is killed mid-refresh, and
    /// across a database restart (issue 18).
    @Suite(
        "Replica processes on one PostgreSQL", .logLeakCheck(),
        .enabled(if: ReplicaDatabase.isConfigured, ReplicaDatabase.skipMessage))
    struct ReplicaProcessTests {
        static let processes = 4
        static let requests = 50
        static let expiries = 3
        /// The client's limit for one refresh attempt (`DemoRefreshConfiguration.shortLivedTokens` keeps the
        /// default): after the holder is killed, another replica must have refreshed within it.
        static let refreshTimeout: Duration = .seconds(30)

        @Test(.timeLimit(.minutes(2)))
        func fourReplicasMakeOneRefreshPerExpiryAndNoReuse() async throws {
            try await ReplicaRun.run(accessTokenLifetime: 5) { run in
                let workers = try run.launch(Self.processes)
                var outcomes: [ReplicaWorker.Outcome] = []
                for worker in workers { outcomes.append(await worker.outcome()) }

                for outcome in outcomes {
                    #expect(outcome.status == 0 && !outcome.signalled, "a worker failed: \(outcome.output)")
                    #expect(outcome.roundsWithoutFailures == Self.expiries, "\(outcome.output)")
                }
                let stats = run.server.stats
                #expect(stats.refreshes - run.start.refreshes == Self.expiries)
                #expect(stats.refreshAttempts - run.start.refreshAttempts == Self.expiries)
                #expect(stats.reuseDetections == 0)
                #expect(stats.rejectedRefreshes == 0)
                #expect(stats.logins == 1)
                #expect(stats.resourceRequests == Self.processes * Self.requests * Self.expiries)
                #expect(stats.rejectedResourceRequests == 0)
                #expect(run.refreshRecords.count == Self.expiries)
                #expect(try await run.storedSessionIsValid())
                print(
                    "replicas: \(Self.processes) processes, \(stats.refreshes) refreshes, "
                        + "\(stats.reuseDetections) reuse detections, \(stats.resourceRequests) requests answered")
            }
        }

        @Test(.timeLimit(.minutes(2)))
        func aLockHolderKilledMidRefreshLosesNoSession() async throws {
            // The first refresh is held by the server (nothing rotated) for 10 s, long after its client is gone.
            let faults = DemoAuthServer.Faults(stallNextRefreshes: 1, stallLimitSeconds: 10)
            try await ReplicaRun.run(accessTokenLifetime: 5, faults: faults) { run in
                let workers = try run.launch(Self.processes)
                await run.poll("the first refresh reached the server", within: .seconds(30)) {
                    run.server.stats.faultsInjected == 1
                }
                // PostgreSQL says who holds the account's advisory lock: each worker names its pool after its PID.
                let holderPID = try await run.lockHolderPID()
                let holder = try #require(
                    workers.first { $0.pid == holderPID }, "the lock holder \(holderPID) is not one of the workers")
                let killedAt = Date()
                #expect(kill(holder.pid, SIGKILL) == 0)
                var outcomes: [ReplicaWorker.Outcome] = []
                for worker in workers where worker !== holder { outcomes.append(await worker.outcome()) }
                let killed = await holder.outcome()

                #expect(killed.signalled)
                for outcome in outcomes {
                    #expect(outcome.status == 0 && !outcome.signalled, "a replica failed: \(outcome.output)")
                    #expect(outcome.roundsWithoutFailures == Self.expiries, "\(outcome.output)")
                }
                let stats = run.server.stats
                // The held attempt rotated nothing; each expiry, the first after the kill included, refreshed once.
                #expect(stats.refreshAttempts - run.start.refreshAttempts == Self.expiries + 1)
                #expect(stats.refreshes - run.start.refreshes == Self.expiries)
                #expect(stats.reuseDetections == 0)
                #expect(stats.rejectedRefreshes == 0)
                #expect(stats.rejectedResourceRequests == 0)
                #expect(stats.resourceRequests == (Self.processes - 1) * Self.requests * Self.expiries)
                let refreshes = run.refreshRecords
                #expect(refreshes.count == Self.expiries)
                #expect(Set(refreshes.map(\.expiresAt)).count == refreshes.count)
                let takeOver = try #require(refreshes.first).issuedAt - killedAt.timeIntervalSince1970
                #expect(takeOver < Double(Self.refreshTimeout.components.seconds))
                #expect(try await run.storedSessionIsValid())
                print(
                    "replicas: lock holder killed; another replica refreshed \(Int(takeOver * 1000)) ms later; "
                        + "\(stats.refreshes) refreshes in \(stats.refreshAttempts) attempts, "
                        + "\(stats.reuseDetections) reuse detections")
            }
        }

        @Test(
            .timeLimit(.minutes(2)),
            .enabled(if: ReplicaDatabase.restartCommand != nil, ReplicaDatabase.restartSkipMessage))
        func aDatabaseRestartReadsUnavailableAndRecovers() async throws {
            let restart = try #require(ReplicaDatabase.restartCommand)
            let gate = FileManager.default.temporaryDirectory.appending(path: "replica-outage-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: gate, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: gate) }
            try await ReplicaRun.run(accessTokenLifetime: 8) { run in
                let workers = try run.launch(
                    Self.processes, extraArguments: ["--outage-gate", gate.path, "--database-timeout", "1"])
                await run.poll("every replica finished its first expiry", within: .seconds(30)) {
                    workers.allSatisfy { $0.output.contains("round 1: ") }
                }
                var stopped = false
                do {
                    // Down between two expiries: the replicas hold a valid token, and their stores cannot answer.
                    #expect(try await runScript(restart, "stop") == 0)
                    stopped = true
                    try Data().write(to: gate.appending(path: "down"))
                    await run.poll("every replica probed the outage", within: .seconds(30)) {
                        workers.allSatisfy { worker in
                            FileManager.default.fileExists(atPath: gate.appending(path: "probed-\(worker.pid)").path)
                        }
                    }
                } catch {
                    if stopped { _ = try? await runScript(restart, "start") }
                    throw error
                }
                #expect(try await runScript(restart, "start") == 0)
                var outcomes: [ReplicaWorker.Outcome] = []
                for worker in workers { outcomes.append(await worker.outcome()) }

                for outcome in outcomes {
                    #expect(outcome.status == 0 && !outcome.signalled, "a replica failed: \(outcome.output)")
                    #expect(
                        outcome.output.contains(
                            "outage probe: store unavailable, state signedIn(\(Demo.userID)), \(Self.requests) requests, 0 failed"
                        ), "\(outcome.output)")
                    #expect(outcome.roundsWithoutFailures == Self.expiries, "\(outcome.output)")
                    #expect(outcome.output.contains("end: store found, signedIn(\(Demo.userID))"), "\(outcome.output)")
                }
                let stats = run.server.stats
                #expect(stats.refreshes - run.start.refreshes == Self.expiries)
                #expect(stats.refreshAttempts - run.start.refreshAttempts == Self.expiries)
                #expect(stats.reuseDetections == 0)
                #expect(stats.rejectedRefreshes == 0)
                #expect(stats.rejectedResourceRequests == 0)
                #expect(stats.resourceRequests == Self.processes * Self.requests * (Self.expiries + 1))
                #expect(try await run.storedSessionIsValid())
                print(
                    "replicas: database stopped and started between expiries; \(stats.refreshes) refreshes, "
                        + "\(stats.reuseDetections) reuse detections, \(stats.resourceRequests) requests answered")
            }
        }
    }
}

/// The PostgreSQL server the replica tests use: `TOKENKIT_POSTGRES_URL`, and for the restart test
/// `TOKENKIT_POSTGRES_RESTART`, a script taking `stop` or `start` (`.ci/postgres` sets both).
enum ReplicaDatabase {
    static let variable = "TOKENKIT_POSTGRES_URL"

    /// Whether a server is configured; the suite is skipped otherwise.
    static var isConfigured: Bool { configuration != nil }

    static let skipMessage: Comment =
        "PostgreSQL replica tests skipped: set TOKENKIT_POSTGRES_URL=postgres://USER[:PASSWORD]@HOST:PORT/DATABASE (.ci/postgres does)"

    static let restartSkipMessage: Comment =
        "PostgreSQL replica restart test skipped: set TOKENKIT_POSTGRES_RESTART to a script taking stop|start (.ci/postgres does)"

    /// The URL as given, for the workers.
    static var url: String? { ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 } }

    /// The script that stops and starts the server, or `nil`.
    static var restartCommand: String? {
        ProcessInfo.processInfo.environment["TOKENKIT_POSTGRES_RESTART"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The test process's client configuration, or `nil`.
    static let configuration: PostgresClient.Configuration? = {
        guard let text = url, let configuration = PostgresTokenStore.loopbackClientConfiguration(url: text)
        else { return nil }
        if let password = configuration.password {
            TestSecrets.shared.register(password, as: .password, origin: variable)
        }
        return configuration
    }()
}

/// One replica scenario: the demo server in this process (reuse detection on, no grace window, unless configured
/// otherwise), a table of the test's own (or a `FileTokenStore` directory), a session signed in by the test and
/// stored there, and the workers it launches. Each database step of the test opens a pool of its own and closes it
/// after, so no pool of the test's lives across a database restart.
final class ReplicaRun: Sendable {
    /// Where the workers share the session.
    enum SharedStore: Sendable {
        case postgres
        case file
    }

    let server: DemoAuthServer
    let baseURL: URL
    /// The session's table and the workers on it (`store == .postgres`).
    let database = ReplicaTable()
    var table: String { database.table }
    let store: SharedStore
    /// The file store's directory (`store == .file`).
    let directory = FileManager.default.temporaryDirectory.appending(path: "replica-run-\(UUID().uuidString)")
    /// The workers launched on the file store, so that a test that fails early leaves none running.
    private let fileWorkers = Mutex<[ReplicaWorker]>([])
    /// The server's counters once the test had signed in.
    let start: DemoAuthServer.Stats
    private let loginRecords: Int

    private init(configuration: DemoAuthServer.Configuration, store: SharedStore) async throws {
        Demo.registerSecrets(of: configuration)
        server = DemoAuthServer(configuration: configuration, logger: Demo.traceLogger)
        baseURL = try await server.start()
        self.store = store
        // Sign in once; the workers find the session in the table (or the directory).
        let baseURL = baseURL
        let signIn: @Sendable (any TokenStore) async throws -> Void = { store in
            let transport = Demo.transport()
            let signIn = TokenRefreshClient(
                strategy: JSONEndpointRefreshStrategy(baseURL: baseURL, apiKey: Demo.apiKey, transport: transport),
                store: store)
            try await signIn.signIn(Demo.login(baseURL: baseURL, transport: transport))
        }
        switch store {
        case .postgres: try await database.withStore { _, store in try await signIn(store) }
        case .file: try await signIn(FileTokenStore(directory: directory))
        }
        start = server.stats
        loginRecords = server.issueLog.count
    }

    /// Runs `body` with a fresh scenario, then stops the server and drops the table.
    static func run(
        accessTokenLifetime: Int, faults: DemoAuthServer.Faults = .init(),
        _ body: (ReplicaRun) async throws -> Void
    ) async throws {
        let configuration = DemoAuthServer.Configuration(
            accessTokenLifetime: .seconds(accessTokenLifetime), reuseDetection: true, graceWindow: .zero,
            faults: faults)
        try await run(configuration: configuration, store: .postgres, body)
    }

    /// Runs `body` with a fresh scenario on a server configured so and the given shared store, then stops the
    /// server and drops the table (or removes the directory).
    static func run(
        configuration: DemoAuthServer.Configuration, store: SharedStore,
        _ body: (ReplicaRun) async throws -> Void
    ) async throws {
        let run = try await ReplicaRun(configuration: configuration, store: store)
        do {
            try await body(run)
        } catch {
            await run.finish()
            throw error
        }
        await run.finish()
    }

    private func finish() async {
        await database.endWorkers()
        for worker in fileWorkers.withLock({ $0 }) where worker.isRunning { kill(worker.pid, SIGKILL) }
        await server.stop()
        switch store {
        case .postgres: await database.drop()
        case .file: try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Launches `count` workers on this scenario's server and table (or directory).
    func launch(
        _ count: Int, extraArguments: [String] = [], requests: Int = ChildProcessTests.ReplicaProcessTests.requests,
        expiries: Int = ChildProcessTests.ReplicaProcessTests.expiries
    ) throws -> [ReplicaWorker] {
        let arguments =
            ["--server", baseURL.absoluteString, "--requests", "\(requests)", "--expiries", "\(expiries)"]
            + extraArguments
        switch store {
        case .postgres:
            return try database.launch(count, arguments: arguments)
        case .file:
            let worker = try ChildProcessTests.MultiProcessTests.workerURL()
            let workers = try (0..<count).map { _ in
                try ReplicaWorker(worker, arguments: ["--store-dir", directory.path] + arguments)
            }
            fileWorkers.withLock { $0 += workers }
            return workers
        }
    }

    /// The refreshes the server issued after the test signed in, oldest first.
    var refreshRecords: [DemoAuthServer.IssueRecord] {
        server.issueLog.dropFirst(loginRecords).filter { $0.grant == .refresh }
    }

    /// Whether the table holds a session whose access token is still valid (nobody lost or revoked it).
    func storedSessionIsValid() async throws -> Bool {
        switch store {
        case .postgres:
            return try await database.storedSessionIsValid()
        case .file:
            guard case .found(let session) = await FileTokenStore(directory: directory).load(account: "default")
            else { return false }
            return !session.token.isExpired(at: Date(), policy: .default)
        }
    }

    /// The PID of the worker holding the account's advisory lock.
    func lockHolderPID() async throws -> Int32 { try await database.lockHolder().workerPID }

    /// Waits until `condition` holds (``ReplicaTable/poll(_:within:sourceLocation:until:)``).
    func poll(
        _ what: String, within limit: Duration, sourceLocation: SourceLocation = #_sourceLocation,
        until condition: () -> Bool
    ) async {
        await ReplicaTable.poll(what, within: limit, sourceLocation: sourceLocation, until: condition)
    }
}

/// The database side of a replica scenario, whatever the auth server: a table of the test's own on the configured
/// server, the `session-worker` processes launched on it, and what PostgreSQL says about them. Each database step
/// opens a pool of its own and closes it after, so no pool of the test's lives across a database restart.
final class ReplicaTable: Sendable {
    let table = "tokenkit_replica_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    /// Every worker launched, so that a test that fails early leaves none running.
    private let launched = Mutex<[ReplicaWorker]>([])

    /// Runs `body` with a pool of its own (closed after) and a store on the table over it.
    func withStore<T: Sendable>(
        _ body: (PostgresClient, PostgresTokenStore) async throws -> T
    ) async throws -> T {
        let client = PostgresClient(configuration: try #require(ReplicaDatabase.configuration))
        let table = table
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client, PostgresTokenStore(client: client, configuration: .init(tableName: table)))
        }
    }

    /// Launches `count` workers on the table, with `arguments` (`--server` and the rest) and `environment` added
    /// to the test's.
    func launch(_ count: Int, arguments: [String], environment: [String: String] = [:]) throws -> [ReplicaWorker] {
        let worker = try ChildProcessTests.MultiProcessTests.workerURL()
        let url = try #require(ReplicaDatabase.url)
        let arguments = ["--postgres-url", url, "--table", table] + arguments
        let workers = try (0..<count).map { _ in
            try ReplicaWorker(worker, arguments: arguments, environment: environment)
        }
        launched.withLock { $0 += workers }
        return workers
    }

    /// Ends the workers still running (they belong to a test that failed before waiting for them).
    func endWorkers() async {
        for worker in launched.withLock({ $0 }) where worker.isRunning { kill(worker.pid, SIGKILL) }
    }

    /// Drops the table.
    func drop() async {
        let table = table
        try? await withStore { client, _ in
            _ = try await client.query("DROP TABLE IF EXISTS \(unescaped: table)")
        }
    }

    /// Waits until each worker in `pids` has run a statement on the database since this call (a `pg_stat_activity`
    /// row of its pool, `session-worker-PID`, idle again with a later `query_start`) and `settled` holds (asked only
    /// once they all have), or until `orUntil` holds, or `limit` has passed: a bounded poll. Then every worker has
    /// had its chance to take the lock and act on what it read. Returns the workers not seen back.
    func waitUntilBack(
        _ pids: [Int32], within limit: Duration, orUntil other: @Sendable () -> Bool,
        settled: (PostgresClient) async throws -> Bool = { _ in true }
    ) async throws -> [String] {
        let wanted = Set(pids.map { "session-worker-\($0)" })
        let seen = try await withStore { client, _ -> Set<String> in
            var since: Date?
            for try await now in try await client.query("SELECT now()").decode(Date.self) { since = now }
            let after = try #require(since)
            let deadline = ContinuousClock.now + limit
            var seen = Set<String>()
            while ContinuousClock.now < deadline {
                let rows = try await client.query(
                    """
                    SELECT DISTINCT application_name FROM pg_stat_activity
                    WHERE application_name LIKE 'session-worker-%' AND state = 'idle' AND query_start > \(after)
                    """)
                for try await name in rows.decode(String.self) { seen.insert(name) }
                if other() { return seen }
                if wanted.isSubset(of: seen), try await settled(client) { return seen }
                try await Task.sleep(for: .milliseconds(10))
            }
            return seen
        }
        return wanted.subtracting(seen).sorted()
    }

    /// What the table holds for the account `default`.
    func load() async throws -> TokenStoreRead {
        try await withStore { _, store in await store.load(account: "default") }
    }

    /// Whether the table holds a session whose access token is still valid (nobody lost or revoked it).
    func storedSessionIsValid() async throws -> Bool {
        guard case .found(let session) = try await load() else { return false }
        return !session.token.isExpired(at: Date(), policy: .default)
    }

    /// Who holds the account's advisory lock: the worker's PID (from its `application_name`,
    /// `session-worker-PID`) and the PostgreSQL backend (`pg_locks.pid`) of the lock's connection.
    func lockHolder() async throws -> (workerPID: Int32, backendPID: Int32) {
        let holders = try await withStore { client, store in
            let key = UInt64(bitPattern: store.advisoryLockKey(account: "default"))
            let high = Int64(key >> 32)
            let low = Int64(key & 0xFFFF_FFFF)
            let rows = try await client.query(
                """
                SELECT a.application_name, l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                    AND l.classid::bigint = \(high) AND l.objid::bigint = \(low)
                """)
            var holders: [(String, Int32)] = []
            for try await (name, pid) in rows.decode((String, Int32).self) { holders.append((name, pid)) }
            return holders
        }
        let (name, backend) = try #require(holders.first, "nobody holds the account's advisory lock")
        let worker = try #require(Int32(name.replacingOccurrences(of: "session-worker-", with: "")), "holder \(name)")
        return (worker, backend)
    }

    /// Waits until `condition` holds, recording an issue naming `what` if it does not within `limit`
    /// (``eventually(within:_:)``).
    static func poll(
        _ what: String, within limit: Duration, sourceLocation: SourceLocation = #_sourceLocation,
        until condition: () -> Bool
    ) async {
        if await !eventually(within: limit, condition) {
            Issue.record("not seen within \(limit): \(what)", sourceLocation: sourceLocation)
        }
    }

    /// Whether `condition` holds within `limit`: a bounded poll every 10 ms for what other processes do, never a
    /// wait for time to pass.
    static func eventually(within limit: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}

/// One `session-worker` process, its output going to a file that the test can read while it runs.
final class ReplicaWorker: Sendable {
    /// How a worker ended and what it printed.
    struct Outcome: Sendable {
        let status: Int32
        let signalled: Bool
        let output: String

        /// The rounds that reported no failed request.
        var roundsWithoutFailures: Int {
            output.split(separator: "\n").filter { $0.hasPrefix("round ") && $0.hasSuffix(" requests, 0 failed") }
                .count
        }

        /// The failed requests its rounds reported (`round N: R requests, F failed`).
        var failedRequests: Int {
            output.split(separator: "\n").filter { $0.hasPrefix("round ") }.compactMap { line in
                line.split(separator: ", ").dropFirst().first?.split(separator: " ").first.flatMap { Int($0) }
            }.reduce(0, +)
        }
    }

    let pid: Int32
    private let log: URL
    private let process: Process

    /// Whether the process has not ended yet.
    var isRunning: Bool { process.isRunning }
    private let exit: Task<(Int32, Bool), Never>

    init(_ executable: URL, arguments: [String], environment: [String: String] = [:]) throws {
        log = FileManager.default.temporaryDirectory.appending(path: "replica-worker-\(UUID().uuidString).log")
        try #require(FileManager.default.createFile(atPath: log.path, contents: nil), "cannot create \(log.path)")
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = handle
        process.standardError = handle
        let (ended, continuation) = AsyncStream<(Int32, Bool)>.makeStream()
        process.terminationHandler = { process in
            continuation.yield((process.terminationStatus, process.terminationReason == .uncaughtSignal))
            continuation.finish()
        }
        try process.run()
        self.process = process
        pid = process.processIdentifier
        exit = Task {
            for await status in ended { return status }
            return (-1, false)
        }
    }

    deinit { try? FileManager.default.removeItem(at: log) }

    /// What it printed so far.
    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Waits for it to exit.
    func outcome() async -> Outcome {
        let (status, signalled) = await exit.value
        return Outcome(status: status, signalled: signalled, output: output)
    }
}

/// Runs `script` with `argument` and returns its exit status (its output goes to the test's).
func runScript(_ script: String, _ argument: String) async throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: script)
    process.arguments = [argument]
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
        process.terminationHandler = { process in continuation.resume(returning: process.terminationStatus) }
        do {
            try process.run()
        } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
        }
    }
}
