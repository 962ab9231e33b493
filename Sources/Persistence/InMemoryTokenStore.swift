public import Foundation

/// A token store that keeps sessions in memory, for tests and for processes that need nothing durable.
///
/// It takes no lock in ``withExclusiveAccess(account:_:)``: it is meant for one client, whose own single flight is
/// enough. Clients sharing one instance do not exclude each other, as processes sharing a store without a lock
/// would not; to test clients that coordinate, share a ``FileTokenStore`` on a temporary directory instead.
public actor InMemoryTokenStore: TokenStore, SignOutQueueStore {
    private var sessions: [String: StoredSession]
    private var signOutQueues: [String: Data] = [:]

    /// Creates a store, optionally with sessions already in it.
    ///
    /// - Parameter sessions: Sessions by account.
    public init(sessions: [String: StoredSession] = [:]) {
        self.sessions = sessions
    }

    /// Reads the session stored for `account`.
    ///
    /// - Parameter account: The account key.
    /// - Returns: `.found` or `.absent`; memory is never unavailable.
    public func load(account: String) async -> TokenStoreRead {
        sessions[account].map(TokenStoreRead.found) ?? .absent
    }

    /// Stores `session` if `condition` holds.
    ///
    /// - Parameters:
    ///   - session: The session.
    ///   - account: The account key.
    ///   - condition: When the write may happen.
    /// - Throws: ``PersistenceError/conflict`` when the condition fails.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        guard condition.allows(stored: sessions[account]) else { throw .conflict }
        sessions[account] = session
    }

    /// Removes the session for `account` if `condition` holds.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen.
    /// - Throws: ``PersistenceError/conflict`` when the condition fails.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        guard condition.allows(stored: sessions[account]) else { throw .conflict }
        sessions[account] = nil
    }

    /// Reads the pending sign-outs of `account` (see ``SignOutQueueStore``).
    ///
    /// - Parameter account: The account key.
    /// - Returns: The blob, or `nil`.
    public func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? { signOutQueues[account] }

    /// Replaces the pending sign-outs of `account` (see ``SignOutQueueStore``).
    ///
    /// - Parameters:
    ///   - data: The new blob, or `nil` to remove it.
    ///   - account: The account key.
    public func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        signOutQueues[account] = data
    }

    /// Replaces the pending sign-outs of `account` with what `update` makes of them, in one step of the actor (see
    /// ``SignOutQueueStore/updateSignOutQueue(account:_:)``).
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - update: Makes the new blob from the one kept now.
    /// - Returns: The blob kept afterwards.
    public func updateSignOutQueue(
        account: String, _ update: @escaping @Sendable (Data?) -> Data?
    ) async throws(PersistenceError) -> Data? {
        signOutQueues[account] = update(signOutQueues[account])
        return signOutQueues[account]
    }
}
