import AuthToken
public import Crypto
public import Foundation
public import Logging

/// A token store that keeps one JSON file per account in a private directory: for Linux, servers and
/// command-line tools.
///
/// ## What it guarantees
/// - **Atomic, durable writes.** A save writes a temporary file, fsyncs it, renames it over the old file and
///   fsyncs the directory. A crash at any point leaves either the old session or the new one, whole. A write that
///   fails with an error that may pass (`EINTR`, `EAGAIN`, `EIO`) is tried again at once with a new temporary
///   file, up to three attempts in all; a full disk or a read-only directory fails at once.
/// - **Private files.** The directory is created with mode 0700 and files with 0600. A directory that others can
///   read but not write (`mkdir -p` makes 0755) is tightened to 0700, with a `notice` log line, when it holds
///   nothing but the store's files. Otherwise reads and writes fail with ``PersistenceError/permissionsTooWide``,
///   whose detail names the path, the mode found and the mode needed. Give the store a directory of its own (not
///   `/tmp`).
/// - **Nothing another user could have planted.** The directory and every file read must belong to the user the
///   process runs as, and the directory must not be writable by anyone else (nor sticky, like `/tmp`): otherwise
///   another user could have put a session there, and the store refuses it with
///   ``PersistenceError/ownedByAnotherUser`` or ``PersistenceError/permissionsTooWide`` instead of changing modes
///   and trusting it. Each operation opens the directory once, without following a symbolic link, checks it, and
///   works relative to that open directory (`openat`, `renameat`, `unlinkat`), so the path cannot be swapped for
///   another directory between the check and the use.
/// - **A lock shared by processes, which is a lease.** ``withExclusiveAccess(account:_:)`` holds an advisory
///   `flock` on a per-account lock file for the whole body, so processes sharing the directory refresh one at a
///   time. The kernel holds that lock for the holder's open file until the holder releases it or its process
///   ends: no connection or server stands between them that could drop it while the holder lives. So it is a
///   lease whose expiry is the holder process's death, and no other process runs its body while the holder is
///   alive. A waiter gives up after ``Configuration/lockTimeout`` (5 s by default) with
///   ``PersistenceError/lockTimedOut``, so one stalled refresh cannot block every process. The
///   same lock serialises tasks in this process (waiters queue in arrival order, without blocking threads).
///   Saves and removals take the lock too, and check their ``WriteCondition`` under it. Inside the body, the
///   store's own operations see the lock as held by the task and its child tasks, and do not take it again.
/// - **Nothing lost silently.** A damaged file is reported as `.unavailable(.corrupt)` and moved aside to
///   `<name>.corrupt-<n>`, not deleted by a read. A file written by a newer format version, or sealed with another
///   key, is left exactly where it is and reported (``PersistenceError/unsupportedFormatVersion``,
///   ``PersistenceError/wrongKey``); saves refuse to overwrite it, and only an explicit
///   `remove(account:condition: .always)` clears it.
/// - **Nothing left after a removal.** Removing an account's session (a sign-out) deletes the file and every copy
///   of it: the files set aside as damaged or unreadable, and temporary files left by a writer that died
///   mid-write, since each may hold a refresh token.
/// - **Optional encryption.** With an ``Configuration/encryptionKey`` the session is sealed with AES-GCM, bound
///   to the file's name. A wrong key is ``PersistenceError/wrongKey``, not a crash.
///
/// File names are a SHA-256 of the account, so any account string is safe and a listing does not reveal who
/// is signed in. File work uses blocking system calls on the calling task's thread (a save is a few
/// milliseconds, dominated by the two fsyncs); waiting for another process's lock happens on a thread of its own.
///
/// ```swift
/// let store = FileTokenStore(directory: URL(filePath: "/var/lib/myapp/sessions"))
/// try await store.save(session, account: "alice", condition: .absent)
/// ```
public struct FileTokenStore: TokenStore {
    /// Options for a ``FileTokenStore``.
    public struct Configuration: Sendable {
        /// A key to seal sessions with AES-GCM (128, 192 or 256 bits), or `nil` to store plain JSON.
        ///
        /// A store with a key refuses plain files, and a store without one refuses sealed files, both with
        /// ``PersistenceError/wrongKey``: to start encrypting existing sessions, load them with a store without
        /// the key and save them with one that has it.
        public var encryptionKey: SymmetricKey?
        /// The longest wait for the account's lock (held by another process's refresh, say) before an
        /// operation gives up with ``PersistenceError/lockTimedOut``; `nil` waits without limit.
        ///
        /// A `TokenRefreshClient` that times out re-reads the store and uses a token another process saved if
        /// it is still valid; it never refreshes without the lock.
        public var lockTimeout: Duration?
        /// Failures to inject into file-system steps, for tests.
        package var faults: FileFaults = .none
        /// The user ID that must own the directory and the files; the process's effective user ID when `nil`.
        /// For tests that cannot change a file's owner.
        package var expectedOwner: UInt32?
        /// The clock the lock waits are measured and paced on: the continuous clock, or a test's manual one.
        package var clock = StoreClock(ContinuousClock())

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - encryptionKey: A key to seal sessions with, or `nil` for plain JSON.
        ///   - lockTimeout: The longest wait for the account's lock; 5 s by default.
        public init(
            encryptionKey: SymmetricKey? = nil,
            lockTimeout: Duration? = .seconds(5)
        ) {
            self.encryptionKey = encryptionKey
            self.lockTimeout = lockTimeout
        }
    }

    /// The directory holding the session files.
    package let directory: URL
    /// The store's options.
    package let configuration: Configuration
    /// Where debug and trace messages go. Nothing from a session's tokens is ever logged.
    let logger: Logger

    /// Creates a store over `directory`. Nothing is touched until the first operation; the first write
    /// creates the directory (and missing parents) with mode 0700.
    ///
    /// - Parameters:
    ///   - directory: A directory of the store's own.
    ///   - configuration: Encryption and lock options.
    ///   - logger: Where debug and trace messages go (file names only, never token text).
    public init(
        directory: URL, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "TokenKit.Persistence.FileTokenStore")
    ) {
        self.directory = directory
        self.configuration = configuration
        self.logger = logger
        var path = directory.standardizedFileURL.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.directoryPath = path
    }

    /// `directory` as a path without a trailing slash.
    private let directoryPath: String

    /// The path of the session file for `account` (it may not exist).
    ///
    /// - Parameter account: The account key.
    /// - Returns: An absolute path inside `directory`.
    public func filePath(account: String) -> String {
        files(account: account).filePath
    }

    /// Reads the session stored for `account`.
    ///
    /// A damaged file is moved aside (under the lock) and reported as `.unavailable(.corrupt)`; later reads
    /// then find the account absent. The damaged bytes stay in `<name>.corrupt-<n>`.
    ///
    /// - Parameter account: The account key.
    /// - Returns: `.found`, `.absent` (no directory or no file), or `.unavailable` with the reason.
    public func load(account: String) async -> TokenStoreRead {
        let files = files(account: account)
        do throws(PersistenceError) {
            guard let directory = try files.openDirectory() else { return .absent }
            switch try files.readCurrent(directory) {
            case .absent: return .absent
            case .session(let session): return .found(session)
            case .unreadable(let error): return .unavailable(error)
            case .corrupt(let reason):
                // Move it aside under the lock, after reading again: another process may have replaced it.
                do throws(PersistenceError) {
                    return try await withLock(files) { (directory) throws(PersistenceError) -> TokenStoreRead in
                        switch try files.readCurrent(directory) {
                        case .absent: return .absent
                        case .session(let session): return .found(session)
                        case .unreadable(let error): return .unavailable(error)
                        case .corrupt(let reason):
                            let aside = try files.moveAside(directory, reason: reason)
                            return .unavailable(PersistenceError.corrupt.with(detail: "\(reason); kept as \(aside)"))
                        }
                    }
                } catch {
                    // Still damaged, and still where it was: report the damage, not the failure to move it.
                    return .unavailable(
                        PersistenceError.corrupt.with(
                            detail: "\(reason); left in place, moving it aside failed: \(error)"))
                }
            }
        } catch {
            logger.debug(
                "session file unavailable", metadata: ["file": "\(files.fileName)", "error": "\(error)"])
            return .unavailable(error)
        }
    }

    /// Stores `session` for `account` if `condition` holds, atomically and durably.
    ///
    /// A damaged file in the way is moved aside first and counts as absent.
    ///
    /// - Parameters:
    ///   - session: The session to store.
    ///   - account: The account key.
    ///   - condition: When the write may happen, judged under the lock.
    /// - Throws: ``PersistenceError/conflict`` when the condition fails;
    ///   ``PersistenceError/unsupportedFormatVersion`` or ``PersistenceError/wrongKey`` when the stored file
    ///   cannot be read by this store (it is left as it is); ``PersistenceError/notAFile``,
    ///   ``PersistenceError/permissionsTooWide``, ``PersistenceError/lockFailed``; or
    ///   ``PersistenceError/writeFailed`` (disk full, read-only directory, or an I/O error that lasted three
    ///   attempts), with the previous session intact.
    ///   A `writeFailed` whose detail names `fsync(directory)` came after the rename: the new session is in
    ///   place but may not survive a power loss.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        let files = files(account: account)
        let bytes = try SessionFileFormat(key: configuration.encryptionKey, binding: files.fileName).encode(session)
        try await withLock(files) { (directory) throws(PersistenceError) in
            files.removeStaleTemporaries(directory)
            let current = try currentGeneration(files, in: directory, removing: false, condition: condition)
            guard condition.allows(stored: current) else { throw PersistenceError.conflict }
            try files.writeAtomically(directory, bytes)
        }
        logger.debug(
            "session saved",
            metadata: [
                "file": "\(files.fileName)", "generation": "\(session.generation)",
                "token": "\(session.token.fingerprint)",
            ])
    }

    /// Removes the session for `account` if `condition` holds, with every copy of it: files set aside as damaged
    /// or unreadable and temporary files left by a writer that died.
    ///
    /// With ``WriteCondition/always``, a file this store cannot read (newer format, other key, damaged) is removed
    /// as well; with a generation condition it blocks the removal.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen, judged under the lock.
    /// - Throws: ``PersistenceError/conflict`` when the condition fails; another ``PersistenceError`` when the
    ///   file cannot be read or removed.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        let files = files(account: account)
        guard try files.openDirectory() != nil else {
            guard condition.allows(current: nil) else { throw PersistenceError.conflict }
            return
        }
        try await withLock(files) { (directory) throws(PersistenceError) in
            let current = try currentGeneration(files, in: directory, removing: true, condition: condition)
            guard condition.allows(stored: current) else { throw PersistenceError.conflict }
            if current != nil { try files.removeFile(directory) }
            // The session is over: no copy of it stays behind (a dead writer's temporary file, a damaged file set
            // aside by an earlier read).
            try files.removeCopies(directory)
        }
        logger.debug("session removed", metadata: ["file": "\(files.fileName)"])
    }

    /// Runs `body` while holding the account's lock: process-local first, then an advisory `flock` on
    /// `<name>.lock` in the store's directory, held until `body` returns or throws.
    ///
    /// The store's own operations called inside `body` (by this task or its child tasks) run under the lock
    /// already held. Waiting for another process's lock cannot be cancelled; waiting for this process's
    /// can, and throws ``PersistenceError/lockFailed``.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The read-refresh-write to run under the lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or ``PersistenceError/lockFailed`` (or a directory error) when the lock
    ///   cannot be taken.
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let files = files(account: account)
        let directory = try files.ensureDirectory()
        let key = lockKey(files)
        if ProcessLocalLocks.heldKeys.contains(key) { return try await body() }
        let lock = try await HeldFileLock.acquire(
            key: key, in: directory, lockName: files.lockName, expectedOwner: files.expectedOwner,
            faults: configuration.faults, timeout: configuration.lockTimeout, clock: configuration.clock)
        logger.trace("lock taken", metadata: ["file": "\(files.fileName)"])
        defer {
            lock.release()
            logger.trace("lock released", metadata: ["file": "\(files.fileName)"])
        }
        return try await ProcessLocalLocks.$heldKeys.withValue(ProcessLocalLocks.heldKeys.union([key])) {
            try await body()
        }
    }

    // MARK: Internals

    private func files(account: String) -> SessionFiles {
        let name = SessionFileFormat.fileName(account: account)
        return SessionFiles(
            directory: directoryPath, fileName: name,
            format: SessionFileFormat(key: configuration.encryptionKey, binding: name),
            faults: configuration.faults, logger: logger,
            expectedOwner: configuration.expectedOwner ?? POSIX.effectiveUserID)
    }

    private func lockKey(_ files: SessionFiles) -> String {
        POSIX.canonicalPath(files.directory) + "/" + files.fileName
    }

    /// Runs a synchronous file operation under the account's lock (taking it unless this task holds it), on the
    /// store's directory opened and checked once for the whole operation.
    private func withLock<T: Sendable>(
        _ files: SessionFiles, _ operation: (DirectoryHandle) throws(PersistenceError) -> T
    ) async throws(PersistenceError) -> T {
        let directory = try files.ensureDirectory()
        let key = lockKey(files)
        if ProcessLocalLocks.heldKeys.contains(key) { return try operation(directory) }
        let lock = try await HeldFileLock.acquire(
            key: key, in: directory, lockName: files.lockName, expectedOwner: files.expectedOwner,
            faults: configuration.faults, timeout: configuration.lockTimeout, clock: configuration.clock)
        defer { lock.release() }
        return try operation(directory)
    }

    /// The stored session (its generation and identity), under the lock. A damaged file is moved aside and counts as absent; a file this
    /// store cannot read blocks writes, except an unconditional removal, which moves it aside.
    private func currentGeneration(
        _ files: SessionFiles, in directory: DirectoryHandle, removing: Bool, condition: WriteCondition
    ) throws(PersistenceError) -> StoredSession? {
        switch try files.readCurrent(directory) {
        case .absent:
            return nil
        case .session(let session):
            return session
        case .corrupt(let reason):
            _ = try files.moveAside(directory, reason: reason)
            return nil
        case .unreadable(let error):
            guard removing && condition == .always else { throw error }
            _ = try files.moveAside(directory, reason: "\(error)")
            return nil
        }
    }
}
