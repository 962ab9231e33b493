/// An injected clock with its instant type erased: sleeps and elapsed time since creation.
struct ClockHandle: Sendable {
    private let sleepBody: @Sendable (Duration) async throws -> Void
    private let elapsedBody: @Sendable () -> Duration

    init(_ clock: some Clock<Duration>) {
        let start = clock.now
        sleepBody = { duration in try await clock.sleep(for: duration) }
        elapsedBody = { start.duration(to: clock.now) }
    }

    /// Sleeps for `duration` on the injected clock. Throws `CancellationError` when cancelled.
    func sleep(for duration: Duration) async throws {
        try await sleepBody(duration)
    }

    /// The time since this handle was made, by the injected clock.
    var elapsed: Duration { elapsedBody() }

    /// Runs `body`, failing with ``TokenRefreshError/timeout`` if it takes longer than `timeout`. `body` is
    /// cancelled on timeout; it must honour cancellation for the timeout to take effect.
    ///
    /// A timer that wakes much later than asked (by more than the timeout and a minute) slept through a suspension
    /// of the process, which a continuous clock counts: `body` gets its time again from the resume, so an answer
    /// that arrived while the process was suspended is read, not dropped for a retry.
    func withTimeout<T: Sendable>(
        _ timeout: Duration?, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let timeout else { return try await body() }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                var slept = Duration.zero
                repeat {
                    let start = self.elapsed
                    try await self.sleep(for: timeout)
                    slept = self.elapsed - start
                } while slept > timeout + max(timeout, .seconds(60))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                if Task.isCancelled { throw CancellationError() }
                throw TokenRefreshError.timeout
            }
            return value
        }
    }
}
