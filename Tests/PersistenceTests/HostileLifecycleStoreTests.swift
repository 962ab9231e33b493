import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenRefresh

/// Hostile lifecycles that meet the store's lock: many callers at a cold start, and a token endpoint slower than the
/// lock timeout with four processes on one `FileTokenStore`. Each test prints one line for the scorecard's
/// "hostile lifecycle" column: `hostile-lifecycle: <case> @ <mode> | refreshes N | sessions lost N |
/// failed requests N | usable after X`.
///
/// The processes are the `TokenStoreProbe` executable (`callers` mode). Their token server is a gate the test opens
/// once every other process is seen waiting for the lock, so no test waits for a duration.
@Suite(.serialized, .logLeakCheck()) struct HostileLifecycleStoreTests {
    /// What one `callers` probe said: its `done` figures and its first error.
    struct Report: Equatable {
        var ok = 0
        var failed = 0
        var refreshes = 0
        var error: String?
    }

    /// The expired session every run starts from: due for a refresh at once.
    static func expiredSession() -> StoredSession {
        let token = TestSecrets.shared.register(
            AuthToken(
                accessToken: "cold-start-access-h4", refreshToken: "cold-start-refresh-h4",
                receivedAt: Date().addingTimeInterval(-7200), lifetime: 3600))
        return StoredSession(token: token, userID: "user-1", generation: 1)
    }

    /// Starts a `callers` probe on `directory` with `count` callers; its standard output is read line by line.
    static func startProbe(
        _ directory: URL, count: Int, gated: Bool
    ) throws -> (process: Process, lines: ProbeLines, input: Pipe) {
        let process = Process()
        process.executableURL = try FileTokenStoreProcessTests.probeURL()
        process.arguments = ["callers", directory.path, "shared", String(count), gated ? "gated" : "open"]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        return (process, ProbeLines(output.fileHandleForReading), input)
    }

    /// Reads a probe's lines to its end: its `done` figures and first error.
    static func finish(_ lines: ProbeLines) -> Report {
        var report = Report()
        while let line = lines.nextLine() {
            let words = line.split(separator: " ")
            if words.first == "done", words.count == 7 {
                report.ok = Int(words[2]) ?? -1
                report.failed = Int(words[4]) ?? -1
                report.refreshes = Int(words[6]) ?? -1
            } else if line.hasPrefix("error ") {
                report.error = String(line.dropFirst("error ".count))
            }
        }
        return report
    }

    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
    }

    /// The token endpoint answers only when the test opens its gate, long after the other processes' lock timeout
    /// (zero in the probes, so any wait outlasts it). The three processes waiting on the lock see its holder running,
    /// wait for its answer and use the pair it stored: no failed request, one refresh.
    @Test(.timeLimit(.minutes(10))) func aSlowTokenEndpointIsWaitedForByFourProcessesOnOneFileStore() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        let stored = Self.expiredSession()
        try await store.save(stored, account: "shared", condition: .always)
        let callers = 50

        let holder = try Self.startProbe(temporary.storeDirectory, count: callers, gated: true)
        var waiters: [(process: Process, lines: ProbeLines, input: Pipe)] = []
        defer {
            for probe in [holder] + waiters where probe.process.isRunning { probe.process.terminate() }
        }
        let holderLines = holder.lines
        #expect(try await onOwnThread { holderLines.nextLine() } == "refreshing")
        // Each waiter says "contended" once it finds the holder's lock: from then on it is past its lock timeout.
        for _ in 0..<3 {
            let waiter = try Self.startProbe(temporary.storeDirectory, count: callers, gated: false)
            waiters.append(waiter)
            let lines = waiter.lines
            #expect(try await onOwnThread { lines.nextLine() } == "contended")
        }
        let clock = ContinuousClock()
        let opened = clock.now
        holder.input.fileHandleForWriting.write(Data("go\n".utf8))
        var reports: [Report] = []
        var usable = Duration.zero
        for probe in [holder] + waiters {
            let lines = probe.lines
            reports.append(try await onOwnThread { Self.finish(lines) })
            usable = max(usable, opened.duration(to: clock.now))
            probe.process.waitUntilExit()
        }

        let failed = reports.map(\.failed).reduce(0, +)
        let refreshes = reports.map(\.refreshes).reduce(0, +)
        let after = try #require(await store.load(account: "shared").session)
        let lost = after.token.refreshToken == "cold-start-refresh-h4-next" ? 0 : 1
        print(
            "hostile-lifecycle: token endpoint slower than the lock timeout @ four processes on one FileTokenStore"
                + " | refreshes \(refreshes) | sessions lost \(lost) | failed requests \(failed)"
                + " | usable after \(Self.milliseconds(usable)) from the endpoint's answer")
        #expect(failed == 0, "first error: \(reports.compactMap(\.error).first ?? "none")")
        #expect(reports.map(\.ok) == Array(repeating: callers, count: 4))
        #expect(refreshes == 1, "each refresh token is presented once, by the lock's holder")
        #expect(after.generation == 2)
        #expect(lost == 0)
    }

    /// A cold start of four processes, 101 callers each, with an expired stored session: one refresh in all.
    @Test(.timeLimit(.minutes(10))) func aColdStartOfFourProcessesWith101CallersEachRefreshesOnce() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        try await store.save(Self.expiredSession(), account: "shared", condition: .always)
        let clock = ContinuousClock()
        let started = clock.now
        var probes: [(process: Process, lines: ProbeLines, input: Pipe)] = []
        for _ in 0..<4 { probes.append(try Self.startProbe(temporary.storeDirectory, count: 101, gated: false)) }
        var reports: [Report] = []
        for probe in probes {
            let lines = probe.lines
            reports.append(try await onOwnThread { Self.finish(lines) })
            probe.process.waitUntilExit()
        }
        let usable = started.duration(to: clock.now)
        let failed = reports.map(\.failed).reduce(0, +)
        let refreshes = reports.map(\.refreshes).reduce(0, +)
        let after = try #require(await store.load(account: "shared").session)
        let lost = after.token.refreshToken == "cold-start-refresh-h4-next" ? 0 : 1
        print(
            "hostile-lifecycle: 101 callers at cold start @ four processes on one FileTokenStore"
                + " | refreshes \(refreshes) | sessions lost \(lost) | failed requests \(failed)"
                + " | usable after \(Self.milliseconds(usable)) from the processes' launch")
        #expect(failed == 0, "first error: \(reports.compactMap(\.error).first ?? "none")")
        #expect(refreshes == 1)
        #expect(lost == 0)
    }

    /// A cold start of one process: 101 concurrent callers of an expired stored session share one refresh, which
    /// the token server holds until every caller has asked.
    @Test func aColdStartWith101CallersRefreshesOnce() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        try await store.save(Self.expiredSession(), account: "shared", condition: .always)
        let gate = HoldGate()
        let refreshes = Locked(0)
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { refreshToken in
                refreshes.withLock { $0 += 1 }
                await gate.wait()
                let presented = refreshToken ?? ""
                return TokenResponse(
                    accessToken: "\(presented)-next-access", refreshToken: "\(presented)-next", expiresIn: 3600)
            },
            store: store, configuration: .init(account: "shared"))
        let asked = Locked(0)
        let clock = ContinuousClock()
        let started = clock.now
        let callers = Task {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<101 {
                    group.addTask {
                        asked.withLock { $0 += 1 }
                        return (try? await client.validToken()) != nil
                    }
                }
                var failed = 0
                for await ok in group where !ok { failed += 1 }
                return failed
            }
        }
        await gate.waitForArrivals(1)
        while asked.withLock({ $0 }) < 101 { await Task.yield() }
        gate.open()
        let failed = await callers.value
        let usable = started.duration(to: clock.now)
        let lost = client.currentState == .signedIn(userID: "user-1") ? 0 : 1
        print(
            "hostile-lifecycle: 101 callers at cold start @ one process"
                + " | refreshes \(refreshes.withLock { $0 }) | sessions lost \(lost) | failed requests \(failed)"
                + " | usable after \(Self.milliseconds(usable)) from the first call")
        #expect(failed == 0)
        #expect(refreshes.withLock { $0 } == 1)
        #expect(lost == 0)
    }
}

/// Reads a probe's standard output line by line, from one thread at a time (each read on a thread of its own).
final class ProbeLines: Sendable {
    private let handle: FileHandle
    private let buffer = Locked<[UInt8]>([])

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, or `nil` at end of file.
    func nextLine() -> String? {
        while true {
            let line: String? = buffer.withLock { buffer in
                guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                defer { buffer.removeSubrange(...newline) }
                return String(decoding: buffer[..<newline], as: UTF8.self)
            }
            if let line { return line }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.withLock { $0.append(contentsOf: chunk) }
        }
    }
}
