import AuthToken
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

/// The built-in stores keep the contract, as the test kit's conformance checks state it.
///
/// The checks' deadlock bound runs on a clock nobody advances: in a whole test run on a loaded machine the real 60-s
/// bound fired on a healthy file store (every task there waits tens of seconds for a thread). The suite's time
/// limit still ends a check that hangs.
@Suite(.logLeakCheck(), .timeLimit(.minutes(10))) struct TokenStoreConformanceTests {
    @Test func anInMemoryStoreKeepsTheClausesOfAStoreForOneClient() async throws {
        let store = InMemoryTokenStore()
        try await TokenStoreConformance(clock: ManualClock()) { store }.check(
            TokenStoreConformance.Clause.unsharedStore)
    }

    @Test func anInMemoryStoreDoesNotExcludeAnotherClientAsDocumented() async throws {
        let store = InMemoryTokenStore()
        #expect(
            await firstViolation(of: TokenStoreConformance(clock: ManualClock()) { store }, [.exclusion])?.clause
                == .exclusion)
    }

    @Test func aClosureStoreForwardingToAnotherKeepsEveryClause() async throws {
        let inner = InMemoryTokenStore()
        try await TokenStoreConformance(clock: ManualClock()) { ClosureTokenStore(forwardingTo: inner) }.check(
            TokenStoreConformance.Clause.unsharedStore)
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        try await TokenStoreConformance(clock: ManualClock()) {
            ClosureTokenStore(forwardingTo: FileTokenStore(directory: temporary.storeDirectory))
        }.check()
    }

    @Test func aClosureStoreWithItsOwnLockKeepsEveryClause() async throws {
        let inner = InMemoryTokenStore()
        let lock = serialLock()
        try await TokenStoreConformance(clock: ManualClock()) { closureStore(over: inner, exclusiveAccess: lock) }
            .check()
    }

    @Test func twoFileStoresOnOneDirectoryKeepEveryClause() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        try await TokenStoreConformance(clock: ManualClock()) { FileTokenStore(directory: temporary.storeDirectory) }
            .check()
    }

    @Test func aFileStoreLandsTheBodysSaveThroughATransientWriteError() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let armed = Locked(false)
        // The next write of the temporary file fails once with EIO, as a flaky disk or network file system does.
        let configuration = {
            var configuration = FileTokenStore.Configuration()
            configuration.faults = FileFaults { step in
                step == .write
                    && armed.withLock { armed in
                        defer { armed = false }; return armed
                    } ? EIO : nil
            }
            return configuration
        }()
        let conformance = TokenStoreConformance(clock: ManualClock(), disrupt: { armed.withLock { $0 = true } }) {
            FileTokenStore(directory: temporary.storeDirectory, configuration: configuration)
        }
        try await conformance.check([.exclusion, .saveInsideExclusiveAccess])
    }

    @Test func theFileStoresFlockExcludesAnotherOpenFileOfTheSameProcess() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        // No lock timeout: this test is about exclusion, and a loaded machine may hold the loop below for seconds.
        let store = FileTokenStore(directory: temporary.storeDirectory, configuration: .init(lockTimeout: nil))
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        // The lock file sits next to the session file; take its flock through a descriptor of our own, as another
        // process would (flock locks belong to the open file, not to the process).
        let lockPath = String(store.filePath(account: "alice").dropLast(".json".count)) + ".lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { _ = close(descriptor) }
        try #require(flock(descriptor, LOCK_EX) == 0)
        let started = Locked(false)
        let waiter = Task {
            try await store.withExclusiveAccess(account: "alice") { started.withLock { $0 = true } }
        }
        for _ in 0..<50 {
            _ = await store.load(account: "alice")
            await Task.yield()
            #expect(!started.withLock { $0 }, "the body ran while another open file held the flock")
        }
        _ = flock(descriptor, LOCK_UN)
        try await waiter.value
        #expect(started.withLock { $0 })
    }
}

/// The checks fail for a store that breaks a clause, and name that clause.
///
/// Each check's deadlock bound runs on a clock that never moves unless the test is about that bound: the broken
/// stores below are caught by what they do, and on a loaded machine a real 60-s bound has fired first. The suite's
/// time limit still ends a check that hangs.
@Suite(.logLeakCheck(), .timeLimit(.minutes(10))) struct TokenStoreConformanceFailureTests {
    /// A clock nobody advances: the checks' deadlock bound never fires.
    static var stopped: ManualClock { ManualClock() }

    @Test func aStoreWhoseExclusiveAccessTakesNoLockBreaksExclusion() async throws {
        let inner = InMemoryTokenStore()
        let violation = await firstViolation(
            of: TokenStoreConformance(clock: Self.stopped) { closureStore(over: inner) }, [.exclusion])
        #expect(violation?.clause == .exclusion)
        #expect(violation?.description.contains("another handle's body started") == true)
    }

    @Test func aSaveThatIgnoresItsConditionBreaksConditionalWrites() async throws {
        let inner = InMemoryTokenStore()
        let lock = serialLock()
        let conformance = TokenStoreConformance(clock: Self.stopped) {
            closureStore(
                over: inner, exclusiveAccess: lock,
                save: { session, account, _ in try await inner.save(session, account: account, condition: .always) })
        }
        let violation = await firstViolation(of: conformance, [.conditionalWrites])
        #expect(violation?.clause == .conditionalWrites)
        #expect(violation?.description.contains("must throw PersistenceError.conflict") == true)
    }

    @Test func aRemovalThatIgnoresItsConditionBreaksConditionalWrites() async throws {
        let inner = InMemoryTokenStore()
        let lock = serialLock()
        let conformance = TokenStoreConformance(clock: Self.stopped) {
            closureStore(
                over: inner, exclusiveAccess: lock,
                remove: { account, _ in try await inner.remove(account: account, condition: .always) })
        }
        #expect(await firstViolation(of: conformance, [.conditionalWrites])?.clause == .conditionalWrites)
    }

    @Test func aStoreThatReadsNothingAsUnavailableBreaksLoad() async throws {
        let inner = InMemoryTokenStore()
        let conformance = TokenStoreConformance(clock: Self.stopped) {
            closureStore(
                over: inner,
                load: { account in
                    let read = await inner.load(account: account)
                    if case .absent = read { return .unavailable(.readFailed) }
                    return read
                })
        }
        let violation = await firstViolation(of: conformance, [.load])
        #expect(violation?.clause == .load)
        #expect(violation?.detail.contains("unavailable") == true)
    }

    @Test func aStoreThatRefusesToRemoveNothingBreaksRemovingAnAbsentSession() async throws {
        let inner = InMemoryTokenStore()
        let conformance = TokenStoreConformance(clock: Self.stopped) {
            closureStore(
                over: inner,
                remove: { account, condition in
                    guard case .found = await inner.load(account: account) else { throw PersistenceError.writeFailed }
                    try await inner.remove(account: account, condition: condition)
                })
        }
        #expect(await firstViolation(of: conformance, [.removingAnAbsentSession])?.clause == .removingAnAbsentSession)
    }

    @Test func aStoreThatRemovesAnySessionForASignOutBreaksRemovalOfASessionAtAnyGeneration() async throws {
        let inner = InMemoryTokenStore()
        let conformance = TokenStoreConformance(clock: Self.stopped) {
            closureStore(
                over: inner,
                remove: { account, condition in
                    let judged = condition == .sessionAtAnyGeneration("conformance-ended-session") ? .always : condition
                    try await inner.remove(account: account, condition: judged)
                })
        }
        let violation = await firstViolation(of: conformance, [.removalOfASessionAtAnyGeneration])
        #expect(violation?.clause == .removalOfASessionAtAnyGeneration)
        #expect(violation?.detail.contains("after another session was stored") == true)
    }

    @Test func aSaveInsideTheBodyThatFailsOnceAndIsNotRetriedBreaksSaveInsideExclusiveAccess() async throws {
        let inner = InMemoryTokenStore()
        let armed = Locked(false)
        let lock = serialLock()
        let conformance = TokenStoreConformance(clock: Self.stopped, disrupt: { armed.withLock { $0 = true } }) {
            closureStore(
                over: inner, exclusiveAccess: lock,
                save: { session, account, condition in
                    if armed.withLock({ armed in
                        defer { armed = false }; return armed
                    }) {
                        throw PersistenceError.writeFailed.with(detail: "connection closed")
                    }
                    try await inner.save(session, account: account, condition: condition)
                })
        }
        let violation = await firstViolation(of: conformance, [.saveInsideExclusiveAccess])
        #expect(violation?.clause == .saveInsideExclusiveAccess)
        #expect(violation?.detail.contains("not generation 2") == true)
    }

    @Test func aStoreThatReplacesTheBodysErrorBreaksRelease() async throws {
        let inner = InMemoryTokenStore()
        let conformance = TokenStoreConformance(clock: Self.stopped) {
            closureStore(
                over: inner,
                exclusiveAccess: { _, body in
                    do { try await body() } catch { throw PersistenceError.lockFailed }
                })
        }
        let violation = await firstViolation(of: conformance, [.release])
        #expect(violation?.clause == .release)
        #expect(violation?.detail.contains("PersistenceError.lockFailed") == true)
    }

    @Test func aLockThatWaitsForItselfBreaksNestedExclusiveAccessWithinTheTimeout() async throws {
        let inner = InMemoryTokenStore()
        let clock = ManualClock()
        let conformance = TokenStoreConformance(timeout: .seconds(30), clock: clock) {
            closureStore(over: inner, exclusiveAccess: nonReentrantLock(key: "nested-\(UUID().uuidString)"))
        }
        let violation = await advancing(clock, by: .seconds(30), whileAtLeast: 1) {
            await firstViolation(of: conformance, [.nestedExclusiveAccess])
        }
        #expect(violation?.clause == .nestedExclusiveAccess)
        #expect(violation?.detail.contains("made no progress within") == true)
    }

    @Test func oneLockForEveryAccountBreaksPerAccountExclusionWithinTheTimeout() async throws {
        let inner = InMemoryTokenStore()
        let clock = ManualClock()
        let key = "one-for-all-\(UUID().uuidString)"
        let conformance = TokenStoreConformance(timeout: .seconds(30), clock: clock) {
            closureStore(over: inner, exclusiveAccess: nonReentrantLock(key: key, perAccount: false))
        }
        let violation = await advancing(clock, by: .seconds(30), whileAtLeast: 1) {
            await firstViolation(of: conformance, [.perAccountExclusion])
        }
        #expect(violation?.clause == .perAccountExclusion)
    }

    /// The bound is a deadlock guard, not a time limit: a store whose every read and save takes a third of the bound
    /// keeps the contract although a check takes several bounds in all.
    @Test func aSlowStoreThatKeepsMovingIsNotTakenForADeadlock() async throws {
        let inner = InMemoryTokenStore()
        let clock = ManualClock()
        let slowly: @Sendable () async -> Void = { try? await clock.sleep(for: .seconds(10)) }
        let conformance = TokenStoreConformance(timeout: .seconds(30), clock: clock) {
            closureStore(
                over: inner,
                load: { account in
                    await slowly()
                    return await inner.load(account: account)
                },
                save: { session, account, condition in
                    await slowly()
                    try await inner.save(session, account: account, condition: condition)
                })
        }
        // The bound's watchdog and one store operation sleep at a time: the clock moves only while both do.
        let elapsed = await advancing(clock, by: .seconds(10), whileAtLeast: 2) {
            do {
                try await conformance.check([.load, .conditionalWrites, .removingAnAbsentSession])
            } catch {
                Issue.record("the checks failed a slow store that keeps the contract: \(error)")
            }
            return clock.now
        }
        #expect(elapsed > ManualClock().now.advanced(by: .seconds(60)), "the checks took less than two bounds")
    }

    @Test func aViolationNamesTheClauseAndNoTokenText() async throws {
        let inner = InMemoryTokenStore()
        let conformance = TokenStoreConformance(clock: Self.stopped) {
            closureStore(
                over: inner,
                save: { session, account, _ in try await inner.save(session, account: account, condition: .always) })
        }
        let violation = try #require(await firstViolation(of: conformance, [.conditionalWrites]))
        #expect(violation.description.hasPrefix("TokenStore contract broken (conditionalWrites): "))
        #expect(!violation.description.contains("conformance-access"))
        #expect(!violation.description.contains("conformance-refresh"))
    }
}

// MARK: - Doubles

/// Runs `check`, moving `clock` on by `step` whenever at least `sleepers` tasks sleep on it, until `check` ends.
private func advancing<T: Sendable>(
    _ clock: ManualClock, by step: Duration, whileAtLeast sleepers: Int, _ check: @escaping @Sendable () async -> T
) async -> T {
    let done = Locked(false)
    let task = Task {
        defer { done.withLock { $0 = true } }
        return await check()
    }
    while !done.withLock({ $0 }) {
        if clock.sleeperCount >= sleepers {
            clock.advance(by: step)
        } else {
            await Task.yield()
        }
    }
    return await task.value
}

/// The violation `conformance` reports for `clauses`, or `nil` (recorded as an issue) when it reports none.
private func firstViolation(
    of conformance: TokenStoreConformance, _ clauses: [TokenStoreConformance.Clause]
) async -> TokenStoreConformance.Violation? {
    do {
        try await conformance.check(clauses)
        Issue.record("the checks passed a store that breaks \(clauses)")
        return nil
    } catch let violation as TokenStoreConformance.Violation {
        return violation
    } catch {
        Issue.record("the checks threw \(error), not a violation")
        return nil
    }
}

/// A closure store over `inner`, each operation replaceable; without `exclusiveAccess`, bodies run without a lock.
private func closureStore(
    over inner: InMemoryTokenStore,
    exclusiveAccess: ClosureTokenStore.ExclusiveAccess? = nil,
    load: ClosureTokenStore.Load? = nil,
    save: ClosureTokenStore.Save? = nil,
    remove: ClosureTokenStore.Remove? = nil
) -> ClosureTokenStore {
    ClosureTokenStore(
        load: load ?? { account in await inner.load(account: account) },
        save: save ?? { session, account, condition in
            try await inner.save(session, account: account, condition: condition)
        },
        remove: remove ?? { account, condition in try await inner.remove(account: account, condition: condition) },
        exclusiveAccess: exclusiveAccess)
}

/// A lock per account shared by every closure store of this test, taken again at once by a nested body.
private func serialLock() -> ClosureTokenStore.ExclusiveAccess {
    let prefix = "closure-\(UUID().uuidString)|"
    return { account, body in try await ProcessLocalLocks.shared.withLock(prefix + account) { try await body() } }
}

/// A lock that a nested body waits for, forever: a deadlock the checks must report instead of hanging. With
/// `perAccount` false, one lock for every account.
private func nonReentrantLock(key: String, perAccount: Bool = true) -> ClosureTokenStore.ExclusiveAccess {
    { account, body in
        let key = perAccount ? key + "|" + account : key
        try await ProcessLocalLocks.shared.acquire(key)
        defer { ProcessLocalLocks.shared.release(key) }
        try await body()
    }
}
