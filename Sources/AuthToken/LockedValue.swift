// `public` imports, not `package`: the inlinable lock calls below name the lock's types and functions, so the
// package's other modules inline them instead of calling through a function of this module, and the class is
// `@usableFromInline` for the same reason (below). No public declaration comes with them.
#if canImport(os)
    public import os
#elseif canImport(Glibc)
    public import Glibc
#elseif canImport(Musl)
    public import Musl
#elseif canImport(Bionic)
    public import Bionic
#else
    public import Foundation
#endif

/// A value behind a lock: TokenKit's one lock type, for every module.
///
/// - Apple platforms: `OSAllocatedUnfairLock` (macOS 13, iOS 16, tvOS 16, watchOS 9), so the package needs no
///   more than `Clock` does. `Synchronization.Mutex` would need macOS 15 and iOS 18.
/// - Linux (Glibc, Musl) and Android: a `pthread_mutex_t`. ThreadSanitizer follows `pthread_mutex` but not the
///   futex under `Synchronization.Mutex` on Linux, and reported state read and written only under a `Mutex` as
///   racing (TokenVerification's key source, TokenRefresh's session registry).
/// - Elsewhere (Windows): `NSLock`.
///
/// The Apple branch is the system call only; `.ci/apple-typecheck` type-checks it against a stub of Apple's `os` API.
///
/// `@unchecked Sendable`: every access to `value` goes through ``withLock(_:)``, which holds the lock. The lock is
/// not recursive: `body` must not call ``withLock(_:)`` on the same value.
///
/// `@usableFromInline`: the compiler does not specialize the inlinable methods of a generic `package` type in
/// another module, so without it every ``withLock(_:)`` of the other modules was a call of the generic function
/// through value witnesses. With it, the lock and the body inline at each call site; it adds nothing to the public
/// API. `value` is `@exclusivity(unchecked)`: the lock already makes each access exclusive, so the runtime's
/// dynamic check (a `swift_beginAccess` call per access) is skipped.
@usableFromInline
package final class LockedValue<Value>: @unchecked Sendable {
    #if canImport(os)
        @usableFromInline let lock = OSAllocatedUnfairLock()
    #elseif canImport(Glibc) || canImport(Musl) || canImport(Bionic)
        @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #else
        @usableFromInline let lock = NSLock()
    #endif
    @usableFromInline @exclusivity(unchecked) var value: Value

    /// Wraps `value`.
    package init(_ value: Value) {
        self.value = value
        #if !canImport(os) && (canImport(Glibc) || canImport(Musl) || canImport(Bionic))
            mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            let status = pthread_mutex_init(mutex, nil)
            precondition(status == 0, "pthread_mutex_init failed: \(status)")
        #endif
    }

    #if !canImport(os) && (canImport(Glibc) || canImport(Musl) || canImport(Bionic))
        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }
    #endif

    /// Runs `body` with the value, holding the lock.
    ///
    /// - Parameter body: Reads or changes the value; it must not block or call back into this lock.
    /// - Returns: What `body` returns.
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        acquire()
        defer { release() }
        return try body(&value)
    }

    /// Takes the lock.
    @inlinable
    func acquire() {
        #if canImport(os)
            lock.lock()
        #elseif canImport(Glibc) || canImport(Musl) || canImport(Bionic)
            pthread_mutex_lock(mutex)
        #else
            lock.lock()
        #endif
    }

    /// Releases the lock.
    @inlinable
    func release() {
        #if canImport(os)
            lock.unlock()
        #elseif canImport(Glibc) || canImport(Musl) || canImport(Bionic)
            pthread_mutex_unlock(mutex)
        #else
            lock.unlock()
        #endif
    }
}
