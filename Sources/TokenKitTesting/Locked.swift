import Foundation

/// A value behind an `NSLock`, for state that many threads of a test run share.
///
/// `NSLock` rather than `Synchronization.Mutex`: ThreadSanitizer follows `pthread_mutex` (which `NSLock` wraps)
/// but not the futex under `Mutex` on Linux, so under `--sanitize=thread` the process-wide log capture and the
/// secret registry, touched by every test at once, were reported as racing. `@unchecked Sendable`: every access
/// to `value` goes through ``withLock(_:)``, which holds `lock`.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Wraps `value`.
    package init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, holding the lock.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
