import AuthToken
public import Crypto
public import Foundation
public import Logging

/// A token store that keeps one JSON file per account in a private directory: for Linux, servers and
/// command-line tools.
///
/// Writes are atomic and durable (a crash leaves the old session or the new one, whole); files are private to the
/// user and never trusted when another user could have planted them; ``withExclusiveAccess(account:_:)`` holds a
/// `flock` that lasts as long as the holder's process; a damaged or unreadable file is reported and kept aside, never
/// silently deleted; a removal leaves no copy behind; sealing with AES-GCM is optional. The guarantees in full, with
/// what each kind of bad input does: ``Persistence``.
///
/// File names are an HMAC-SHA256 of the account under a random key the store keeps in its directory
/// (`session-naming-key`, mode 0600), so a listing does not confirm a guessed account; a file an earlier version named
/// by a plain SHA-256 of the account is read and renamed at its first use.
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
        ///
        /// A holder seen alive is waited for up to ``liveHolderTimeout`` instead, when that is longer.
        public var lockTimeout: Duration?
        /// The longest wait for the account's lock while its holder is seen alive: another task of this process, or
        /// a running process that recorded its ID in the lock file and touched the file within the last few seconds
        /// (a refresh in flight; a suspended process stops touching it). 30 s by default, the
        /// `TokenRefreshClient`'s default refresh timeout: a token endpoint slower than ``lockTimeout`` is waited
        /// for, and the waiter then reads the pair the holder stored instead of failing. Keep it at least the
        /// refresh timeout of the clients sharing the store. It has no effect when ``lockTimeout`` is `nil`.
        public var liveHolderTimeout: Duration
        /// Runs when another process holds the account's lock file as an operation starts waiting for it: for tests.
        package var lockContended: (@Sendable () -> Void)?
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
        ///   - liveHolderTimeout: The longest wait for a holder seen alive; 30 s by default.
        public init(
            encryptionKey: SymmetricKey? = nil,
            lockTimeout: Duration? = .seconds(5),
            liveHolderTimeout: Duration = .seconds(30)
        ) {
            self.encryptionKey = encryptionKey
            self.lockTimeout = lockTimeout
            self.liveHolderTimeout = liveHolderTimeout
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
    /// The name depends on the store's naming key: this creates the directory and the key when they do not exist
    /// yet. When that fails, it returns the path an earlier version used.
    ///
    /// - Parameter account: The account key.
    /// - Returns: An absolute path inside `directory`.
    public func filePath(account: String) -> String {
        guard let handle = try? directoryFiles.ensureDirectory(),
            let files = try? files(account: account, in: handle, creatingKey: true)
        else { return files(named: SessionFileFormat.legacyFileName(account: account)).filePath }
        return files.filePath
    }

    /// Reads the session stored for `account`.
    ///
    /// A damaged file is moved aside (under the lock) and reported as `.unavailable(.corrupt)`; later reads
    /// then find the account absent. The damaged bytes stay in `<name>.corrupt-<n>`.
    ///
    /// - Parameter account: The account key.
    /// - Returns: `.found`, `.absent` (no directory or no file), or `.unavailable` with the reason.
    public func load(account: String) async -> TokenStoreRead {
        var files = directoryFiles
        do throws(PersistenceError) {
            guard let directory = try files.openDirectory() else { return .absent }
            // Without a naming key no file has a keyed name yet; one of an earlier version may need renaming.
            guard
                let named = try self.files(
                    account: account, in: directory, creatingKey: hasLegacyFile(account, directory))
            else { return .absent }
            files = named
            var current = try files.readCurrent(directory)
            if case .absent = current, hasLegacyFile(account, directory) {
                current = try await withLock(files) { (directory) throws(PersistenceError) in
                    try migrateLegacyFile(account, to: files, in: directory)
                    return try files.readCurrent(directory)
                }
            }
            switch current {
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
        let files = try keyedFiles(account, in: directoryFiles.ensureDirectory())
        let bytes = try SessionFileFormat(key: configuration.encryptionKey, binding: files.fileName).encode(session)
        try await withLock(files) { (directory) throws(PersistenceError) in
            try migrateLegacyFile(account, to: files, in: directory)
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
        guard let handle = try directoryFiles.openDirectory() else {
            guard condition.allows(current: nil) else { throw PersistenceError.conflict }
            return
        }
        let files = try keyedFiles(account, in: handle)
        try await withLock(files) { (directory) throws(PersistenceError) in
            try migrateLegacyFile(account, to: files, in: directory, discardingUnreadable: condition == .always)
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
        let directory = try directoryFiles.ensureDirectory()
        let files = try keyedFiles(account, in: directory)
        let key = lockKey(files)
        if ProcessLocalLocks.heldKeys.contains(key) { return try await body() }
        let lock = try await HeldFileLock.acquire(
            key: key, in: directory, lockName: files.lockName, expectedOwner: files.expectedOwner,
            faults: configuration.faults, timeout: configuration.lockTimeout,
            liveHolderTimeout: configuration.liveHolderTimeout, clock: configuration.clock,
            contended: configuration.lockContended)
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

    /// The account's files, named with the directory's naming key; `nil` when it has none and `creatingKey` is
    /// false.
    private func files(
        account: String, in directory: DirectoryHandle, creatingKey: Bool
    ) throws(PersistenceError) -> SessionFiles? {
        let owner = configuration.expectedOwner ?? POSIX.effectiveUserID
        guard let key = try NamingKey.load(in: directory, expectedOwner: owner, creating: creatingKey) else {
            return nil
        }
        return files(named: SessionFileFormat.fileName(account: account, key: key))
    }

    /// The account's files, creating the naming key when the directory has none.
    private func keyedFiles(_ account: String, in directory: DirectoryHandle) throws(PersistenceError) -> SessionFiles {
        guard let files = try files(account: account, in: directory, creatingKey: true) else {
            throw PersistenceError.writeFailed.with(detail: "the naming key could not be created")
        }
        return files
    }

    /// The store's directory, for opening it before any account's name is known.
    private var directoryFiles: SessionFiles { files(named: "") }

    /// Whether a session file an earlier version named (a plain SHA-256 of the account) is there.
    private func hasLegacyFile(_ account: String, _ directory: DirectoryHandle) -> Bool {
        if case .success = POSIX.status(in: directory.descriptor, SessionFileFormat.legacyFileName(account: account)) {
            return true
        }
        return false
    }

    /// Renames the account's file from its earlier name to its keyed one, under the lock: the session is read with
    /// the earlier name (bound into a sealed file) and written under the new one, then the earlier file and its lock
    /// file are removed. A keyed file already there wins. A damaged earlier file is moved aside; one this store
    /// cannot read (newer format, other key) stays where it is and its error is thrown, unless
    /// `discardingUnreadable` (an unconditional removal).
    private func migrateLegacyFile(
        _ account: String, to files: SessionFiles, in directory: DirectoryHandle, discardingUnreadable: Bool = false
    ) throws(PersistenceError) {
        guard hasLegacyFile(account, directory) else { return }
        let legacy = self.files(named: SessionFileFormat.legacyFileName(account: account))
        if case .absent = try files.readCurrent(directory) {
            switch try legacy.readCurrent(directory) {
            case .absent: return
            case .session(let session): try files.writeAtomically(directory, files.format.encode(session))
            case .corrupt(let reason):
                _ = try legacy.moveAside(directory, reason: reason)
                return
            case .unreadable(let error): if !discardingUnreadable { throw error }
            }
        }
        try legacy.removeFile(directory)
        _ = POSIX.unlinkItem(in: directory.descriptor, legacy.lockName)
        logger.debug(
            "renamed a session file to its keyed name", metadata: ["file": "\(files.fileName)"])
    }

    private func files(named name: String) -> SessionFiles {
        SessionFiles(
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
            faults: configuration.faults, timeout: configuration.lockTimeout,
            liveHolderTimeout: configuration.liveHolderTimeout, clock: configuration.clock,
            contended: configuration.lockContended)
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
