import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A waiter for a lock file another holder has: the holder's recorded process ID and heartbeat decide how long it
/// waits. The other holder is a second open file description of the lock file in this process (`flock` locks belong
/// to one), written by the test; the waits are measured on a manual clock the test moves.
@Suite(.serialized, .logLeakCheck()) struct FileLockHolderTests {
    /// A `flock` on `account`'s lock file taken outside the store, naming `holder` (or nobody) in the file.
    final class ForeignHolder: Sendable {
        let descriptor: Int32

        init(_ store: FileTokenStore, account: String, naming holder: Int32?) throws {
            let lockPath = String(store.filePath(account: account).dropLast(".json".count)) + ".lock"
            descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            try #require(descriptor >= 0)
            try #require(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
            _ = ftruncate(descriptor, 0)
            if let holder {
                let text = Array("\(holder)\n".utf8)
                _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
            }
        }

        /// Sets the lock file's modification time (its holder's heartbeat) `seconds` into the past.
        func ageHeartbeat(by seconds: Int) {
            var times = [timespec](repeating: timespec(), count: 2)
            let then = time(nil) - seconds
            times[0].tv_sec = then
            times[1].tv_sec = then
            _ = futimens(descriptor, times)
        }

        /// Sets the heartbeat a minute ahead: fresh for the whole test however long a loaded machine takes, as a
        /// holder's own beat (every second) keeps it; the test's holder does not beat.
        func keepHeartbeatFresh() { ageHeartbeat(by: -60) }

        func release() {
            _ = flock(descriptor, LOCK_UN)
            _ = close(descriptor)
        }
    }

    /// A waiter asking for account "a"'s lock while `clock` moves 50 ms at a time: what it got, and how long it waited.
    static func waitForTheLock(
        _ store: FileTokenStore, clock: ManualClock
    ) async -> (Result<String, any Error>, Duration) {
        await FileTokenStoreProcessTests.advancing(clock, by: .milliseconds(50)) {
            try await store.withExclusiveAccess(account: "a") { "ran" }
        }
    }

    static func store(_ temporary: TemporaryDirectory, clock: ManualClock) -> FileTokenStore {
        var configuration = FileTokenStore.Configuration(
            lockTimeout: .milliseconds(300), liveHolderTimeout: .seconds(2))
        configuration.clock = StoreClock(clock)
        return FileTokenStore(directory: temporary.storeDirectory, configuration: configuration)
    }

    /// A process ID that is not running: a child that has already exited and been reaped.
    static func endedProcessID() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exit 0"]
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }

    @Test func aLockFileNamingNobodyIsWaitedForTheLockTimeoutOnly() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock()
        let store = Self.store(temporary, clock: clock)
        let holder = try ForeignHolder(store, account: "a", naming: nil)
        defer { holder.release() }
        let (result, waited) = await Self.waitForTheLock(store, clock: clock)
        #expect(throws: PersistenceError.lockTimedOut) { try result.get() }
        #expect(waited == .milliseconds(300))
    }

    @Test func aLockFileNamingAProcessThatEndedIsWaitedForTheLockTimeoutOnly() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock()
        let store = Self.store(temporary, clock: clock)
        let holder = try ForeignHolder(store, account: "a", naming: try Self.endedProcessID())
        defer { holder.release() }
        let (result, waited) = await Self.waitForTheLock(store, clock: clock)
        #expect(throws: PersistenceError.lockTimedOut) { try result.get() }
        #expect(waited == .milliseconds(300))
    }

    /// A task of this process is a holder at work: it is waited for up to the live holder's bound, not the lock
    /// timeout.
    @Test func aTaskOfThisProcessHoldingTheLockIsWaitedForUpToTheLiveHolderTimeout() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock()
        let store = Self.store(temporary, clock: clock)
        let release = HoldGate()
        let holder = Task { try await store.withExclusiveAccess(account: "a") { await release.wait() } }
        await release.waitForArrivals(1)
        let (result, waited) = await Self.waitForTheLock(store, clock: clock)
        #expect(throws: PersistenceError.lockTimedOut) { try result.get() }
        #expect(waited == .seconds(2))
        release.open()
        try await holder.value
    }

    /// A holder whose process runs but no longer touches its lock file (suspended, say) is not at work.
    @Test func aRunningHolderWhoseHeartbeatStoppedIsWaitedForTheLockTimeoutOnly() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock()
        let store = Self.store(temporary, clock: clock)
        let holder = try ForeignHolder(store, account: "a", naming: getpid())
        defer { holder.release() }
        holder.ageHeartbeat(by: 60)
        let (result, waited) = await Self.waitForTheLock(store, clock: clock)
        #expect(throws: PersistenceError.lockTimedOut) { try result.get() }
        #expect(waited == .milliseconds(300))
    }

    @Test func aRunningHolderIsWaitedForUpToTheLiveHolderTimeout() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock()
        let store = Self.store(temporary, clock: clock)
        let holder = try ForeignHolder(store, account: "a", naming: getpid())
        holder.keepHeartbeatFresh()
        defer { holder.release() }
        let (result, waited) = await Self.waitForTheLock(store, clock: clock)
        let error = #expect(throws: PersistenceError.lockTimedOut) { try result.get() }
        #expect(error?.detail?.contains("live holder") == true, "\(String(describing: error))")
        #expect(waited == .seconds(2))
    }

    @Test func aRunningHolderThatAnswersPastTheLockTimeoutHandsTheLockOver() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let clock = ManualClock()
        let contended = Locked(false)
        var configuration = Self.store(temporary, clock: clock).configuration
        configuration.lockContended = { contended.withLock { $0 = true } }
        let store = FileTokenStore(directory: temporary.storeDirectory, configuration: configuration)
        let holder = try ForeignHolder(store, account: "a", naming: getpid())
        holder.keepHeartbeatFresh()
        let ended = Locked(false)
        let waiter = Task {
            defer { ended.withLock { $0 = true } }
            return try await store.withExclusiveAccess(account: "a") { "ran" }
        }
        // Once the waiter has found the lock held, move the store's clock past its lock timeout while the holder keeps
        // the lock, then let go of it.
        while !contended.withLock({ $0 }) && !ended.withLock({ $0 }) { await Task.yield() }
        let started = clock.now
        while started.duration(to: clock.now) < .seconds(1) && !ended.withLock({ $0 }) {
            while clock.sleeperCount == 0 && !ended.withLock({ $0 }) { await Task.yield() }
            clock.advance(by: .milliseconds(50))
        }
        #expect(!ended.withLock { $0 }, "the waiter gave up while the holder was running")
        holder.release()
        let (result, _) = await FileTokenStoreProcessTests.advancing(clock, by: .milliseconds(50)) {
            try await waiter.value
        }
        #expect(try result.get() == "ran")
        // The lock file names no holder once the store has let go of it.
        let lockPath = String(store.filePath(account: "a").dropLast(".json".count)) + ".lock"
        #expect(try Data(contentsOf: URL(fileURLWithPath: lockPath)).isEmpty)
    }
}
