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

/// An app whose refreshes wait for lock files that another process holds keeps running its other work: a wait for
/// the file lock never takes one of the cooperative pool's threads (one per core), which every task of the app
/// shares.
@Suite(.serialized, .logLeakCheck()) struct FileLockPoolTests {
    /// More waiters than the pool has threads, each for its own account's lock file, held by "another process" (a
    /// descriptor of the test's own: `flock` locks belong to the open file). An unrelated task must run to the end
    /// while they all wait. If the waits blocked pool threads, nothing would run until the locks were released: a
    /// watchdog on a plain thread releases them after 300 s (a bound against hanging the test run, generous because
    /// a whole loaded test run delays every task by tens of seconds; never reached when the store behaves) and the
    /// test fails.
    @Test(arguments: [nil, .seconds(600)] as [Duration?])
    func waitersForLockFilesHeldElsewhereLeaveThePoolFreeForOtherTasks(lockTimeout: Duration?) async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory, configuration: .init(lockTimeout: lockTimeout))
        let waiters = ProcessInfo.processInfo.activeProcessorCount + 1
        let accounts = (0..<waiters).map { "pool-\($0)" }
        var descriptors: [Int32] = []
        for account in accounts {
            try await store.save(sampleSession(generation: 1), account: account, condition: .always)
            let lockPath = String(store.filePath(account: account).dropLast(".json".count)) + ".lock"
            let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            try #require(descriptor >= 0)
            try #require(flock(descriptor, LOCK_EX) == 0)
            descriptors.append(descriptor)
        }
        let held = HeldLocks(descriptors)
        defer { held.release() }
        held.releaseOnWatchdog(after: 300)

        let started = Countdown(waiters)
        let entered = Locked(0)
        let tasks = accounts.map { account in
            Task {
                started.tick()
                try await store.withExclusiveAccess(account: account) { entered.withLock { $0 += 1 } }
            }
        }
        // Runs once every waiter has started its wait (resumed by the last one, no polling); then checks that the
        // locks are still held by the test.
        let unrelated = Task {
            await started.reachedZero()
            return !held.releasedByWatchdog
        }
        let ranWhileTheLocksWereHeld = await unrelated.value
        #expect(
            ranWhileTheLocksWereHeld,
            "\(waiters) waiters for lock files held elsewhere kept an unrelated task from running until the locks were released"
        )
        #expect(entered.withLock { $0 } == 0 || held.releasedByWatchdog, "a body ran while its lock file was held")
        held.release()
        for task in tasks { try await task.value }
        #expect(entered.withLock { $0 } == waiters)
    }
}

/// Resumes whoever waits in `reachedZero()` once `tick()` was called `count` times.
private final class Countdown: Sendable {
    private let state: Locked<(left: Int, waiter: CheckedContinuation<Void, Never>?)>

    init(_ count: Int) { state = Locked((count, nil)) }

    func tick() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.left -= 1
            guard state.left == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func reachedZero() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                if state.left <= 0 { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}

/// `flock`ed descriptors, released once: by the test, or by a watchdog thread when the test cannot run.
private final class HeldLocks: Sendable {
    private let state: Locked<(descriptors: [Int32], byWatchdog: Bool)>

    init(_ descriptors: [Int32]) { state = Locked((descriptors, false)) }

    var releasedByWatchdog: Bool { state.withLock { $0.byWatchdog } }

    func release() { release(byWatchdog: false) }

    /// Starts a plain thread (not a task: the pool may be the thing that is stuck) that releases the locks after
    /// `seconds`, unless the test released them first.
    func releaseOnWatchdog(after seconds: Double) {
        Thread.detachNewThread {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if self.state.withLock({ $0.descriptors.isEmpty }) { return }
                Thread.sleep(forTimeInterval: 0.05)
            }
            self.release(byWatchdog: true)
        }
    }

    private func release(byWatchdog: Bool) {
        let descriptors: [Int32] = state.withLock { state in
            defer { state.descriptors = [] }
            if !state.descriptors.isEmpty && byWatchdog { state.byWatchdog = true }
            return state.descriptors
        }
        for descriptor in descriptors {
            _ = flock(descriptor, LOCK_UN)
            _ = close(descriptor)
        }
    }
}
