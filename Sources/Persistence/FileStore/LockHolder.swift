#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The holder's process ID, kept in the lock file while its `flock` is held, so that a waiter in another process can
/// tell a refresh in flight (a running holder) from a lock file that names nobody.
///
/// The kernel drops a `flock` when its process ends, so a held lock always has a live holder; the ID says that holder
/// is a store of this kind at work, worth waiting for up to the refresh's own bound. A lock file written by an
/// earlier version, or a process ID from another PID namespace that is not running here, reads as nobody: such a
/// holder is waited for the lock timeout only.
enum LockHolder {
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

    /// Whether the lock file open on `descriptor` names a running process (one this process may signal or not).
    static func isAlive(_ descriptor: Int32) -> Bool {
        guard let holder = processID(descriptor), holder > 0 else { return false }
        return kill(holder, 0) == 0 || errno == EPERM
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
        self.init(key: key, descriptor: descriptor)
    }
}
