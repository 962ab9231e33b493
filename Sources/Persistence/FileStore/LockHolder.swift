import AuthToken

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The holder's process ID, kept in the lock file while its `flock` is held, and a heartbeat (the file's modification
/// time, touched every second while held), so that a waiter in another process can tell a refresh in flight (a
/// running holder) from a lock file that names nobody or a holder that has stopped (a suspended process).
///
/// The kernel drops a `flock` when its process ends, so a held lock always has a live holder; the ID and a fresh
/// heartbeat say that holder is a store of this kind at work, worth waiting for up to the refresh's own bound. A lock
/// file written by an earlier version, a process ID from another PID namespace that is not running here, or a
/// heartbeat older than ``staleAfter`` reads as nobody: such a holder is waited for the lock timeout only.
enum LockHolder {
    /// How often a holder touches its lock file.
    static let beat = Duration.seconds(1)
    /// How old a heartbeat may be, in seconds of wall time, for its holder to count as at work.
    static let staleAfter = 4

    /// The task that touches a held lock file every ``beat``, until ``stop()``.
    final class Heartbeat: Sendable {
        /// Whether the descriptor is still open for the task to touch; guarded so that no touch follows `stop()`.
        private let open = LockedValue(true)
        private let task: Task<Void, Never>

        init(_ descriptor: Int32) {
            let open = self.open
            task = Task.detached(priority: .utility) {
                while !Task.isCancelled {
                    try? await Task.sleep(for: LockHolder.beat)
                    open.withLock { isOpen in if isOpen { _ = futimens(descriptor, nil) } }
                }
            }
        }

        /// Stops the heartbeat before the descriptor is closed.
        func stop() {
            open.withLock { $0 = false }
            task.cancel()
        }
    }

    /// Writes this process's ID into the held lock file `descriptor`, replacing what was there.
    static func record(_ descriptor: Int32) {
        let text = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    /// Empties the held lock file `descriptor`, before its `flock` is released.
    static func clear(_ descriptor: Int32) {
        _ = ftruncate(descriptor, 0)
    }

    /// Whether the lock file open on `descriptor` names a running process (one this process may signal or not) whose
    /// heartbeat is fresh.
    static func isAlive(_ descriptor: Int32) -> Bool {
        guard let holder = processID(descriptor), holder > 0, !POSIX.processHasEnded(holder) else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        #if canImport(Darwin)
            let touched = Int(info.st_mtimespec.tv_sec)
        #else
            let touched = Int(info.st_mtim.tv_sec)
        #endif
        return Int(time(nil)) - touched <= staleAfter
    }

    /// The process ID the lock file open on `descriptor` names, if any.
    static func processID(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        guard let line = text.split(separator: "\n", omittingEmptySubsequences: false).first else { return nil }
        return Int32(line)
    }
}

extension HeldFileLock {
    /// A lock just taken: its file is stamped with this process's ID.
    init(taken key: String, descriptor: Int32) {
        LockHolder.record(descriptor)
        self.init(key: key, descriptor: descriptor, heartbeat: LockHolder.Heartbeat(descriptor))
    }
}
