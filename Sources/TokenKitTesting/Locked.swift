import AuthToken

/// A value behind a lock, for state that many threads of a test run share.
///
/// It holds AuthToken's `LockedValue`, the package's one lock implementation (`OSAllocatedUnfairLock` on Apple
/// platforms, a `pthread_mutex_t` on Linux, which ThreadSanitizer follows, unlike the futex under
/// `Synchronization.Mutex`), under the name the test kit and the tests use. `@unchecked Sendable`: the value is
/// reached only through ``withLock(_:)``.
package final class Locked<Value>: @unchecked Sendable {
    private let storage: LockedValue<Value>

    /// Wraps `value`.
    package init(_ value: Value) { storage = LockedValue(value) }

    /// Runs `body` with the value, holding the lock.
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try storage.withLock(body)
    }
}
