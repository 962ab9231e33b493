public import Foundation
public import Persistence

/// A token store that posts a ``SessionChangeNotifier`` notification after each save and removal it makes, so
/// the other processes sharing the store (an app and its extensions) re-read it.
///
/// ```swift
/// let store = NotifyingTokenStore(KeychainTokenStore(configuration: configuration, keychain: keychain), notifier)
/// ```
public struct NotifyingTokenStore: TokenStore, SignOutQueueStore {
    private let base: any TokenStore
    private let notifier: any SessionChangeNotifier
    /// Where the client's pending sign-outs go: the wrapped store when it keeps them (a `KeychainTokenStore`), else
    /// memory.
    private let signOutQueue: any SignOutQueueStore

    /// Wraps `base`.
    ///
    /// - Parameters:
    ///   - base: The shared store, such as a `KeychainTokenStore` with an access group and a shared container.
    ///   - notifier: Where to post after each change.
    public init(_ base: any TokenStore, _ notifier: any SessionChangeNotifier) {
        self.base = base
        self.notifier = notifier
        self.signOutQueue = base as? any SignOutQueueStore ?? InMemorySignOutQueueStore()
    }

    /// Reads through the wrapped store.
    ///
    /// - Parameter account: The account key.
    /// - Returns: What the wrapped store read.
    public func load(account: String) async -> TokenStoreRead {
        await base.load(account: account)
    }

    /// Saves through the wrapped store, then posts.
    ///
    /// - Parameters:
    ///   - session: The session.
    ///   - account: The account key.
    ///   - condition: When the write may happen.
    /// - Throws: What the wrapped store throws; nothing is posted then.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        try await base.save(session, account: account, condition: condition)
        notifier.post()
    }

    /// Removes through the wrapped store, then posts.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen.
    /// - Throws: What the wrapped store throws; nothing is posted then.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.remove(account: account, condition: condition)
        notifier.post()
    }

    /// Runs `body` under the wrapped store's exclusive access.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The work to run.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` or the wrapped store throws.
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await base.withExclusiveAccess(account: account, body)
    }

    /// Reads the pending sign-outs through the wrapped store when it keeps them (see
    /// ``/Persistence/SignOutQueueStore``).
    ///
    /// - Parameter account: The account key.
    /// - Returns: The blob, or `nil`.
    /// - Throws: What the wrapped store throws.
    public func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? {
        try await signOutQueue.loadSignOutQueue(account: account)
    }

    /// Writes the pending sign-outs through the wrapped store when it keeps them; nothing is posted.
    ///
    /// - Parameters:
    ///   - data: The blob, or `nil` to remove it.
    ///   - account: The account key.
    /// - Throws: What the wrapped store throws.
    public func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        try await signOutQueue.saveSignOutQueue(data, account: account)
    }

    /// Changes the pending sign-outs through the wrapped store in one step, as the wrapped store does it (under its
    /// lock, for a store that processes share); nothing is posted.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - update: Makes the new blob from the one kept now.
    /// - Returns: The blob kept afterwards.
    /// - Throws: What the wrapped store throws.
    public func updateSignOutQueue(
        account: String, _ update: @escaping @Sendable (Data?) -> Data?
    ) async throws(PersistenceError) -> Data? {
        try await signOutQueue.updateSignOutQueue(account: account, update)
    }
}
