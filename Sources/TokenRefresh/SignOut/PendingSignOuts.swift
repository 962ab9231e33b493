public import Persistence

/// How a ``TokenRefreshClient`` finishes what a sign-out could not finish at once: the revocation at the provider
/// when the network is down, and the store's removal when the store refused it.
///
/// A sign-out is local and immediate: the session leaves memory and the store before ``TokenRefreshClient/signOut(reason:)``
/// returns, and the call waits at most ``signOutWait`` for the revocation. A revocation still unsent is kept in
/// ``store``, sent again at the next launch, after ``TokenRefreshClient/networkRestored()`` and when the app calls
/// ``TokenRefreshClient/sendPendingSignOuts()``, and dropped (with a warning in the log) after ``maximumSends``
/// attempts. A removal that failed is kept there too, and made before the store is read at the next launch, so a
/// process killed before its retry never restores a signed-out session.
///
/// ```swift
/// let queue = FileSignOutQueueStore(directory: URL(fileURLWithPath: "/var/lib/my-app/sign-outs"))
/// let configuration = TokenRefreshClient.Configuration(pendingSignOuts: PendingSignOuts(store: queue))
/// ```
public struct PendingSignOuts: Sendable {
    /// Where the pending sign-outs are kept. `nil` (the default): in the client's token store when it can keep them
    /// (a `KeychainTokenStore` keeps them beside the session, a `PostgresTokenStore` in a table beside the sessions',
    /// an ``/Persistence/InMemoryTokenStore`` in memory), else
    /// in memory for the life of the client, and then nothing survives a relaunch.
    public var store: (any SignOutQueueStore)?
    /// How many times one revocation is sent before it is dropped; at least 1.
    public var maximumSends: Int
    /// How long ``TokenRefreshClient/signOut(reason:)`` waits for the revocation before it returns and leaves the
    /// revocation to go on in the background.
    public var signOutWait: Duration

    /// Creates the settings.
    ///
    /// - Parameters:
    ///   - store: Where pending sign-outs are kept; `nil` for the client's token store when it can keep them.
    ///   - maximumSends: Sends of one revocation before it is dropped; 5 by default.
    ///   - signOutWait: How long a sign-out waits for its revocation; 50 ms by default.
    public init(
        store: (any SignOutQueueStore)? = nil, maximumSends: Int = 5,
        signOutWait: Duration = .milliseconds(50)
    ) {
        self.store = store
        self.maximumSends = max(1, maximumSends)
        self.signOutWait = max(.zero, signOutWait)
    }
}
