public import Foundation
public import Persistence

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fresh directory under the system temporary directory (owner-only), removed by `remove()`.
public struct TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates the directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tokenkit-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        _ = chmod(url.path, 0o700)
    }

    /// A directory inside this one that a store will create itself.
    public var storeDirectory: URL { url.appendingPathComponent("sessions", isDirectory: true) }

    /// Removes the directory and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

extension TokenStoreRead {
    /// The session, when found.
    public var session: StoredSession? {
        if case .found(let session) = self { return session }
        return nil
    }

    /// The error, when unavailable.
    public var error: PersistenceError? {
        if case .unavailable(let error) = self { return error }
        return nil
    }

    /// Whether no session is stored.
    public var isAbsent: Bool {
        if case .absent = self { return true }
        return false
    }
}
