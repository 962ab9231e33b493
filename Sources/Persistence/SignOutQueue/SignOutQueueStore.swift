public import Foundation

/// Where a client keeps the sign-outs it has not finished yet, so that they survive a relaunch: the revocations still
/// to send to the provider, and the removals of signed-out sessions that could not be written.
///
/// The client writes one opaque blob per account (it may hold a refresh token waiting to be revoked: keep it where
/// you keep the session). ``InMemorySignOutQueueStore`` keeps nothing across a relaunch, ``FileSignOutQueueStore``
/// keeps files only the user can read, and `KeychainTokenStore` (in `PersistenceKeychain`) keeps the blob in the
/// Keychain beside the session.
///
/// Several processes may share one queue (an app and its extensions, replicas over one database): each change is
/// made with ``updateSignOutQueue(account:_:)``, a read and a write no other writer comes between. The protocol's
/// default reads then writes, which is enough for a store one process uses; a store processes share implements it
/// under a lock of its own (``FileSignOutQueueStore`` a lock file, `PostgresTokenStore` a row lock).
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

    /// Replaces the blob kept for `account` with what `update` makes of it, as one step: no other write of the blob
    /// (from another process sharing the store included) comes between the read and the write. `update` gets the blob
    /// kept now (`nil` when none) and returns the new one (`nil` removes it); it may run again if the store retries.
    ///
    /// The default implementation calls ``loadSignOutQueue(account:)`` then ``saveSignOutQueue(_:account:)``: atomic
    /// only when nothing else writes the blob meanwhile (an actor with no suspension between them, or a store one
    /// process uses).
    ///
    /// - Parameters:
    ///   - account: The client's account key.
    ///   - update: Makes the new blob from the one kept now.
    /// - Returns: The blob kept afterwards (what `update` returned).
    /// - Throws: A ``PersistenceError`` when the blob could not be read or written; nothing is changed then.
    func updateSignOutQueue(
        account: String, _ update: @escaping @Sendable (Data?) -> Data?
    ) async throws(PersistenceError) -> Data?
}

extension SignOutQueueStore {
    /// Reads the blob with ``loadSignOutQueue(account:)``, then writes what `update` makes of it with
    /// ``saveSignOutQueue(_:account:)``. Another writer may come between the two: a store processes share implements
    /// the requirement under a lock instead.
    ///
    /// - Parameters:
    ///   - account: The client's account key.
    ///   - update: Makes the new blob from the one kept now.
    /// - Returns: The blob kept afterwards.
    /// - Throws: A ``PersistenceError`` when the blob could not be read or written.
    public func updateSignOutQueue(
        account: String, _ update: @escaping @Sendable (Data?) -> Data?
    ) async throws(PersistenceError) -> Data? {
        let new = update(try await loadSignOutQueue(account: account))
        try await saveSignOutQueue(new, account: account)
        return new
    }
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

    /// Replaces the blob kept for `account` with what `update` makes of it, in one step of the actor.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - update: Makes the new blob from the one kept now.
    /// - Returns: The blob kept afterwards.
    public func updateSignOutQueue(
        account: String, _ update: @escaping @Sendable (Data?) -> Data?
    ) async throws(PersistenceError) -> Data? {
        blobs[account] = update(blobs[account])
        return blobs[account]
    }

    /// Whether a blob is kept for `account` (for tests).
    ///
    /// - Parameter account: The account key.
    /// - Returns: `true` when one is kept.
    package func holdsQueue(account: String) -> Bool { blobs[account] != nil }
}
