import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The key a ``FileTokenStore`` names its files with: 32 random bytes in `session-naming-key` in the store's
/// directory (mode 0600, owned by the store's user), created once by whichever process needs it first. A session
/// file's name is an HMAC-SHA256 of the account under it, so a listing of the directory does not confirm a guessed
/// account, while every process sharing the directory finds the same names.
enum NamingKey {
    static let fileName = "session-naming-key"
    static let size = 32

    /// Reads the directory's key; creates it first when there is none and `creating`, else returns `nil`.
    static func load(
        in handle: DirectoryHandle, expectedOwner: UInt32, creating: Bool
    ) throws(PersistenceError) -> SymmetricKey? {
        if let key = try read(handle, expectedOwner: expectedOwner) { return key }
        guard creating else { return nil }
        try create(handle)
        guard let key = try read(handle, expectedOwner: expectedOwner) else {
            throw PersistenceError.writeFailed.with(detail: "the naming key vanished after it was created")
        }
        return key
    }

    private static func read(_ handle: DirectoryHandle, expectedOwner: UInt32) throws(PersistenceError) -> SymmetricKey?
    {
        let fd: Int32
        switch POSIX.openForReading(in: handle.descriptor, fileName) {
        case .success(let descriptor): fd = descriptor
        case .failure(let code) where code.code == ENOENT: return nil
        case .failure(let code) where code.code == ELOOP:
            throw PersistenceError.notAFile.with(detail: "the naming key is a symbolic link")
        case .failure(let code): throw PersistenceError.readFailed.with(detail: "open(naming key): \(code)")
        }
        defer { _ = POSIX.closeChecked(fd) }
        switch POSIX.status(descriptor: fd) {
        case .failure(let code):
            throw PersistenceError.readFailed.with(detail: "fstat(naming key): \(code)")
        case .success(let status):
            guard status.isRegularFile else {
                throw PersistenceError.notAFile.with(detail: "something other than a file stands at the naming key")
            }
            guard status.owner == expectedOwner else {
                throw PersistenceError.ownedByAnotherUser.with(
                    detail: "the naming key belongs to user \(status.owner), not \(expectedOwner); not used")
            }
            guard status.groupOrOtherBits == 0 else {
                throw PersistenceError.permissionsTooWide.with(
                    detail: "naming key mode \(String(status.mode & 0o777, radix: 8)), expected 600")
            }
        }
        switch POSIX.readAll(fd, limit: 4 * size) {
        case .success(let bytes) where bytes.count == size: return SymmetricKey(data: bytes)
        case .success: throw PersistenceError.corrupt.with(detail: "the naming key is not \(size) bytes")
        case .failure(let code): throw PersistenceError.readFailed.with(detail: "read(naming key): \(code)")
        }
    }

    /// The prefix of a key's temporary file: `session-naming-key.tmp-<process ID>-<random>`.
    static let temporaryPrefix = fileName + ".tmp-"

    /// Whether `name` is the temporary file of a key creator that is no longer running: a process killed between
    /// creating its temporary file and removing it (after the link, it is a second name of the key). Nothing else
    /// removes it. One whose process is running, or whose name holds no process ID, is not.
    ///
    /// A process ID from another PID namespace that is not running here reads as ended; removing the temporary of
    /// such a creator still at work fails its one creation (it finds the key at its next operation).
    static func isAbandonedTemporary(_ name: String) -> Bool {
        guard name.hasPrefix(temporaryPrefix),
            let creator = Int32(name.dropFirst(temporaryPrefix.count).prefix { $0 != "-" })
        else { return false }
        return POSIX.processHasEnded(creator)
    }

    /// Writes a new key to a temporary file, syncs it, and links it into place: the key appears whole or not at
    /// all, and when two processes race, the first link wins and both read that key.
    private static func create(_ handle: DirectoryHandle) throws(PersistenceError) {
        let temporary =
            temporaryPrefix + String(POSIX.processID) + "-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let fd: Int32
        switch POSIX.createExclusive(in: handle.descriptor, temporary) {
        case .success(let descriptor): fd = descriptor
        case .failure(let code): throw PersistenceError.writeFailed.with(detail: "open(naming key): \(code)")
        }
        defer { _ = POSIX.unlinkItem(in: handle.descriptor, temporary) }
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let written = POSIX.writeAll(fd, bytes).flatMap { POSIX.sync(fd) }
        let closed = POSIX.closeChecked(fd)
        if case .failure(let code) = written {
            throw PersistenceError.writeFailed.with(detail: "write(naming key): \(code)")
        }
        if case .failure(let code) = closed {
            throw PersistenceError.writeFailed.with(detail: "close(naming key): \(code)")
        }
        switch POSIX.linkItem(in: handle.descriptor, temporary, to: fileName) {
        case .success, .failure(Errno(EEXIST)): break
        case .failure(let code): throw PersistenceError.writeFailed.with(detail: "link(naming key): \(code)")
        }
        _ = POSIX.sync(handle.descriptor)
    }
}
