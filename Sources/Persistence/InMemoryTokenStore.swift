import Foundation

/// A token store that keeps sessions in memory, for tests and for processes that need nothing durable.
///
/// Clients that share one instance coordinate through it as processes do through a shared store:
/// ``withExclusiveAccess(account:_:)`` runs one body per account at a time.
public actor InMemoryTokenStore: TokenStore {
    private var sessions: [String: StoredSession]
    /// This instance's prefix for the process-local lock keys.
    private nonisolated let lockPrefix = "memory|\(UUID().uuidString)|"

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
        guard condition.allows(current: sessions[account]?.generation) else { throw .conflict }
        sessions[account] = session
    }

    /// Removes the session for `account` if `condition` holds.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen.
    /// - Throws: ``PersistenceError/conflict`` when the condition fails.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        guard condition.allows(current: sessions[account]?.generation) else { throw .conflict }
        sessions[account] = nil
    }

    /// Runs `body` while no other body for `account` runs on this instance; a body nested in another for the same
    /// account (in the same task or its child tasks) runs at once.
    ///
    /// The lock's expiry is the process's end: nothing else shares it.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The work to run.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or ``PersistenceError/lockFailed`` when the task is cancelled while waiting.
    public nonisolated func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await ProcessLocalLocks.shared.withLock(lockPrefix + account) { try await body() }
    }
}
