import Foundation

/// A value behind an `NSLock`.
///
/// `NSLock` rather than `Synchronization.Mutex`: ThreadSanitizer follows `pthread_mutex` (which `NSLock` wraps)
/// but not the futex under `Mutex` on Linux, and reported state read and written only under the lock as racing
/// (TokenVerification's key source, TokenRefresh's session registry). `@unchecked Sendable`: every access to `value` goes through ``withLock(_:)``, which
/// holds `lock`.
package final class LockedValue<Value>: @unchecked Sendable {
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
