import DemoAuthServer
import Foundation
import PostgresNIO
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
    /// The fault scorecard (`.ci/scorecard`): every coordination mode against every server profile under every
    /// fault, each fault injected at its worst instant through a ``RefreshGate`` (the server holds the request or
    /// its answer, the fault is injected while it is held, then the gate opens). Runs only when
    /// `TOKENKIT_SCORECARD` is `ci` (a representative slice) or `full`; writes the Markdown table to
    /// `TOKENKIT_SCORECARD_OUTPUT` (or prints it).
    @Suite(
        "Fault scorecard", .logLeakCheck(),
        .enabled(if: Scorecard.selection != nil, "fault scorecard skipped: set TOKENKIT_SCORECARD=ci|full"))
    struct FaultScorecard {
        @Test(.timeLimit(.minutes(90)))
        func scorecard() async throws {
            let selection = try #require(Scorecard.selection)
            let started = Date()
            var results: [Scorecard.Cell: Scorecard.Result] = [:]
            for cell in Scorecard.cells(selection) {
                let cellStarted = Date()
                let result = await Scorecard.measure(cell)
                results[cell] = result
                // Also appended to TOKENKIT_SCORECARD_PROGRESS, which .ci/scorecard follows (swift test passes the
                // test's output on only at the end when it is not a terminal).
                let line =
                    "scorecard: \(cell.fault.title) | \(cell.mode.title) | \(cell.column.title): \(result.cell) "
                    + "(\(Int(Date().timeIntervalSince(cellStarted))) s)\(result.notes.map { "; \($0)" } ?? "")\n"
                FileHandle.standardOutput.write(Data(line.utf8))
                Scorecard.appendProgress(line)
            }
            let table = Scorecard.markdown(results, selection: selection, seconds: Date().timeIntervalSince(started))
            if let path = ProcessInfo.processInfo.environment["TOKENKIT_SCORECARD_OUTPUT"], !path.isEmpty {
                try table.write(toFile: path, atomically: true, encoding: .utf8)
            } else {
                print(table)
            }
            // What every cell must show: no reuse and no lost session, except where no client can help (the
            // holder killed after a rotation that the server does not forgive).
            for (cell, result) in results where !result.harnessFailure && !cell.isPhysicalLimit {
                if result.reuseDetections > 0 || result.sessionsLost > 0 {
                    Issue.record(
                        "\(cell.fault.title) (\(cell.mode.title), \(cell.column.title)): \(result.cell) \(result.notes ?? "")"
                    )
                }
            }
            for (cell, result) in results where result.harnessFailure {
                Issue.record(
                    "the harness could not inject \(cell.fault.title) (\(cell.mode.title), \(cell.column.title)): \(result.notes ?? "")"
                )
            }
        }
    }
}

/// What the scorecard measures and how it prints it.
enum Scorecard {
    /// Which cells to run: `ci` (a representative slice) or `full`.
    enum Selection: String {
        case ci
        case full
    }

    /// Appends `line` to the file named by `TOKENKIT_SCORECARD_PROGRESS`, if any.
    static func appendProgress(_ line: String) {
        guard let path = ProcessInfo.processInfo.environment["TOKENKIT_SCORECARD_PROGRESS"], !path.isEmpty,
            let handle = FileHandle(forWritingAtPath: path)
        else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: Data(line.utf8))
    }

    static var selection: Selection? {
        ProcessInfo.processInfo.environment["TOKENKIT_SCORECARD"].flatMap(Selection.init(rawValue:))
    }

    /// The rows' first part: how the processes that share a session coordinate.
    enum Mode: CaseIterable, Hashable {
        case oneProcess
        case fileProcesses
        case postgresReplicas

        var title: String {
            switch self {
            case .oneProcess: "one process"
            case .fileProcesses: "4 processes, one FileTokenStore"
            case .postgresReplicas: "4 replicas, PostgresTokenStore"
            }
        }

        var workers: Int { self == .oneProcess ? 1 : 4 }
    }

    /// The rows' second part: the fault, and where the gate holds the refresh while it is injected.
    enum Fault: CaseIterable, Hashable {
        case none
        case killBeforeAnswer
        case killAfterRotation
        case databaseRestart
        case databaseRestartBeforeServer
        case terminateBackend
        case databaseUnreachableAtWrite
        case slowerThanLockTimeout
        case unavailableRetryAfter

        var title: String {
            switch self {
            case .none: "none (baseline)"
            case .killBeforeAnswer: "holder killed before the server answered"
            case .killAfterRotation: "holder killed after the server rotated"
            case .databaseRestart: "database restart mid-refresh (server rotated, answer held)"
            case .databaseRestartBeforeServer: "database restart mid-refresh (request held before the server)"
            case .terminateBackend: "pg_terminate_backend of the holder's connection"
            case .databaseUnreachableAtWrite: "database unreachable at the write"
            case .slowerThanLockTimeout: "token endpoint slower than the lock timeout"
            case .unavailableRetryAfter: "503 with Retry-After"
            }
        }

        var gate: DemoAuthServer.GatePoint? {
            switch self {
            case .none, .unavailableRetryAfter: nil
            case .killBeforeAnswer, .slowerThanLockTimeout, .databaseRestartBeforeServer: .beforeRotation
            case .killAfterRotation, .databaseRestart, .terminateBackend, .databaseUnreachableAtWrite: .afterRotation
            }
        }

        /// Whether the fault exists in `mode`: database faults need a database, a lock timeout needs a lock
        /// shared with other processes.
        func applies(to mode: Mode) -> Bool {
            switch self {
            case .databaseRestart, .databaseRestartBeforeServer, .terminateBackend, .databaseUnreachableAtWrite:
                mode == .postgresReplicas
            case .slowerThanLockTimeout: mode != .oneProcess
            default: true
            }
        }
    }

    /// The columns: server behaviours.
    enum Column: Hashable, CaseIterable {
        case djangoOAuthToolkit
        case profile(DemoAuthServer.Profile)
        case sessionlessSDK

        static var allCases: [Column] {
            [.djangoOAuthToolkit] + DemoAuthServer.Profile.allCases.map(Column.profile) + [.sessionlessSDK]
        }

        var title: String {
            switch self {
            case .djangoOAuthToolkit: "django-oauth-toolkit"
            case .profile(.reuseDetection): "reuse detection, no grace (simulated)"
            case .profile(let profile): profile.title
            case .sessionlessSDK: "60-s sessionless SDK token"
            }
        }
    }

    struct Cell: Hashable {
        let fault: Fault
        let mode: Mode
        let column: Column

        /// A holder killed after the server rotated takes the only copy of the new pair with it: without a grace
        /// window the next holder's refresh is a reuse. No client can prevent that.
        var isPhysicalLimit: Bool {
            guard fault == .killAfterRotation else { return false }
            switch column {
            case .djangoOAuthToolkit, .profile(.reuseDetection), .profile(.oneTimeUse): return true
            default: return false
            }
        }
    }

    /// One measured cell.
    struct Result {
        var refreshes = 0
        var expiries = 0
        var reuseDetections = 0
        var sessionsLost = 0
        var failedRequests = 0
        var notes: String?
        /// The fault could not be injected as described (the gate never held, no holder found).
        var harnessFailure = false

        var cell: String {
            if harnessFailure { return "harness failed" }
            let perExpiry = expiries > 0 ? String(format: "%.2f", Double(refreshes) / Double(expiries)) : "-"
            return "\(perExpiry) · \(reuseDetections) · \(sessionsLost) · \(failedRequests)"
        }
    }

    /// Seconds an access token lives in these runs (the workers meet at each expiry in real time).
    static let accessTokenLifetime = 5
    /// Expiries each run goes through; the fault strikes at the first.
    static let expiries = 2
    /// Concurrent requests per worker and expiry.
    static let requests = 20

    /// The slice `.ci/scorecard --ci` runs: the database faults on the strictest server, the physical limit and
    /// its cure, the file store's holder killed and its slow endpoint, one process, a 503 and a baseline.
    static let ciSlice: [Cell] = [
        Cell(fault: .none, mode: .postgresReplicas, column: .profile(.reuseDetection)),
        Cell(fault: .databaseRestart, mode: .postgresReplicas, column: .profile(.reuseDetection)),
        Cell(fault: .terminateBackend, mode: .postgresReplicas, column: .profile(.reuseDetection)),
        Cell(fault: .databaseUnreachableAtWrite, mode: .postgresReplicas, column: .profile(.oneTimeUse)),
        Cell(fault: .killBeforeAnswer, mode: .postgresReplicas, column: .profile(.reuseDetection)),
        Cell(fault: .killAfterRotation, mode: .postgresReplicas, column: .profile(.reuseDetection)),
        Cell(fault: .killAfterRotation, mode: .postgresReplicas, column: .profile(.graceWindow)),
        Cell(fault: .killBeforeAnswer, mode: .fileProcesses, column: .profile(.reuseDetection)),
        Cell(fault: .slowerThanLockTimeout, mode: .fileProcesses, column: .profile(.overlap)),
        Cell(fault: .killAfterRotation, mode: .oneProcess, column: .profile(.overlap)),
        Cell(fault: .unavailableRetryAfter, mode: .postgresReplicas, column: .profile(.nonRotating)),
        Cell(fault: .databaseRestart, mode: .postgresReplicas, column: .djangoOAuthToolkit),
    ]

    /// The selection's cells, narrowed to those whose fault, mode or column title contains every `;`-separated
    /// part of `TOKENKIT_SCORECARD_ONLY` (for a rerun of a few cells).
    static func cells(_ selection: Selection) -> [Cell] {
        let only = (ProcessInfo.processInfo.environment["TOKENKIT_SCORECARD_ONLY"] ?? "").split(separator: ";")
        return allCells(selection).filter { cell in
            only.allSatisfy { part in
                [cell.fault.title, cell.mode.title, cell.column.title].contains { $0.contains(part) }
            }
        }
    }

    private static func allCells(_ selection: Selection) -> [Cell] {
        switch selection {
        case .ci:
            return ciSlice.filter { $0.column != .djangoOAuthToolkit || DjangoReplicaRun.isConfigured }
        case .full:
            var cells: [Cell] = []
            for fault in Fault.allCases {
                for mode in Mode.allCases where fault.applies(to: mode) {
                    if mode == .postgresReplicas, djangoFault(fault) != nil, DjangoReplicaRun.isConfigured {
                        cells.append(Cell(fault: fault, mode: mode, column: .djangoOAuthToolkit))
                    }
                    for profile in DemoAuthServer.Profile.allCases {
                        cells.append(Cell(fault: fault, mode: mode, column: .profile(profile)))
                    }
                }
            }
            return cells
        }
    }

    // MARK: - One cell

    /// Runs one cell: signs in, launches the workers, injects the fault at the gate, waits for every worker,
    /// and counts. Never throws: a run that could not be made is a harness failure with a note.
    static func measure(_ cell: Cell) async -> Result {
        if cell.column == .djangoOAuthToolkit { return await measureDjango(cell) }
        guard case .profile(let profile) = cell.column else { return Result(notes: "not measured here") }
        var configuration = profile.configuration(accessTokenLifetime: .seconds(accessTokenLifetime))
        if cell.fault == .unavailableRetryAfter {
            configuration.faults = .init(unavailableNextRefreshes: 1, retryAfterSeconds: 1)
        }
        var result = Result()
        do {
            try await ReplicaRun.run(
                configuration: configuration, store: cell.mode == .postgresReplicas ? .postgres : .file
            ) { run in
                result = try await measure(cell, in: run)
            }
        } catch {
            result.harnessFailure = true
            result.notes = "run failed: \(error)"
        }
        return result
    }

    /// The faults the django-oauth-toolkit harness (``DjangoReplicaRun``, its ``HoldingProxy``) injects, on replicas.
    static func djangoFault(_ fault: Fault) -> (HoldingProxy.Hold, DjangoReplicaRun.Fault)? {
        switch fault {
        case .databaseRestart: (.response, .restart)
        case .databaseRestartBeforeServer: (.request, .restart)
        case .terminateBackend: (.response, .terminateHolder)
        default: nil
        }
    }

    /// A cell of the django-oauth-toolkit column: the restart-mid-refresh harness with this run's sizes.
    private static func measureDjango(_ cell: Cell) async -> Result {
        guard cell.mode == .postgresReplicas, let (hold, fault) = djangoFault(cell.fault) else {
            return Result(notes: "not wired")
        }
        var result = Result(expiries: expiries)
        do {
            try await DjangoReplicaRun.run { run in
                let figures = try await run.refreshWithFault(
                    hold: hold, fault: fault, processes: Mode.postgresReplicas.workers, requests: requests,
                    expiries: expiries)
                result.refreshes = figures.refreshes
                result.reuseDetections = figures.reuseDetections
                result.failedRequests = figures.failedRequests
                result.sessionsLost = figures.sessionAnswers ? 0 : 1
                if !figures.sessionAnswers { result.notes = "lost: the stored session no longer answers" }
            }
        } catch {
            result.harnessFailure = true
            result.notes = "run failed: \(error)"
        }
        return result
    }

    private static func measure(_ cell: Cell, in run: ReplicaRun) async throws -> Result {
        var result = Result(expiries: expiries)
        let gate = cell.fault.gate.map { run.server.holdNextRefresh(at: $0) }
        // Whatever happens, the held request is let go at the end.
        defer { gate?.release() }
        let workers = try run.launch(cell.mode.workers, requests: requests, expiries: expiries)
        var survivors = workers
        if let gate {
            guard await ReplicaTable.eventually(within: .seconds(60), { gate.isHeld }) else {
                result.harnessFailure = true
                result.notes = "no refresh reached the gate"
                return result
            }
            let holder = workers.first { "session-worker-\($0.pid)" == gate.holder }
            guard let holder else {
                result.harnessFailure = true
                result.notes = "the held refresh names no worker"
                return result
            }
            result.notes = try await inject(cell.fault, gate: gate, holder: holder, workers: workers, run: run)
            if cell.fault == .killBeforeAnswer || cell.fault == .killAfterRotation {
                survivors.removeAll { $0 === holder }
                if cell.mode == .oneProcess {
                    // The app is launched again and resumes from its store.
                    survivors += try run.launch(1, requests: requests, expiries: expiries)
                }
            }
        }
        // A bound, not a wait for time: a worker still running two minutes after its last expiry is stuck.
        let finished = await ReplicaTable.eventually(within: .seconds(120)) { survivors.allSatisfy { !$0.isRunning } }
        if !finished {
            for worker in survivors where worker.isRunning { kill(worker.pid, SIGKILL) }
            result.notes = [result.notes, "a worker was stuck and was killed"].compactMap { $0 }.joined(separator: "; ")
        }
        var outcomes: [ReplicaWorker.Outcome] = []
        for worker in survivors { outcomes.append(await worker.outcome()) }
        let stats = run.server.stats
        result.refreshes = stats.refreshes - run.start.refreshes
        result.reuseDetections = stats.reuseDetections - run.start.reuseDetections
        result.failedRequests = outcomes.map(failedRequests).reduce(0, +)
        let everySurvivorSignedIn = outcomes.allSatisfy { $0.output.contains("end: store found, signedIn(") }
        let stored = (try? await run.storedSessionIsValid()) ?? false
        result.sessionsLost = everySurvivorSignedIn && stored ? 0 : 1
        if result.sessionsLost > 0 {
            let ends = outcomes.compactMap { outcome in
                outcome.output.split(separator: "\n").last { $0.hasPrefix("end: ") }.map(String.init)
            }
            let reason =
                "lost: stored session \(stored ? "valid" : "not valid"); \(Set(ends).sorted().joined(separator: " / "))"
            result.notes = [result.notes, reason].compactMap { $0 }.joined(separator: "; ")
        }
        return result
    }

    /// Injects `fault` while the gate holds the holder's refresh, then opens the gate. Returns a note.
    private static func inject(
        _ fault: Fault, gate: RefreshGate, holder: ReplicaWorker, workers: [ReplicaWorker], run: ReplicaRun
    ) async throws -> String? {
        switch fault {
        case .none, .unavailableRetryAfter:
            return nil
        case .killBeforeAnswer:
            kill(holder.pid, SIGKILL)
            _ = await holder.outcome()
            gate.abandon()
            return nil
        case .killAfterRotation:
            kill(holder.pid, SIGKILL)
            _ = await holder.outcome()
            gate.release()
            return nil
        case .databaseRestart, .databaseRestartBeforeServer:
            let script = try #require(ReplicaDatabase.restartCommand, "TOKENKIT_POSTGRES_RESTART is not set")
            let attempts = run.server.stats.refreshAttempts
            let status = try await runScript(script, "immediate")
            let missing = try await othersBack(holder: holder, workers: workers, run: run, attempts: attempts)
            gate.release()
            return [status == 0 ? nil : "restart exited \(status)", missing].compactMap { $0 }.joined(separator: "; ")
                .nilIfEmpty
        case .terminateBackend:
            let attempts = run.server.stats.refreshAttempts
            let ended = try await run.terminateBackends(of: "session-worker-\(holder.pid)")
            let missing = try await othersBack(holder: holder, workers: workers, run: run, attempts: attempts)
            gate.release()
            return [ended == 1 ? nil : "ended \(ended) connections", missing].compactMap { $0 }.joined(separator: "; ")
                .nilIfEmpty
        case .databaseUnreachableAtWrite:
            let script = try #require(ReplicaDatabase.restartCommand, "TOKENKIT_POSTGRES_RESTART is not set")
            guard try await runScript(script, "stop") == 0 else { return "stop failed" }
            gate.release()
            // The holder has the new pair and cannot write it: wait for it to say so, then bring the database back.
            let failed = await ReplicaTable.eventually(within: .seconds(30)) {
                holder.output.contains("event: persistenceFailed") || !holder.isRunning
            }
            let status = try await runScript(script, "start")
            let notes = [failed ? nil : "no persistence failure seen", status == 0 ? nil : "start exited \(status)"]
            return notes.compactMap { $0 }.joined(separator: "; ").nilIfEmpty
        case .slowerThanLockTimeout:
            // Hold the refresh as a token endpoint answering after 7 s does, past the others' 5-s lock timeout: until
            // 7 s have passed since it was held, or every other process has given up waiting for the lock (its first
            // round ended), whichever comes first.
            let others = workers.filter { $0 !== holder }
            let held = ContinuousClock.now
            let answered = await ReplicaTable.eventually(within: .seconds(60)) {
                others.allSatisfy { $0.output.contains("round 1: ") || !$0.isRunning }
                    || held.duration(to: ContinuousClock.now) >= .seconds(7)
            }
            gate.release()
            return answered ? nil : "the others did not give up within 60 s"
        }
    }

    /// The worst instant to let the held refresh go on after the database came back: once every other worker has
    /// been to the database since (and could take the lock and present the token it read), or once another refresh
    /// reached the server (`attempts`: the server's refresh attempts when the fault began). Returns a note when some
    /// worker was not seen back.
    private static func othersBack(
        holder: ReplicaWorker, workers: [ReplicaWorker], run: ReplicaRun, attempts: Int
    ) async throws -> String? {
        let others = workers.filter { $0 !== holder }.map(\.pid)
        let server = run.server
        let missing = try await run.database.waitUntilBack(others, within: .seconds(20)) {
            server.stats.refreshAttempts > attempts
        }
        return missing.isEmpty || server.stats.refreshAttempts > attempts
            ? nil : "not back at the database within 20 s: \(missing.joined(separator: ", "))"
    }

    /// The failed requests a worker reported, plus every request of the rounds it never reported.
    private static func failedRequests(_ outcome: ReplicaWorker.Outcome) -> Int {
        var failed = 0
        var rounds = 0
        for line in outcome.output.split(separator: "\n") where line.hasPrefix("round ") {
            rounds += 1
            if let count = line.split(separator: ",").last?.split(separator: " ").first.flatMap({ Int($0) }) {
                failed += count
            }
        }
        return failed + max(0, expiries - rounds) * requests
    }

    // MARK: - The table

    static func markdown(_ results: [Cell: Result], selection: Selection, seconds: TimeInterval) -> String {
        let columns = Column.allCases
        var lines: [String] = []
        lines.append(
            "Each cell: refreshes per expiry · reuse detections · sessions lost · failed requests "
                + "(\(expiries) expiries of a \(accessTokenLifetime)-s token, \(requests) concurrent requests per "
                + "process and expiry; the fault strikes at the first expiry).")
        lines.append("")
        lines.append("| Fault | Mode | " + columns.map(\.title).joined(separator: " | ") + " |")
        lines.append("|---|---|" + columns.map { _ in "---" }.joined(separator: "|") + "|")
        for fault in Fault.allCases {
            for mode in Mode.allCases {
                var row = "| \(fault.title) | \(mode.title) |"
                for column in columns {
                    let text: String
                    if !fault.applies(to: mode) {
                        text = "n/a"
                    } else if let result = results[Cell(fault: fault, mode: mode, column: column)] {
                        text = result.sessionsLost > 0 || result.harnessFailure ? "**\(result.cell)**" : result.cell
                    } else if column == .djangoOAuthToolkit {
                        // The harness plays the database faults only (also run by `.ci/faults`).
                        text =
                            mode == .postgresReplicas && djangoFault(fault) != nil
                            ? "see the django-oauth-toolkit suite" : "not wired"
                    } else if column == .sessionlessSDK {
                        text = "not built"
                    } else {
                        text = "not run"
                    }
                    row += " \(text) |"
                }
                lines.append(row)
            }
        }
        let notes = results.filter { $0.value.notes != nil }.sorted {
            ($0.key.fault.title, $0.key.mode.title, $0.key.column.title)
                < ($1.key.fault.title, $1.key.mode.title, $1.key.column.title)
        }
        if !notes.isEmpty {
            lines.append("")
            for (cell, result) in notes {
                lines.append(
                    "- \(cell.fault.title), \(cell.mode.title), \(cell.column.title): \(result.notes ?? "")")
            }
        }
        lines.append("")
        lines.append("Selection: \(selection.rawValue), \(results.count) cells in \(Int(seconds)) s.")
        return lines.joined(separator: "\n") + "\n"
    }
}

extension ReplicaRun {
    /// Ends the database connections of the process named `applicationName` that hold the account's advisory lock
    /// (all of its connections when none does); returns how many.
    func terminateBackends(of applicationName: String) async throws -> Int {
        let client = PostgresClient(configuration: try #require(ReplicaDatabase.configuration))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let store = PostgresTokenStore(client: client, configuration: .init(tableName: table))
            let key = UInt64(bitPattern: store.advisoryLockKey(account: "default"))
            let high = Int64(key >> 32)
            let low = Int64(key & 0xFFFF_FFFF)
            var ended = 0
            let lockHolders = try await client.query(
                """
                SELECT pg_terminate_backend(a.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                    AND l.classid::bigint = \(high) AND l.objid::bigint = \(low) AND a.application_name = \(applicationName)
                """)
            for try await _ in lockHolders.decode(Bool.self) { ended += 1 }
            if ended > 0 { return ended }
            let all = try await client.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(applicationName)")
            for try await _ in all.decode(Bool.self) { ended += 1 }
            return ended
        }
    }
}

extension String {
    /// `nil` for an empty string.
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
