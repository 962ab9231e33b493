import Logging

#if canImport(Darwin)
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The store's directory, opened once and checked (owner, mode): every file operation of one store call works
/// relative to it (`openat`, `renameat`, `unlinkat`), so the path cannot be swapped for another directory between
/// the check and the use.
final class DirectoryHandle: Sendable {
    /// The open directory.
    let descriptor: Int32

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    deinit { _ = POSIX.closeChecked(descriptor) }
}

/// The synchronous file work for one account of a ``FileTokenStore``: reading, writing atomically, moving a
/// corrupt file aside. Methods that change anything expect the caller to hold the account's lock.
///
/// Trust: the directory and every file read must belong to ``expectedOwner`` (the process's effective user by
/// default), and the directory must not be writable by anyone else; otherwise another user could have planted or
/// swapped what is read, and the store refuses it (``PersistenceError/ownedByAnotherUser``,
/// ``PersistenceError/permissionsTooWide``).
struct SessionFiles: Sendable {
    /// The largest session file read; anything bigger is not a session.
    static let sizeLimit = 1 << 20

    let directory: String
    let fileName: String
    let format: SessionFileFormat
    let faults: FileFaults
    let logger: Logger
    /// The user ID that must own the directory and the files.
    let expectedOwner: UInt32

    var filePath: String { directory + "/" + fileName }
    var lockName: String { String(fileName.dropLast(".json".count)) + ".lock" }
    var temporaryPrefix: String { fileName + ".tmp-" }
    var asidePrefix: String { fileName + ".corrupt-" }

    /// What reading the session file found.
    enum Current {
        case absent
        case session(StoredSession)
        /// The bytes are damaged; they can be moved aside.
        case corrupt(String)
        /// Readable by a newer version or another key only: left exactly where it is.
        case unreadable(PersistenceError)
    }

    // MARK: Directory

    /// Opens and checks the directory: `nil` when it does not exist yet.
    func openDirectory() throws(PersistenceError) -> DirectoryHandle? {
        let handle: DirectoryHandle
        switch POSIX.openDirectoryNoFollow(directory) {
        case .success(let fd): handle = DirectoryHandle(fd)
        case .failure(let code) where code.code == ENOENT: return nil
        case .failure(let code) where code.code == ENOTDIR || code.code == ELOOP:
            throw PersistenceError.notAFile.with(detail: "the store path is not a directory")
        case .failure(let code): throw PersistenceError.readFailed.with(detail: "open(directory): \(code)")
        }
        let status: POSIX.Status
        switch POSIX.status(descriptor: handle.descriptor) {
        case .success(let found): status = found
        case .failure(let code): throw PersistenceError.readFailed.with(detail: "fstat(directory): \(code)")
        }
        guard status.isDirectory else {
            throw PersistenceError.notAFile.with(detail: "the store path is not a directory")
        }
        guard status.owner == expectedOwner else {
            throw PersistenceError.ownedByAnotherUser.with(
                detail: "directory \(directory) belongs to user \(status.owner), not \(expectedOwner); not used")
        }
        let found = String(status.mode & 0o7777, radix: 8)
        // Writable by others (or sticky, like /tmp): another user could have planted or replaced files in it, so
        // changing its mode now would not make what is in it trustworthy.
        guard status.mode & 0o1022 == 0 else {
            throw PersistenceError.permissionsTooWide.with(
                detail: "directory \(directory) has mode \(found), needs 700; not used because other users can "
                    + "write to it")
        }
        if status.groupOrOtherBits != 0 { try tightenDirectory(handle, mode: found) }
        return handle
    }

    /// A directory others can read but not write (`mkdir -p` gives 0755) is tightened to 0700 when it holds nothing
    /// but this store's files; otherwise the error names the path and both modes.
    private func tightenDirectory(_ handle: DirectoryHandle, mode found: String) throws(PersistenceError) {
        let foreign = POSIX.directoryEntries(descriptor: handle.descriptor).filter { !$0.hasPrefix("session-") }
        if foreign.isEmpty, case .success = POSIX.changeMode(descriptor: handle.descriptor, to: 0o700) {
            logger.notice(
                "tightened the session directory to mode 700 (owner only)",
                metadata: ["directory": "\(directory)", "modeFound": "\(found)"])
            return
        }
        let why = foreign.isEmpty ? "chmod failed" : "it holds \(foreign.count) file(s) that are not the store's"
        throw PersistenceError.permissionsTooWide.with(
            detail: "directory \(directory) has mode \(found), needs 700; not tightened because \(why)")
    }

    /// Creates the directory (mode 0700, and any missing parents) if it does not exist, then opens and checks it.
    func ensureDirectory() throws(PersistenceError) -> DirectoryHandle {
        if let handle = try openDirectory() {
            excludeFromBackup()
            return handle
        }
        var missing: [String] = []
        var path = directory
        while !path.isEmpty, path != "/", case .failure(let code) = POSIX.status(path), code.code == ENOENT {
            missing.append(path)
            path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        }
        for path in missing.reversed() {
            if let code = faults.errno(.createDirectory) {
                throw PersistenceError.writeFailed.with(detail: "mkdir: \(Errno(code))")
            }
            switch POSIX.makeDirectory(path) {
            case .success, .failure(Errno(EEXIST)): break
            case .failure(let code): throw PersistenceError.writeFailed.with(detail: "mkdir: \(code)")
            }
            syncParent(of: path)
        }
        logger.debug("created the session directory", metadata: ["directory": "\(directory)"])
        guard let handle = try openDirectory() else {
            throw PersistenceError.writeFailed.with(detail: "the directory vanished after mkdir")
        }
        excludeFromBackup()
        return handle
    }

    /// Keeps the directory out of backups (iCloud and computer backups) on Apple platforms; nothing elsewhere.
    /// Not compiled on Linux: the same four lines type-check there against swift-corelibs-foundation.
    private func excludeFromBackup() {
        #if canImport(Darwin)
            var url = URL(fileURLWithPath: directory, isDirectory: true)
            var values = URLResourceValues()
            values.isExcludedFromBackup = true
            try? url.setResourceValues(values)
        #endif
    }

    private func syncParent(of path: String) {
        let parent = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if case .success(let fd) = POSIX.openDirectory(parent.isEmpty ? "/" : parent) {
            _ = POSIX.sync(fd)
            _ = POSIX.closeChecked(fd)
        }
    }

    // MARK: Reading

    /// Reads and decodes the session file. Never changes anything on disk.
    func readCurrent(_ handle: DirectoryHandle) throws(PersistenceError) -> Current {
        let fd: Int32
        switch POSIX.openForReading(in: handle.descriptor, fileName) {
        case .success(let descriptor): fd = descriptor
        case .failure(let code) where code.code == ENOENT: return .absent
        case .failure(let code) where code.code == ELOOP:
            throw PersistenceError.notAFile.with(detail: "the session file is a symbolic link")
        case .failure(let code): throw PersistenceError.readFailed.with(detail: "open: \(code)")
        }
        defer { _ = POSIX.closeChecked(fd) }
        switch POSIX.status(descriptor: fd) {
        case .failure(let code):
            throw PersistenceError.readFailed.with(detail: "fstat: \(code)")
        case .success(let status):
            guard status.isRegularFile else {
                throw PersistenceError.notAFile.with(detail: "something other than a file stands at the session path")
            }
            guard status.owner == expectedOwner else {
                throw PersistenceError.ownedByAnotherUser.with(
                    detail: "session file \(fileName) belongs to user \(status.owner), not \(expectedOwner); not used")
            }
            guard status.groupOrOtherBits == 0 else {
                throw PersistenceError.permissionsTooWide.with(
                    detail: "file mode \(String(status.mode & 0o777, radix: 8)), expected 600")
            }
        }
        let bytes: [UInt8]
        switch POSIX.readAll(fd, limit: Self.sizeLimit) {
        case .success(let read): bytes = read
        case .failure(let code) where code.code == EFBIG: return .corrupt("larger than any session")
        case .failure(let code): throw PersistenceError.readFailed.with(detail: "read: \(code)")
        }
        switch format.decode(bytes) {
        case .session(let session): return .session(session)
        case .corrupt(let reason): return .corrupt(reason)
        case .unsupportedVersion(let version):
            return .unreadable(PersistenceError.unsupportedFormatVersion.with(detail: "format version \(version)"))
        case .wrongKey(let reason): return .unreadable(PersistenceError.wrongKey.with(detail: reason))
        }
    }

    // MARK: Changing (under the lock)

    /// Moves a corrupt session file to `<name>.corrupt-<n>` and returns that name. Never deletes it.
    func moveAside(_ handle: DirectoryHandle, reason: String) throws(PersistenceError) -> String {
        var number = 1
        while case .success = POSIX.status(in: handle.descriptor, asidePrefix + String(number)) {
            number += 1
        }
        let asideName = asidePrefix + String(number)
        if let code = faults.errno(.moveAside) {
            throw PersistenceError.writeFailed.with(detail: "rename(aside): \(Errno(code))")
        }
        if case .failure(let code) = POSIX.renameItem(in: handle.descriptor, fileName, to: asideName) {
            throw PersistenceError.writeFailed.with(detail: "rename(aside): \(code)")
        }
        try syncDirectory(handle)
        logger.debug(
            "moved an unreadable session file aside",
            metadata: ["file": "\(fileName)", "aside": "\(asideName)", "reason": "\(reason)"])
        return asideName
    }

    /// Removes temporary files left by writers that died mid-write: this account's (only ever called under the
    /// lock, when no live writer of this account can own one) and the naming key's whose creator no longer runs.
    func removeStaleTemporaries(_ handle: DirectoryHandle) {
        for name in POSIX.directoryEntries(descriptor: handle.descriptor)
        where name.hasPrefix(temporaryPrefix) || NamingKey.isAbandonedTemporary(name) {
            if case .success = POSIX.unlinkItem(in: handle.descriptor, name) {
                logger.trace("removed a stale temporary file", metadata: ["file": "\(name)"])
            }
        }
    }

    /// Deletes every copy of the account's session besides the file itself: temporary files left by writers that
    /// died, and files set aside as damaged or unreadable. Under the lock, when the session is being removed.
    func removeCopies(_ handle: DirectoryHandle) throws(PersistenceError) {
        var removed = 0
        for name in POSIX.directoryEntries(descriptor: handle.descriptor)
        where name.hasPrefix(temporaryPrefix) || name.hasPrefix(asidePrefix) {
            switch POSIX.unlinkItem(in: handle.descriptor, name) {
            case .success, .failure(Errno(ENOENT)): removed += 1
            case .failure(let code): throw PersistenceError.writeFailed.with(detail: "unlink(copy): \(code)")
            }
        }
        if removed > 0 {
            logger.debug("removed copies of the session", metadata: ["file": "\(fileName)", "count": "\(removed)"])
        }
    }

    /// How many times a write is tried when it fails with an error that may pass (``isTransient(_:)``).
    static let writeAttempts = 3

    /// Writes `bytes` as the session file: a temporary file, fsync, rename over the old file, fsync the directory.
    /// Until the rename the old file is untouched; after it the new one is complete.
    ///
    /// A failure that may pass (EINTR, EAGAIN, EIO: a flaky disk or network file system) is tried again at once, up
    /// to ``writeAttempts`` in all. Each attempt writes a new temporary file from the start: after a failed `fsync`
    /// the kernel may have dropped the dirty pages, so syncing the same file again would prove nothing.
    func writeAtomically(_ handle: DirectoryHandle, _ bytes: [UInt8]) throws(PersistenceError) {
        var attempt = 1
        while true {
            var failedWith: Int32?
            do throws(PersistenceError) {
                try writeOnce(handle, bytes, failedWith: &failedWith)
                return
            } catch {
                guard let code = failedWith, Self.isTransient(code), attempt < Self.writeAttempts else {
                    if attempt == 1 { throw error }
                    throw error.with(detail: (error.detail ?? "\(error)") + " (\(attempt) attempts)")
                }
                logger.debug(
                    "retrying a session write after a transient error",
                    metadata: ["file": "\(fileName)", "error": "\(error)", "attempt": "\(attempt)"])
                attempt += 1
            }
        }
    }

    /// Whether a write that failed with `code` may succeed when tried again.
    static func isTransient(_ code: Int32) -> Bool {
        code == EINTR || code == EAGAIN || code == EWOULDBLOCK || code == EIO
    }

    /// One attempt of ``writeAtomically(_:_:)``; `failedWith` gets the error number of the step that failed.
    private func writeOnce(
        _ handle: DirectoryHandle, _ bytes: [UInt8], failedWith: inout Int32?
    ) throws(PersistenceError) {
        let temporaryName =
            temporaryPrefix + String(POSIX.processID) + "-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        if let code = faults.errno(.createTemporary) {
            failedWith = code
            throw PersistenceError.writeFailed.with(detail: "open(temporary): \(Errno(code))")
        }
        let fd: Int32
        switch POSIX.createExclusive(in: handle.descriptor, temporaryName) {
        case .success(let descriptor): fd = descriptor
        case .failure(let code):
            failedWith = code.code
            throw PersistenceError.writeFailed.with(detail: "open(temporary): \(code)")
        }
        var closed = false
        do throws(PersistenceError) {
            try step(.write, "write", failedWith: &failedWith) { POSIX.writeAll(fd, bytes) }
            try step(.syncFile, "fsync", failedWith: &failedWith) { POSIX.sync(fd) }
            closed = true
            let closing = POSIX.closeChecked(fd)
            try step(.close, "close", failedWith: &failedWith) { closing }
            try step(.rename, "rename", failedWith: &failedWith) {
                POSIX.renameItem(in: handle.descriptor, temporaryName, to: fileName)
            }
        } catch {
            if !closed { _ = POSIX.closeChecked(fd) }
            _ = POSIX.unlinkItem(in: handle.descriptor, temporaryName)
            throw error
        }
        try step(.syncDirectory, "fsync(directory)", failedWith: &failedWith) { POSIX.sync(handle.descriptor) }
    }

    /// Deletes the session file (an explicit removal by the caller) and syncs the directory.
    func removeFile(_ handle: DirectoryHandle) throws(PersistenceError) {
        if let code = faults.errno(.unlink) {
            throw PersistenceError.writeFailed.with(detail: "unlink: \(Errno(code))")
        }
        switch POSIX.unlinkItem(in: handle.descriptor, fileName) {
        case .success, .failure(Errno(ENOENT)): break
        case .failure(let code): throw PersistenceError.writeFailed.with(detail: "unlink: \(code)")
        }
        try syncDirectory(handle)
    }

    private func syncDirectory(_ handle: DirectoryHandle) throws(PersistenceError) {
        if let code = faults.errno(.syncDirectory) {
            throw PersistenceError.writeFailed.with(detail: "fsync(directory): \(Errno(code))")
        }
        if case .failure(let code) = POSIX.sync(handle.descriptor) {
            throw PersistenceError.writeFailed.with(detail: "fsync(directory): \(code)")
        }
    }

    private func step(
        _ step: FileStep, _ name: String, failedWith: inout Int32?, _ call: () -> Result<Void, Errno>
    ) throws(PersistenceError) {
        if let code = faults.errno(step) {
            failedWith = code
            throw PersistenceError.writeFailed.with(detail: "\(name): \(Errno(code))")
        }
        if case .failure(let code) = call() {
            failedWith = code.code
            throw PersistenceError.writeFailed.with(detail: "\(name): \(code)")
        }
    }
}
