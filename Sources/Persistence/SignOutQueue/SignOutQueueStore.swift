public import Foundation

/// Where a client keeps the sign-outs it has not finished yet, so that they survive a relaunch: the revocations still
/// to send to the provider, and the removals of signed-out sessions that could not be written.
///
/// The client writes one opaque blob per account (it may hold a refresh token waiting to be revoked: keep it where
/// you keep the session). ``InMemorySignOutQueueStore`` keeps nothing across a relaunch, ``FileSignOutQueueStore``
/// keeps files only the user can read, and `KeychainTokenStore` (in `PersistenceKeychain`) keeps the blob in the
/// Keychain beside the session.
///
/// ```swift
/// actor DefaultsSignOutQueue: SignOutQueueStore {
///     private var blobs: [String: Data] = [:]
///     func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? { blobs[account] }
///     func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) { blobs[account] = data }
/// }
/// ```
public protocol SignOutQueueStore: Sendable {
    /// Reads the blob kept for `account`.
    ///
    /// - Parameter account: The client's account key.
    /// - Returns: The blob, or `nil` when none is kept.
    /// - Throws: ``PersistenceError/unavailable`` when it cannot be read now (a locked device), or another
    ///   ``PersistenceError``.
    func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data?

    /// Replaces the blob kept for `account`; `nil` removes it.
    ///
    /// - Parameters:
    ///   - data: The new blob, or `nil`.
    ///   - account: The client's account key.
    /// - Throws: A ``PersistenceError`` when it could not be written.
    func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError)
}

/// A ``SignOutQueueStore`` in memory: pending sign-outs last as long as the process (and as long as this instance:
/// share one between the clients of a test that plays a relaunch).
public actor InMemorySignOutQueueStore: SignOutQueueStore {
    private var blobs: [String: Data] = [:]

    /// Creates an empty store.
    public init() {}

    /// Reads the blob kept for `account`.
    ///
    /// - Parameter account: The account key.
    /// - Returns: The blob, or `nil`.
    public func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? { blobs[account] }

    /// Replaces the blob kept for `account`.
    ///
    /// - Parameters:
    ///   - data: The new blob, or `nil` to remove it.
    ///   - account: The account key.
    public func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        blobs[account] = data
    }

    /// Whether a blob is kept for `account` (for tests).
    ///
    /// - Parameter account: The account key.
    /// - Returns: `true` when one is kept.
    package func holdsQueue(account: String) -> Bool { blobs[account] != nil }
}
