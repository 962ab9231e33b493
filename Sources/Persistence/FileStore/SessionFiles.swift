import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The synchronous file work for one account of a ``FileTokenStore``: reading, writing atomically, moving a
/// corrupt file aside. Methods that change anything expect the caller to hold the account's lock.
struct SessionFiles: Sendable {
    /// The largest session file read; anything bigger is not a session.
    static let sizeLimit = 1 << 20

    let directory: String
    let fileName: String
    let format: SessionFileFormat
    let faults: FileFaults
    let logger: Logger

    var filePath: String { directory + "/" + fileName }
    var lockPath: String { directory + "/" + fileName.dropLast(".json".count) + ".lock" }
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

    /// Checks the directory: `false` when it does not exist yet.
    func checkDirectory() throws(PersistenceError) -> Bool {
        switch POSIX.status(directory) {
        case .failure(let code) where code.code == ENOENT:
            return false
        case .failure(let code):
            throw PersistenceError.readFailed.with(detail: "stat(directory): \(code)")
        case .success(let status):
            guard status.isDirectory else {
                throw PersistenceError.notAFile.with(detail: "the store path is not a directory")
            }
            guard status.groupOrOtherBits == 0 else {
                try tightenDirectory(status)
                return true
            }
            return true
        }
    }

    /// A directory readable by others (`mkdir -p` gives 0755) is tightened to 0700 when this process owns it
    /// and it holds nothing but this store's files; otherwise the error names the path and both modes.
    private func tightenDirectory(_ status: POSIX.Status) throws(PersistenceError) {
        let found = String(status.mode & 0o777, radix: 8)
        let foreign = POSIX.directoryEntries(directory).filter { !$0.hasPrefix("session-") }
        if status.owner == POSIX.effectiveUserID, foreign.isEmpty,
            case .success = POSIX.changeMode(directory, to: 0o700)
        {
            logger.notice(
                "tightened the session directory to mode 700 (owner only)",
                metadata: ["directory": "\(directory)", "modeFound": "\(found)"])
            return
        }
        let why =
            status.owner != POSIX.effectiveUserID
            ? "another user owns it"
            : foreign.isEmpty ? "chmod failed" : "it holds \(foreign.count) file(s) that are not the store's"
        throw PersistenceError.permissionsTooWide.with(
            detail: "directory \(directory) has mode \(found), needs 700; not tightened because \(why)")
    }

    /// Creates the directory (mode 0700, and any missing parents) if it does not exist, then checks it.
    func ensureDirectory() throws(PersistenceError) {
        if try checkDirectory() { return }
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
        _ = try checkDirectory()
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
    func readCurrent() throws(PersistenceError) -> Current {
        let fd: Int32
        switch POSIX.openForReading(filePath) {
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
    func moveAside(reason: String) throws(PersistenceError) -> String {
        var number = 1
        while case .success = POSIX.status(directory + "/" + asidePrefix + String(number)) {
            number += 1
        }
        let asideName = asidePrefix + String(number)
        if let code = faults.errno(.moveAside) {
            throw PersistenceError.writeFailed.with(detail: "rename(aside): \(Errno(code))")
        }
        if case .failure(let code) = POSIX.renameItem(filePath, to: directory + "/" + asideName) {
            throw PersistenceError.writeFailed.with(detail: "rename(aside): \(code)")
        }
        try syncDirectory()
        logger.debug(
            "moved an unreadable session file aside",
            metadata: ["file": "\(fileName)", "aside": "\(asideName)", "reason": "\(reason)"])
        return asideName
    }

    /// Removes temporary files left by writers that died mid-write. Only ever called under the lock, when no
    /// live writer of this account can own one.
    func removeStaleTemporaries() {
        for name in POSIX.directoryEntries(directory) where name.hasPrefix(temporaryPrefix) {
            if case .success = POSIX.unlinkItem(directory + "/" + name) {
                logger.trace("removed a stale temporary file", metadata: ["file": "\(name)"])
            }
        }
    }

    /// Writes `bytes` as the session file: a temporary file, fsync, rename over the old file, fsync the directory.
    /// Until the rename the old file is untouched; after it the new one is complete.
    func writeAtomically(_ bytes: [UInt8]) throws(PersistenceError) {
        let temporaryPath =
            directory + "/" + temporaryPrefix + String(POSIX.processID) + "-"
            + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        if let code = faults.errno(.createTemporary) {
            throw PersistenceError.writeFailed.with(detail: "open(temporary): \(Errno(code))")
        }
        let fd: Int32
        switch POSIX.createExclusive(temporaryPath) {
        case .success(let descriptor): fd = descriptor
        case .failure(let code): throw PersistenceError.writeFailed.with(detail: "open(temporary): \(code)")
        }
        var closed = false
        do throws(PersistenceError) {
            try step(.write, "write") { POSIX.writeAll(fd, bytes) }
            try step(.syncFile, "fsync") { POSIX.sync(fd) }
            closed = true
            let closing = POSIX.closeChecked(fd)
            try step(.close, "close") { closing }
            try step(.rename, "rename") { POSIX.renameItem(temporaryPath, to: filePath) }
        } catch {
            if !closed { _ = POSIX.closeChecked(fd) }
            _ = POSIX.unlinkItem(temporaryPath)
            throw error
        }
        try syncDirectory()
    }

    /// Deletes the session file (an explicit removal by the caller) and syncs the directory.
    func removeFile() throws(PersistenceError) {
        if let code = faults.errno(.unlink) {
            throw PersistenceError.writeFailed.with(detail: "unlink: \(Errno(code))")
        }
        switch POSIX.unlinkItem(filePath) {
        case .success, .failure(Errno(ENOENT)): break
        case .failure(let code): throw PersistenceError.writeFailed.with(detail: "unlink: \(code)")
        }
        try syncDirectory()
    }

    private func syncDirectory() throws(PersistenceError) {
        if let code = faults.errno(.syncDirectory) {
            throw PersistenceError.writeFailed.with(detail: "fsync(directory): \(Errno(code))")
        }
        switch POSIX.openDirectory(directory) {
        case .failure(let code):
            throw PersistenceError.writeFailed.with(detail: "open(directory): \(code)")
        case .success(let fd):
            defer { _ = POSIX.closeChecked(fd) }
            if case .failure(let code) = POSIX.sync(fd) {
                throw PersistenceError.writeFailed.with(detail: "fsync(directory): \(code)")
            }
        }
    }

    private func step(_ step: FileStep, _ name: String, _ call: () -> Result<Void, Errno>) throws(PersistenceError) {
        if let code = faults.errno(step) { throw PersistenceError.writeFailed.with(detail: "\(name): \(Errno(code))") }
        if case .failure(let code) = call() { throw PersistenceError.writeFailed.with(detail: "\(name): \(code)") }
    }
}
