#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file-system step of ``FileTokenStore`` that tests can make fail, to simulate a full disk, a read-only
/// directory or an I/O error without needing either (tests run as root, for whom permission bits do not bite).
package enum FileStep: String, Sendable, Hashable, CaseIterable {
    case createDirectory, createTemporary, write, syncFile, close, rename, syncDirectory, moveAside, unlink
    case openLockFile
}

/// Injected failures: `errno(for:)` returns the error number a step should fail with, or `nil` to run it.
package struct FileFaults: Sendable {
    package var errno: @Sendable (FileStep) -> Int32?

    /// No failures.
    package static let none = FileFaults(errno: { _ in nil })

    package init(errno: @escaping @Sendable (FileStep) -> Int32?) {
        self.errno = errno
    }
}

/// Thin wrappers around the system calls the file store needs. Every failure becomes a
/// ``PersistenceError`` whose detail names the call and the errno (never file contents).
enum POSIX {
    static let modeTypeMask: UInt32 = 0o170000
    static let modeDirectory: UInt32 = 0o040000
    static let modeRegular: UInt32 = 0o100000

    /// What `stat` says about a path.
    struct Status {
        var mode: UInt32
        var size: Int
        /// The owner's user ID.
        var owner: UInt32 = 0
        var isDirectory: Bool { mode & modeTypeMask == modeDirectory }
        var isRegularFile: Bool { mode & modeTypeMask == modeRegular }
        /// Permission bits for group and others.
        var groupOrOtherBits: UInt32 { mode & 0o077 }
    }

    static var currentErrno: Int32 { errno }

    /// `lstat(path)`, or the errno.
    static func status(_ path: String) -> Result<Status, Errno> {
        var info = stat()
        if lstat(path, &info) != 0 { return .failure(Errno(errno)) }
        return .success(Status(mode: UInt32(info.st_mode), size: Int(info.st_size), owner: UInt32(info.st_uid)))
    }

    /// `fstat(fd)`, or the errno.
    static func status(descriptor: Int32) -> Result<Status, Errno> {
        var info = stat()
        if fstat(descriptor, &info) != 0 { return .failure(Errno(errno)) }
        return .success(Status(mode: UInt32(info.st_mode), size: Int(info.st_size), owner: UInt32(info.st_uid)))
    }

    /// Opens a directory so it can be fsynced.
    static func openDirectory(_ path: String) -> Result<Int32, Errno> {
        let fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY) }
        return fd >= 0 ? .success(fd) : .failure(Errno(errno))
    }

    /// Reads the whole file behind `fd`, refusing more than `limit` bytes.
    static func readAll(_ fd: Int32, limit: Int) -> Result<[UInt8], Errno> {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                retryingOnInterrupt { read(fd, buffer.baseAddress, buffer.count) }
            }
            if count < 0 { return .failure(Errno(errno)) }
            if count == 0 { return .success(bytes) }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { return .failure(Errno(EFBIG)) }
        }
    }

    /// Writes all of `bytes` to `fd`, continuing after short writes.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                retryingOnInterrupt { write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
            }
            if written < 0 { return .failure(Errno(errno)) }
            if written == 0 { return .failure(Errno(EIO)) }
            offset += written
        }
        return .success(())
    }

    static func sync(_ fd: Int32) -> Result<Void, Errno> {
        retryingOnInterrupt { fsync(fd) } == 0 ? .success(()) : .failure(Errno(errno))
    }

    static func closeChecked(_ fd: Int32) -> Result<Void, Errno> {
        close(fd) == 0 ? .success(()) : .failure(Errno(errno))
    }

    static func makeDirectory(_ path: String) -> Result<Void, Errno> {
        guard mkdir(path, 0o700) == 0 else { return .failure(Errno(errno)) }
        _ = chmod(path, 0o700)
        return .success(())
    }

    /// The canonical absolute path of an existing directory, or `path` itself when it cannot be resolved.
    static func canonicalPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    // MARK: Relative to an open directory

    /// Opens the directory at `path` without following a symbolic link in its last component, so that every later
    /// call works on the directory that was checked, whatever happens to the path meanwhile.
    static func openDirectoryNoFollow(_ path: String) -> Result<Int32, Errno> {
        let fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW) }
        return fd >= 0 ? .success(fd) : .failure(Errno(errno))
    }

    /// Opens `name` in `directory` for reading without following a symbolic link.
    static func openForReading(in directory: Int32, _ name: String) -> Result<Int32, Errno> {
        let fd = retryingOnInterrupt { openat(directory, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        return fd >= 0 ? .success(fd) : .failure(Errno(errno))
    }

    /// Creates `name` in `directory` exclusively, owner read/write only.
    static func createExclusive(in directory: Int32, _ name: String) -> Result<Int32, Errno> {
        let fd = retryingOnInterrupt {
            openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode_t(0o600))
        }
        guard fd >= 0 else { return .failure(Errno(errno)) }
        _ = fchmod(fd, 0o600)  // umask may only narrow the mode; make it exact
        return .success(fd)
    }

    /// Opens (creating if needed) the lock file `name` in `directory`, owner read/write only.
    static func openLockFile(in directory: Int32, _ name: String) -> Result<Int32, Errno> {
        let fd = retryingOnInterrupt {
            openat(directory, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode_t(0o600))
        }
        return fd >= 0 ? .success(fd) : .failure(Errno(errno))
    }

    /// `fstatat(directory, name)` without following a symbolic link, or the errno.
    static func status(in directory: Int32, _ name: String) -> Result<Status, Errno> {
        var info = stat()
        if fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) != 0 { return .failure(Errno(errno)) }
        return .success(Status(mode: UInt32(info.st_mode), size: Int(info.st_size), owner: UInt32(info.st_uid)))
    }

    /// Renames `from` to `to`, both in `directory`.
    static func renameItem(in directory: Int32, _ from: String, to: String) -> Result<Void, Errno> {
        renameat(directory, from, directory, to) == 0 ? .success(()) : .failure(Errno(errno))
    }

    /// Links `to` to the file `from`, both in `directory`; fails with `EEXIST` when `to` exists.
    static func linkItem(in directory: Int32, _ from: String, to: String) -> Result<Void, Errno> {
        linkat(directory, from, directory, to, 0) == 0 ? .success(()) : .failure(Errno(errno))
    }

    /// Removes the file `name` in `directory`.
    static func unlinkItem(in directory: Int32, _ name: String) -> Result<Void, Errno> {
        unlinkat(directory, name, 0) == 0 ? .success(()) : .failure(Errno(errno))
    }

    /// The names in the open directory `directory` (without `.` and `..`).
    static func directoryEntries(descriptor directory: Int32) -> [String] {
        let copy = dup(directory)
        guard copy >= 0 else { return [] }
        guard let stream = fdopendir(copy) else {
            _ = close(copy)
            return []
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// `fchmod(descriptor, mode)`, or the errno.
    static func changeMode(descriptor: Int32, to mode: UInt32) -> Result<Void, Errno> {
        fchmod(descriptor, mode_t(mode)) == 0 ? .success(()) : .failure(Errno(errno))
    }

    /// Tries to take an exclusive `flock` without blocking: `true` when taken, `false` when another holder has it.
    static func tryExclusiveLock(_ fd: Int32) -> Result<Bool, Errno> {
        if retryingOnInterrupt({ flock(fd, LOCK_EX | LOCK_NB) }) == 0 { return .success(true) }
        let code = errno
        return code == EWOULDBLOCK || code == EAGAIN ? .success(false) : .failure(Errno(code))
    }

    /// Takes an exclusive `flock`, blocking the calling thread until it is granted.
    static func blockingExclusiveLock(_ fd: Int32) -> Result<Void, Errno> {
        retryingOnInterrupt { flock(fd, LOCK_EX) } == 0 ? .success(()) : .failure(Errno(errno))
    }

    static func unlock(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
    }

    static var processID: Int32 { getpid() }

    /// Whether no process with ID `pid` runs on this machine: signal 0 answers "no such process". One this process
    /// may not signal runs.
    static func processHasEnded(_ pid: Int32) -> Bool {
        pid > 0 && kill(pid, 0) != 0 && errno == ESRCH
    }

    /// The effective user ID of this process.
    static var effectiveUserID: UInt32 { UInt32(geteuid()) }

    private static func retryingOnInterrupt<R: BinaryInteger>(_ call: () -> R) -> R {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }
}

/// An error number with a readable name, for error details and logs.
struct Errno: Error, Hashable, CustomStringConvertible {
    let code: Int32

    init(_ code: Int32) { self.code = code }

    var description: String {
        switch code {
        case ENOENT: "ENOENT"
        case EACCES: "EACCES"
        case EPERM: "EPERM"
        case ENOSPC: "ENOSPC"
        case EDQUOT: "EDQUOT"
        case EROFS: "EROFS"
        case EIO: "EIO"
        case EINTR: "EINTR"
        case EISDIR: "EISDIR"
        case ENOTDIR: "ENOTDIR"
        case ELOOP: "ELOOP"
        case EEXIST: "EEXIST"
        case EFBIG: "EFBIG"
        case EBADF: "EBADF"
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        case ENAMETOOLONG: "ENAMETOOLONG"
        case ENOTEMPTY: "ENOTEMPTY"
        case EWOULDBLOCK: "EWOULDBLOCK"
        default: "errno \(code)"
        }
    }
}
