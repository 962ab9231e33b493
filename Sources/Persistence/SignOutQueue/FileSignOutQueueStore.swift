import AuthToken
import Crypto
public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``SignOutQueueStore`` that keeps one file per account in a directory, readable by the user only (mode 0600),
/// replaced atomically on each write. Processes may share the directory: a change of the queue
/// (``updateSignOutQueue(account:_:)``) holds an advisory lock on a lock file beside the account's file.
///
/// ```swift
/// let queue = FileSignOutQueueStore(directory: URL(fileURLWithPath: "/var/lib/my-app/sign-outs"))
/// ```
public struct FileSignOutQueueStore: SignOutQueueStore {
    /// The directory the files are in (created on the first write).
    public let directory: URL

    /// Creates a store in `directory`.
    ///
    /// - Parameter directory: The directory; created with mode 0700 when missing.
    public init(directory: URL) {
        self.directory = directory
    }

    /// Reads the file of `account`.
    ///
    /// - Parameter account: The account key.
    /// - Returns: Its bytes, or `nil` when there is no file.
    /// - Throws: ``PersistenceError/readFailed`` when the file is there but cannot be read.
    public func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? {
        try read(file(for: account))
    }

    /// Replaces the file of `account` (written beside it, then renamed over it), or removes it for `nil`.
    ///
    /// - Parameters:
    ///   - data: The new bytes, or `nil`.
    ///   - account: The account key.
    /// - Throws: ``PersistenceError/writeFailed`` when the file cannot be written or removed.
    public func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        try write(data, to: file(for: account))
    }

    /// Replaces the file of `account` with what `update` makes of it, holding the account's lock file
    /// (`signouts-<name>.json.lock`, an advisory `flock`, beside it) from the read to the write: two processes (or two
    /// clients of one process) changing the queue at once each see the other's change.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - update: Makes the new bytes from the ones kept now (`nil`: no file).
    /// - Returns: The bytes kept afterwards.
    /// - Throws: ``PersistenceError/lockTimedOut`` when another holder kept the lock for more than 5 seconds;
    ///   ``PersistenceError/readFailed``, ``PersistenceError/writeFailed`` or ``PersistenceError/lockFailed`` when the
    ///   file or its lock cannot be used. Nothing is changed then.
    public func updateSignOutQueue(
        account: String, _ update: @escaping @Sendable (Data?) -> Data?
    ) async throws(PersistenceError) -> Data? {
        try createDirectory()
        let handle: DirectoryHandle
        switch POSIX.openDirectory(directory.path) {
        case .success(let descriptor): handle = DirectoryHandle(descriptor)
        case .failure(let code):
            throw PersistenceError.lockFailed.with(detail: "the pending sign-outs directory cannot be opened: \(code)")
        }
        let url = file(for: account)
        let lockName = url.lastPathComponent + ".lock"
        let lock = try await HeldFileLock.acquire(
            key: "sign-outs:" + directory.appendingPathComponent(lockName).path, in: handle, lockName: lockName,
            expectedOwner: geteuid(), faults: .none, timeout: .seconds(5), clock: StoreClock(ContinuousClock()))
        defer { lock.release() }
        let new = update(try read(url))
        try write(new, to: url)
        return new
    }

    /// The bytes of the file at `url`, or `nil` when there is none.
    private func read(_ url: URL) throws(PersistenceError) -> Data? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            return try Data(contentsOf: url)
        } catch {
            throw PersistenceError.readFailed.with(detail: "the pending sign-outs file cannot be read")
        }
    }

    /// Creates the directory (mode 0700) when it is missing.
    private func createDirectory() throws(PersistenceError) {
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw PersistenceError.writeFailed.with(detail: "the pending sign-outs directory cannot be created")
        }
    }

    /// Replaces the file at `url` with `data` (written beside it, then renamed over it), or removes it for `nil`.
    private func write(_ data: Data?, to url: URL) throws(PersistenceError) {
        guard let data else {
            guard unlink(url.path) == 0 || errno == ENOENT else {
                throw PersistenceError.writeFailed.with(detail: "the pending sign-outs file cannot be removed")
            }
            return
        }
        let manager = FileManager.default
        try createDirectory()
        let temporary = url.path + ".\(UUID().uuidString).tmp"
        guard manager.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw PersistenceError.writeFailed.with(detail: "the pending sign-outs file cannot be written")
        }
        guard rename(temporary, url.path) == 0 else {
            _ = unlink(temporary)
            throw PersistenceError.writeFailed.with(detail: "the pending sign-outs file cannot be replaced")
        }
    }

    /// The file of `account`: its name is the account's UTF-8 bytes in hex (their SHA-256 for a long account), so
    /// any account is a safe name.
    private func file(for account: String) -> URL {
        let bytes = account.utf8.count > 64 ? Array(SHA256.hash(data: Data(account.utf8))) : Array(account.utf8)
        return directory.appendingPathComponent("signouts-\(HexEncoding.encode(bytes)).json", isDirectory: false)
    }
}
