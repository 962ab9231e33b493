/// A store's injected clock with its instant type erased: sleeping, and the time since the store was made. For the
/// lock waits and timeouts of stores in other modules (the Keychain store, the PostgreSQL store).
package struct StoreClock: Sendable {
    /// Sleeps for a duration on the clock.
    package let sleep: @Sendable (Duration) async throws -> Void
    /// The time since this value was made.
    package let elapsed: @Sendable () -> Duration

    /// Erases `clock`'s instant type.
    ///
    /// - Parameter clock: The clock.
    package init(_ clock: some Clock<Duration>) {
        let start = clock.now
        sleep = { duration in try await clock.sleep(for: duration) }
        elapsed = { start.duration(to: clock.now) }
    }
}
