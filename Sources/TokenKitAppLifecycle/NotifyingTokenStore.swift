public import Persistence

/// A token store that posts a ``SessionChangeNotifier`` notification after each save and removal it makes, so
/// the other processes sharing the store (an app and its extensions) re-read it.
///
/// ```swift
/// let store = NotifyingTokenStore(KeychainTokenStore(configuration: configuration, keychain: keychain), notifier)
/// ```
public struct NotifyingTokenStore: TokenStore {
    private let base: any TokenStore
    private let notifier: any SessionChangeNotifier

    /// Wraps `base`.
    ///
    /// - Parameters:
    ///   - base: The shared store, such as a `KeychainTokenStore` with an access group and a shared container.
    ///   - notifier: Where to post after each change.
    public init(_ base: any TokenStore, _ notifier: any SessionChangeNotifier) {
        self.base = base
        self.notifier = notifier
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
}
