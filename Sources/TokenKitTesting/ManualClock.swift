public import Foundation

/// A clock that moves only when told to, for tests: `sleep` suspends until ``advance(by:)`` passes the
/// deadline. Deterministic, cancellation-aware, and paired with a wall clock (``date``) that moves with it.
///
/// ```swift
/// let clock = ManualClock()
/// let client = TokenRefreshClient(strategy: strategy, clock: clock, now: clock.wallClock)
/// // ... start something that backs off ...
/// await clock.waitForSleepers(count: 1)
/// clock.advance(by: .seconds(2))
/// ```
public final class ManualClock: Clock, Sendable {
    /// A point on a ``ManualClock``: the time since the clock was made.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable {
        /// The time since the clock's start.
        package let offset: Duration

        /// Creates an instant.
        ///
        /// - Parameter offset: The time since the clock's start.
        package init(offset: Duration) { self.offset = offset }

        /// The instant `duration` later.
        ///
        /// - Parameter duration: The duration to add.
        /// - Returns: The later instant.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }

        /// The duration from this instant to `other`.
        ///
        /// - Parameter other: The other instant.
        /// - Returns: The duration.
        public func duration(to other: Instant) -> Duration { other.offset - offset }

        /// Orders instants by offset.
        ///
        /// - Parameters:
        ///   - lhs: An instant.
        ///   - rhs: Another instant.
        /// - Returns: Whether `lhs` is earlier.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelledBeforeRegistration: Set<UInt64> = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    // Locked (LockedValue), not Mutex: ThreadSanitizer on Linux does not follow Mutex's futex.
    private let state = Locked(State())
    /// The wall-clock date at the clock's start.
    package let startDate: Date

    /// Creates a clock at offset zero.
    ///
    /// - Parameter startDate: The wall-clock date that offset zero stands for.
    public init(startDate: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.startDate = startDate
    }

    /// The current instant.
    public var now: Instant { state.withLock { $0.now } }

    /// The clock's resolution: exact.
    public var minimumResolution: Duration { .zero }

    /// The wall-clock date now: `startDate` plus the time advanced so far.
    public var date: Date {
        let offset = now.offset.components
        return startDate.addingTimeInterval(Double(offset.seconds) + Double(offset.attoseconds) / 1e18)
    }

    /// A `now` closure for code that takes wall time: it follows ``advance(by:)``.
    public var wallClock: @Sendable () -> Date { { [self] in self.date } }

    /// How many tasks are sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Suspends until the clock reaches `deadline`, or throws `CancellationError` when the task is cancelled.
    ///
    /// - Parameters:
    ///   - deadline: The instant to wake at.
    ///   - tolerance: Ignored.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id: UInt64? = state.withLock { state in
            guard deadline > state.now else { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (cancelled, watchers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if state.cancelledBeforeRegistration.remove(id) != nil { return (true, []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (false, Self.takeSatisfiedWatchers(&state))
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
                for watcher in watchers { watcher.resume() }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { state in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelledBeforeRegistration.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward and wakes every sleeper whose deadline has come, earliest first.
    ///
    /// - Parameter duration: How far to move; negative durations are ignored.
    public func advance(by duration: Duration) {
        guard duration > .zero else { return }
        let woken: [Sleeper] = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let due = state.sleepers.filter { $0.value.deadline <= state.now }.sorted {
                ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key)
            }
            for (id, _) in due { state.sleepers[id] = nil }
            return due.map(\.value)
        }
        for sleeper in woken { sleeper.continuation.resume() }
    }

    /// Moves the clock to `instant` (if it is later than now).
    ///
    /// - Parameter instant: The instant to move to.
    package func advance(to instant: Instant) {
        advance(by: now.duration(to: instant))
    }

    /// Suspends until at least `count` tasks are sleeping on this clock. No real time passes.
    ///
    /// - Parameter count: The number of sleepers to wait for.
    public func waitForSleepers(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func takeSatisfiedWatchers(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        var satisfied: [CheckedContinuation<Void, Never>] = []
        state.watchers.removeAll { watcher in
            guard watcher.count <= count else { return false }
            satisfied.append(watcher.continuation)
            return true
        }
        return satisfied
    }
}
