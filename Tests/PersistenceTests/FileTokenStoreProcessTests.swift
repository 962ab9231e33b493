import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenRefresh

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Several real processes against one store: crashes mid-write and contention for the lock.
///
/// The child is the `TokenStoreProbe` executable, which `swift build --build-tests` and `swift test` build
/// next to the test bundle. They run one at a time; their waits on pipes and child processes block a thread of
/// their own (`onOwnThread`), never one of the cooperative pool, which the rest of the test run needs.
@Suite(.serialized, .logLeakCheck()) struct FileTokenStoreProcessTests {
    /// The probe executable in the build products directory, next to the test binary.
    static func probeURL() throws -> URL { try ChildProcess.executable(named: "TokenStoreProbe") }

    /// Reads lines from a pipe without waiting for more than it needs.
    final class LineReader {
        private let handle: FileHandle
        private var buffer: [UInt8] = []

        init(_ handle: FileHandle) { self.handle = handle }

        /// The generation of the next `saved <g>` line, or `nil` at end of file.
        func nextSaved() -> UInt64? {
            guard let line = nextLine() else { return nil }
            return UInt64(line.dropFirst("saved ".count))
        }

        /// The next line, or `nil` at end of file.
        func nextLine() -> String? {
            while true {
                if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return line
                }
                let chunk = handle.availableData
                if chunk.isEmpty { return nil }
                buffer.append(contentsOf: chunk)
            }
        }
    }

    /// Burns a number of loop iterations: a jitter measured in work, not in time.
    @inline(never) static func spin(_ iterations: Int) -> UInt64 {
        var accumulator: UInt64 = 0
        for index in 0..<iterations { accumulator = accumulator &* 31 &+ UInt64(truncatingIfNeeded: index) }
        return accumulator
    }

    @Test func sigkillAtRandomPointsWhileSavingAlwaysLeavesTheOldOrTheNewSessionWhole() async throws {
        let probe = try Self.probeURL()
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededGenerator(seed: seed)
        var stored: UInt64 = 0  // the generation on disk after the previous round
        var sink: UInt64 = 0

        for round in 0..<200 {
            // Let 0 to 3 saves finish, then kill after a random amount of work: anywhere in a later save.
            let saves = Int.random(in: 0...3, using: &random)
            let work = Int.random(in: 0...3_000_000, using: &random)
            let directory = temporary.storeDirectory.path
            let (confirmed, spun, reason) = try await onOwnThread { [stored] in
                let process = Process()
                process.executableURL = probe
                process.arguments = ["save-loop", directory, "crash", String(stored + 1)]
                let output = Pipe()
                process.standardOutput = output
                try process.run()
                let reader = LineReader(output.fileHandleForReading)
                var confirmed = stored  // the last save the probe said had returned
                for _ in 0..<saves {
                    guard let generation = reader.nextSaved() else { break }
                    confirmed = generation
                }
                let spun = Self.spin(work)
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                while let generation = reader.nextSaved() { confirmed = generation }
                try? output.fileHandleForReading.close()
                return (confirmed, spun, process.terminationReason)
            }
            sink &+= spun
            #expect(reason == .uncaughtSignal, "round \(round): the probe ended on its own")

            let read = await store.load(account: "crash")
            if stored == 0 && confirmed == 0, read.isAbsent { continue }  // killed before its first save
            guard let session = read.session else {
                Issue.record(
                    "round \(round), seed \(seed): the session was lost: \(read.error?.description ?? "absent")")
                return
            }
            // Old or new, and whole: every field matches the generation it claims.
            #expect(session == probeSession(generation: session.generation), "round \(round), seed \(seed)")
            // The last save that returned, or the one the kill interrupted (its rename may have happened).
            #expect(
                session.generation == confirmed || session.generation == confirmed + 1,
                "round \(round), seed \(seed): generation \(session.generation), last confirmed \(confirmed)")
            stored = session.generation
        }
        #expect(sink != 1)  // keep the jitter from being optimised away
        let names = directoryNames(temporary.storeDirectory)
        #expect(names.filter { $0.contains(".corrupt-") }.isEmpty, "no file was ever damaged")
        #expect(names.filter { $0.contains(".tmp-") }.count <= 1, "stale temporaries are cleaned up")
        try await store.save(probeSession(generation: stored + 1), account: "crash", condition: .generation(stored))
        #expect(directoryNames(temporary.storeDirectory).filter { $0.contains(".tmp-") }.isEmpty)
    }

    @Test func fourProcessesIncrementingUnderTheLockLoseNoChange() async throws {
        let probe = try Self.probeURL()
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let workers = 4
        let rounds = 200
        let directory = temporary.storeDirectory.path
        let statuses = try await onOwnThread {
            var processes: [Process] = []
            for worker in 0..<workers {
                let process = Process()
                process.executableURL = probe
                process.arguments = ["increment", directory, "shared", String(rounds), "w\(worker)"]
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                processes.append(process)
            }
            return processes.map { process in
                process.waitUntilExit()
                return process.terminationStatus
            }
        }
        #expect(statuses == Array(repeating: 0, count: workers))
        let session = try #require(
            await FileTokenStore(directory: temporary.storeDirectory).load(account: "shared").session)
        #expect(session.generation == UInt64(workers * rounds))
        let expected = (0..<workers).map { "w\($0):\(rounds)" }.joined(separator: ",")
        #expect(session.token.scope == expected)
    }

    /// One process whose token request hangs holds the store's lock; another process waits for it as a running
    /// holder, up to its wait for a live holder (longer than its lock timeout), then answers instead of waiting
    /// behind it for ever, and never refreshes without the lock.
    @Test(.timeLimit(.minutes(10))) func aHungRefreshInAnotherProcessDoesNotBlockThisOne() async throws {
        let probe = try Self.probeURL()
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        // Valid for 100 more seconds of its hour: due for a proactive refresh, not expired.
        let token = TestSecrets.shared.register(
            AuthToken(
                accessToken: "hung-lock-access-x7", refreshToken: "hung-lock-refresh-x7",
                receivedAt: Date().addingTimeInterval(-3500), lifetime: 3600))
        try await FileTokenStore(directory: temporary.storeDirectory)
            .save(StoredSession(token: token, userID: "user-1", generation: 1), account: "hung", condition: .always)

        let process = Process()
        process.executableURL = probe
        process.arguments = ["hang-refresh", temporary.storeDirectory.path, "hung", "0"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let reading = output.fileHandleForReading
        #expect(try await onOwnThread { LineReader(reading).nextLine() } == "refreshing")

        let attempts = Locked(0)
        // The lock waits are measured on the store's clock, which the test moves 50 ms (the longest pause between
        // two tries of the lock) at a time whenever the store waits on it: each wait ends when its 0.6 s for a live
        // holder have passed on that clock, however slowly a loaded machine runs the tries.
        let clock = ManualClock()
        var configuration = FileTokenStore.Configuration(
            lockTimeout: .milliseconds(300), liveHolderTimeout: .milliseconds(600))
        configuration.clock = StoreClock(clock)
        let store = FileTokenStore(directory: temporary.storeDirectory, configuration: configuration)
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
                attempts.withLock { $0 += 1 }
                return TokenResponse(accessToken: "never-issued-access", refreshToken: "never-issued-refresh")
            },
            store: store, configuration: .init(account: "hung"))

        // The stored token is still valid: it is used although its refresh could not take the lock.
        let (valid, firstWait) = await Self.advancing(clock, by: .milliseconds(50)) { try await client.validToken() }
        #expect(try valid.get().accessToken == token.accessToken)

        // A forced refresh cannot use the rejected token: a transient error, and the session is kept.
        let (forced, secondWait) = await Self.advancing(clock, by: .milliseconds(50)) {
            try await client.refreshToken(afterRejectionOf: token.accessToken)
        }
        let error = #expect(throws: TokenRefreshError.self) { try forced.get() }
        #expect(error?.isTransient == true)
        #expect((error?.underlying as? PersistenceError) == .lockTimedOut)
        // One wait of 0.6 s each (the holder is running: past the 0.3-s lock timeout); the other process's refresh
        // never ends, so without the bound this would hang.
        #expect(firstWait == .milliseconds(600), "the token was answered after \(firstWait) of the store's clock")
        #expect(secondWait == .milliseconds(600), "the forced refresh failed after \(secondWait) of the store's clock")
        #expect(attempts.withLock { $0 } == 0, "never refreshes without the lock")
        #expect(client.currentState == .signedIn(userID: "user-1"))
        #expect(process.isRunning, "the other process still holds the lock")
    }

    /// Two processes on one store: the app signs Alice out and Bob in while another process still holds Alice's
    /// session. When that process re-reads the store for a refresh, Bob's session (stored at the generation Alice's
    /// had) is another session: it presents nothing and writes nothing.
    @Test(.timeLimit(.minutes(10))) func aProcessHoldingAnEndedSessionNeverRefreshesOverTheNextSignIn() async throws {
        let probe = try Self.probeURL()
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        let app = TokenRefreshClient(
            strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { _ in throw TokenRefreshError.transient },
            store: store, configuration: .init(account: "shared"))
        let token = { (name: String) in
            AuthToken(
                accessToken: "\(name)-access-p2", refreshToken: "\(name)-refresh-p2", receivedAt: Date(), lifetime: 3600
            )
        }
        _ = try await app.signIn(with: token("alice"), userID: "alice")

        let process = Process()
        process.executableURL = probe
        process.arguments = ["stale-refresh", temporary.storeDirectory.path, "shared", "0"]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let reading = output.fileHandleForReading
        // The probe prints nothing more until it reads a line: a reader per step loses nothing.
        #expect(try await onOwnThread { LineReader(reading).nextLine() } == "restored")

        try await app.signOut()
        _ = try await app.signIn(with: token("bob"), userID: "bob")
        input.fileHandleForWriting.write(Data("go\n".utf8))
        let said = try await onOwnThread { () -> [String] in
            let lines = LineReader(reading)
            var said: [String] = []
            while let line = lines.nextLine() {
                said.append(line)
                if line.hasPrefix("held") { break }
            }
            return said
        }

        #expect(!said.contains { $0.hasPrefix("presented") }, "the other process presented a refresh token: \(said)")
        #expect(said.contains("failed TokenRefreshError.sessionChanged"), "\(said)")
        let stored = try #require(await store.load(account: "shared").session, "Bob's session was removed")
        #expect(stored.userID == "bob", "Alice's session was written over Bob's")
        #expect(stored.token.refreshToken == "bob-refresh-p2")
        #expect(said.last == "held bob-access-p2", "\(said)")
    }

    /// Runs `operation`, moving `clock` by `step` whenever something waits on it; returns the outcome and how far the
    /// clock moved. Gives up (cancelling `operation`) once the clock has moved a minute, as a hang guard.
    static func advancing<T: Sendable>(
        _ clock: ManualClock, by step: Duration, _ operation: @escaping @Sendable () async throws -> T
    ) async -> (Result<T, any Error>, Duration) {
        let ended = Locked(false)
        let task = Task {
            defer { ended.withLock { $0 = true } }
            return try await operation()
        }
        let started = clock.now
        while true {
            while !ended.withLock({ $0 }) && clock.sleeperCount == 0 { await Task.yield() }
            if ended.withLock({ $0 }) { break }
            guard started.duration(to: clock.now) < .seconds(60) else {
                task.cancel()
                break
            }
            clock.advance(by: step)
        }
        return (await task.result, started.duration(to: clock.now))
    }
}
