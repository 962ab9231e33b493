import AuthToken
import Foundation
public import Persistence

/// Checks a ``/Persistence/TokenStore`` against the contract TokenKit relies on, from your own tests.
///
/// Give it a closure that opens a new handle on the *same* storage each time it is called (a new
/// connection pool on the same database, a new store on the same directory): two handles stand for two processes
/// or replicas sharing the storage. For a store that lives in memory, return the same instance each time. Each clause is checked on
/// an account of its own, named `tokenkit-conformance-...`, which the check removes afterwards.
///
/// ```swift
/// let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sessions-test")
/// let conformance = TokenStoreConformance { FileTokenStore(directory: directory) }
/// try await conformance.check()
/// ```
///
/// A check throws a ``Violation`` that names the broken ``Clause`` and what was seen, so the test fails with the
/// reason. It works from Swift Testing and from XCTest alike. No check waits for time to pass: the exclusive-access
/// checks hold a body open on a gate while the other handle waits, and step through store round trips. A check
/// fails when its handles make no progress (no operation finishes, no body starts) for `timeout` on `clock`, so a
/// store that deadlocks fails instead of hanging the test run (a task stuck in such a store is cancelled and left
/// behind), while a check that is slow, on a loaded machine say, but still moving is never failed by the bound.
public struct TokenStoreConformance: Sendable {
    private let openHandle: @Sendable () async throws -> any TokenStore
    private let disrupt: (@Sendable () async throws -> Void)?
    private let timeout: Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    /// How many store round trips a body makes, checking each time that no other body started.
    let roundTrips = 20

    /// Creates the checks for the store that `openHandle` opens.
    ///
    /// - Parameters:
    ///   - timeout: The longest a check may go without progress (no store operation finishing, no body starting)
    ///     before it fails as a deadlock; 60 s by default. A check that keeps moving is never failed by it.
    ///   - clock: The clock `timeout` runs on; a `ManualClock` in tests of the checks themselves.
    ///   - disrupt: Something that goes wrong while a body holds exclusive access and another handle waits: cut
    ///     the store's connections, restart its database, or make its next write fail once. The exclusion must
    ///     hold through it, and the body's save must still land (retried by the store) before the next holder
    ///     runs. `nil` checks without a disruption.
    ///   - openHandle: Opens a new handle on the storage under test. Called once or twice per clause, and once
    ///     more to remove the clause's account afterwards.
    public init(
        timeout: Duration = .seconds(60),
        clock: any Clock<Duration> = ContinuousClock(),
        disrupt: (@Sendable () async throws -> Void)? = nil,
        openHandle: @escaping @Sendable () async throws -> any TokenStore
    ) {
        self.openHandle = openHandle
        self.disrupt = disrupt
        self.timeout = timeout
        self.sleep = { duration in try await clock.sleep(for: duration) }
    }

    /// Checks `clauses` one after the other and stops at the first broken one.
    ///
    /// - Parameter clauses: The clauses to check; all of them by default. A store private to one client that
    ///   keeps the protocol's default `withExclusiveAccess` (which takes no lock) checks ``Clause/unsharedStore``.
    /// - Throws: A ``Violation`` naming the broken clause, or what `openHandle` or `disrupt` threw.
    public func check(_ clauses: [Clause] = Clause.all) async throws {
        for clause in clauses {
            let account = "tokenkit-conformance-\(clause.name)-\(UUID().uuidString.prefix(8).lowercased())"
            let progress = CheckProgress()
            try await bounded(clause, progress: progress) {
                try await CheckProgress.$current.withValue(progress) {
                    try await self.run(clause, account: account)
                }
            }
            // Best effort: leave nothing behind. A store that failed its check may fail here too.
            if let handle = try? await openHandle() {
                try? await handle.remove(account: account, condition: .always)
            }
        }
    }

    private func run(_ clause: Clause, account: String) async throws {
        switch clause {
        case .load: try await checkLoad(account)
        case .conditionalWrites: try await checkConditionalWrites(account)
        case .removalOfASessionAtAnyGeneration: try await checkRemovalOfASessionAtAnyGeneration(account)
        case .removingAnAbsentSession: try await checkRemovingAnAbsentSession(account)
        case .exclusion, .saveInsideExclusiveAccess: try await checkExclusion(account)
        case .release: try await checkRelease(account)
        case .nestedExclusiveAccess: try await checkNestedExclusiveAccess(account)
        case .perAccountExclusion: try await checkPerAccountExclusion(account)
        default: throw Violation(clause, "this version of the checks does not know the clause")
        }
    }

    /// Runs `operation` in a task of its own and fails with a violation of `clause` when the handles it uses have
    /// made no progress for a whole `timeout` (the task is cancelled and left behind: a deadlocked store may never
    /// return). A slow operation that goes on making progress runs to its end.
    private func bounded(
        _ clause: Clause, progress: CheckProgress, _ operation: @escaping @Sendable () async throws -> Void
    ) async throws {
        let work = Task { try await operation() }
        let timeout = self.timeout
        let sleep = self.sleep
        let finished: Result<Void, any Error>? = await withCheckedContinuation { continuation in
            let once = Locked<CheckedContinuation<Result<Void, any Error>?, Never>?>(continuation)
            let timer = Task {
                // A watchdog: each period with progress starts another one.
                var seen = progress.steps
                while true {
                    do { try await sleep(timeout) } catch { return }
                    let now = progress.steps
                    if now == seen { break }
                    seen = now
                }
                once.withLock { $0.take() }?.resume(returning: nil)
            }
            Task {
                let result = await work.result
                timer.cancel()
                once.withLock { $0.take() }?.resume(returning: result)
            }
        }
        guard let finished else {
            work.cancel()
            throw Violation(clause, "the check made no progress within \(timeout): the store may have deadlocked")
        }
        try finished.get()
    }

    // MARK: Storage clauses

    private func checkLoad(_ account: String) async throws {
        let (first, second) = try await (open(), open())
        let sessions = Sessions()
        for handle in [first, second] {
            let read = await handle.load(account: account)
            guard case .absent = read else {
                throw Violation(.load, "an account never saved loads as \(read.summary), not absent")
            }
        }
        let saved = sessions.make(generation: 1)
        try await expectNoThrow(.load, "saving generation 1 with .always") {
            try await first.save(saved, account: account, condition: .always)
        }
        for handle in [first, second] {
            let read = await handle.load(account: account)
            guard case .found(let found) = read else {
                throw Violation(.load, "a saved session loads as \(read.summary), not found")
            }
            guard sessions.same(found, saved) else {
                throw Violation(
                    .load, "the session loaded (generation \(found.generation)) is not the one saved (generation 1)")
            }
        }
        try await expectNoThrow(.load, "removing generation 1 with .generation(1)") {
            try await second.remove(account: account, condition: .generation(1))
        }
        for handle in [first, second] {
            let read = await handle.load(account: account)
            guard case .absent = read else {
                throw Violation(.load, "a removed session loads as \(read.summary), not absent")
            }
        }
    }

    private func checkConditionalWrites(_ account: String) async throws {
        let (first, second) = try await (open(), open())
        let sessions = Sessions()
        let clause = Clause.conditionalWrites
        try await expectNoThrow(clause, "saving generation 1 with .absent when nothing is stored") {
            try await first.save(sessions.make(generation: 1), account: account, condition: .absent)
        }
        try await expectConflict(clause, "saving with .absent when generation 1 is stored") {
            try await second.save(sessions.make(generation: 9), account: account, condition: .absent)
        }
        try await expectStored(1, on: first, account, clause, after: "a refused save with .absent")
        try await expectNoThrow(clause, "saving generation 2 with .generation(1) when 1 is stored") {
            try await second.save(sessions.make(generation: 2), account: account, condition: .generation(1))
        }
        try await expectConflict(clause, "a stale save with .generation(1) when 2 is stored") {
            try await first.save(sessions.make(generation: 3), account: account, condition: .generation(1))
        }
        try await expectStored(2, on: second, account, clause, after: "a stale save")
        try await expectConflict(clause, "a stale removal with .generation(1) when 2 is stored") {
            try await first.remove(account: account, condition: .generation(1))
        }
        try await expectStored(2, on: second, account, clause, after: "a stale removal")
        try await expectNoThrow(clause, "saving generation 3 with .always") {
            try await first.save(sessions.make(generation: 3), account: account, condition: .always)
        }
        try await expectStored(3, on: second, account, clause, after: "a save with .always")
        try await expectNoThrow(clause, "removing with .generation(3) when 3 is stored") {
            try await second.remove(account: account, condition: .generation(3))
        }
        try await expectConflict(clause, "a save with .generation(3) after the session was removed") {
            try await first.save(sessions.make(generation: 4), account: account, condition: .generation(3))
        }
        let read = await second.load(account: account)
        guard case .absent = read else {
            throw Violation(clause, "a refused save brought a removed session back: it loads as \(read.summary)")
        }
        // A session signed in later may be stored at a generation an ended one had: only the identity tells them apart.
        let later = sessions.make(generation: 1, sessionID: "conformance-later-session")
        try await expectNoThrow(clause, "saving a session with an identity, generation 1, with .absent") {
            try await first.save(later, account: account, condition: .absent)
        }
        try await expectConflict(clause, "a removal conditional on another session at generation 1") {
            try await second.remove(account: account, condition: .session("conformance-ended-session", generation: 1))
        }
        try await expectConflict(clause, "a save conditional on a session without identity at generation 1") {
            try await second.save(
                sessions.make(generation: 2), account: account, condition: .session(nil, generation: 1))
        }
        guard case .found(let kept) = await second.load(account: account), sessions.same(kept, later) else {
            throw Violation(clause, "the session saved with an identity did not load as saved, with its identity")
        }
        try await expectNoThrow(clause, "removing with .session(its identity, generation: 1)") {
            try await first.remove(account: account, condition: .session(later.sessionID, generation: 1))
        }
    }

    private func checkRemovalOfASessionAtAnyGeneration(_ account: String) async throws {
        let (first, second) = try await (open(), open())
        let sessions = Sessions()
        let clause = Clause.removalOfASessionAtAnyGeneration
        let (ended, later) = ("conformance-ended-session", "conformance-later-session")
        try await expectNoThrow(clause, "saving a session with an identity, generation 1, with .absent") {
            try await first.save(sessions.make(generation: 1, sessionID: ended), account: account, condition: .absent)
        }
        // Another process refreshed it since the sign-out's process last read it.
        try await expectNoThrow(clause, "saving its generation 2 with .session(its identity, generation: 1)") {
            try await second.save(
                sessions.make(generation: 2, sessionID: ended), account: account,
                condition: .session(ended, generation: 1))
        }
        try await expectConflict(clause, "a removal conditional on another session at any generation") {
            try await first.remove(account: account, condition: .sessionAtAnyGeneration(later))
        }
        try await expectConflict(clause, "a removal conditional on a session without identity at any generation") {
            try await first.remove(account: account, condition: .sessionAtAnyGeneration(nil))
        }
        try await expectStored(2, on: second, account, clause, after: "a removal conditional on another session")
        try await expectNoThrow(clause, "removing with .sessionAtAnyGeneration(its identity) at generation 2") {
            try await first.remove(account: account, condition: .sessionAtAnyGeneration(ended))
        }
        guard case .absent = await second.load(account: account) else {
            throw Violation(clause, "the session removed at any generation is still stored")
        }
        try await expectNoThrow(clause, "removing with .sessionAtAnyGeneration(_:) when nothing is stored") {
            try await second.remove(account: account, condition: .sessionAtAnyGeneration(ended))
        }
        // Another process signed a new session in since: the ended session's removal leaves it.
        let signedInLater = sessions.make(generation: 1, sessionID: later)
        try await expectNoThrow(clause, "saving a session signed in later, generation 1, with .absent") {
            try await second.save(signedInLater, account: account, condition: .absent)
        }
        try await expectConflict(clause, "the ended session's removal after another session was stored") {
            try await first.remove(account: account, condition: .sessionAtAnyGeneration(ended))
        }
        guard case .found(let kept) = await first.load(account: account), sessions.same(kept, signedInLater) else {
            throw Violation(clause, "the session signed in later did not survive the ended session's removal")
        }
    }

    private func checkRemovingAnAbsentSession(_ account: String) async throws {
        let handle = try await open()
        for condition in [WriteCondition.always, .absent] {
            try await expectNoThrow(
                .removingAnAbsentSession, "removing a session that is not there with \(condition.summary)"
            ) {
                try await handle.remove(account: account, condition: condition)
            }
        }
        let read = await handle.load(account: account)
        guard case .absent = read else {
            throw Violation(.removingAnAbsentSession, "after removing nothing, the account loads as \(read.summary)")
        }
    }

    // MARK: Helpers shared by the checks

    /// Opens a new handle whose operations count as the running check's progress.
    func open() async throws -> any TokenStore {
        let handle = try await openHandle()
        guard let progress = CheckProgress.current else { return handle }
        return WatchedStore(base: handle, progress: progress)
    }

    /// The disruption, if any.
    var disruption: (@Sendable () async throws -> Void)? { disrupt }

    func expectNoThrow(
        _ clause: Clause, _ what: String, _ operation: () async throws -> Void
    ) async throws(Violation) {
        do {
            try await operation()
        } catch {
            throw Violation(clause, "\(what) threw \(error)")
        }
    }

    func expectConflict(_ clause: Clause, _ what: String, _ operation: () async throws -> Void) async throws(Violation)
    {
        do {
            try await operation()
        } catch let error as PersistenceError where error == .conflict {
            return
        } catch {
            throw Violation(clause, "\(what) threw \(error), not PersistenceError.conflict")
        }
        throw Violation(clause, "\(what) succeeded; it must throw PersistenceError.conflict and change nothing")
    }

    func expectStored(
        _ generation: UInt64, on handle: any TokenStore, _ account: String, _ clause: Clause, after what: String
    ) async throws(Violation) {
        let read = await handle.load(account: account)
        guard case .found(let found) = read, found.generation == generation else {
            throw Violation(clause, "after \(what), the account loads as \(read.summary), not generation \(generation)")
        }
    }
}

/// The sessions a check saves: token text of its own (reported to the log leak check as secrets, so a store that
/// logs it is caught), recognisable by generation.
struct Sessions: Sendable {
    private let tag = UUID().uuidString.prefix(8).lowercased()

    func make(generation: UInt64, sessionID: String? = nil) -> StoredSession {
        let access = "conformance-access-\(tag)-\(generation)"
        let refresh = "conformance-refresh-\(tag)-\(generation)"
        SecretCrossings.report(.secret(access, .accessToken), origin: "TokenStoreConformance")
        SecretCrossings.report(.secret(refresh, .refreshToken), origin: "TokenStoreConformance")
        let token = AuthToken(
            accessToken: access, refreshToken: refresh, receivedAt: Date(timeIntervalSince1970: 1_800_000_000),
            lifetime: 3600)
        return StoredSession(
            token: token, userID: "conformance-user-\(generation)", generation: generation, sessionID: sessionID)
    }

    /// Whether a loaded session is the one saved: the same tokens, user, generation and identity.
    func same(_ loaded: StoredSession, _ saved: StoredSession) -> Bool {
        loaded.generation == saved.generation && loaded.userID == saved.userID && loaded.sessionID == saved.sessionID
            && loaded.token.accessToken == saved.token.accessToken
            && loaded.token.refreshToken == saved.token.refreshToken
    }
}

extension TokenStoreRead {
    /// What a read found, without token text: `found generation n`, `absent` or `unavailable (error)`.
    var summary: String {
        switch self {
        case .found(let session): "found generation \(session.generation)"
        case .absent: "absent"
        case .unavailable(let error): "unavailable (\(error))"
        }
    }
}

extension WriteCondition {
    /// The condition as written in code.
    var summary: String {
        switch self {
        case .always: ".always"
        case .absent: ".absent"
        default: ".generation(_:)"
        }
    }
}

/// How far the running check has got: a count of store operations finished and bodies started through its handles.
final class CheckProgress: Sendable {
    /// The progress of the check this task runs.
    @TaskLocal static var current: CheckProgress?

    private let count = Locked(0)

    /// The steps made so far.
    var steps: Int { count.withLock { $0 } }

    /// One more step.
    func step() { count.withLock { $0 += 1 } }
}

/// A handle of the store under test that counts its finished operations and started bodies as progress, for the
/// deadlock bound. Every operation goes to `base` as it is.
struct WatchedStore: TokenStore {
    let base: any TokenStore
    let progress: CheckProgress

    func load(account: String) async -> TokenStoreRead {
        defer { progress.step() }
        return await base.load(account: account)
    }

    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        defer { progress.step() }
        try await base.save(session, account: account, condition: condition)
    }

    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        defer { progress.step() }
        try await base.remove(account: account, condition: condition)
    }

    func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        defer { progress.step() }
        let progress = self.progress
        return try await base.withExclusiveAccess(account: account) {
            progress.step()
            return try await body()
        }
    }
}
