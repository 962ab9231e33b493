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
/// replaced atomically on each write.
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
        let url = file(for: account)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            return try Data(contentsOf: url)
        } catch {
            throw PersistenceError.readFailed.with(detail: "the pending sign-outs file cannot be read")
        }
    }

    /// Replaces the file of `account` (written beside it, then renamed over it), or removes it for `nil`.
    ///
    /// - Parameters:
    ///   - data: The new bytes, or `nil`.
    ///   - account: The account key.
    /// - Throws: ``PersistenceError/writeFailed`` when the file cannot be written or removed.
    public func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        let url = file(for: account)
        guard let data else {
            guard unlink(url.path) == 0 || errno == ENOENT else {
                throw PersistenceError.writeFailed.with(detail: "the pending sign-outs file cannot be removed")
            }
            return
        }
        let manager = FileManager.default
        do {
            try manager.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw PersistenceError.writeFailed.with(detail: "the pending sign-outs directory cannot be created")
        }
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
        let name = bytes.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
        return directory.appendingPathComponent("signouts-\(name).json", isDirectory: false)
    }
}
