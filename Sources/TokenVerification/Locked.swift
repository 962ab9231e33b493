import Foundation

/// A value behind an `NSLock`.
///
/// `NSLock` rather than `Synchronization.Mutex`: ThreadSanitizer follows `pthread_mutex` (which `NSLock` wraps)
/// but not the futex under `Mutex` on Linux, and reported the key source's state, read and written only under
/// the lock, as racing. `@unchecked Sendable`: every access to `value` goes through ``withLock(_:)``, which
/// holds `lock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, holding the lock.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
