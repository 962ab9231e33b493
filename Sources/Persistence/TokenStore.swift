// The store contract; see StoredSession.swift for the values it keeps.

/// A place that keeps sessions between launches, keyed by account.
///
/// A store is the only thing that remembers a rotated refresh token, so its contract is strict:
/// - ``load(account:)`` tells three cases apart: a session was found, there is none, or the store cannot
///   be read right now. "Cannot be read" (a locked Keychain, an unreadable file) is *not* "signed out".
/// - ``save(_:account:condition:)`` and ``remove(account:condition:)`` can be conditional on the stored
///   ``StoredSession/generation``, so a refresh that finishes late cannot overwrite a newer session or
///   resurrect one that was signed out.
/// - ``withExclusiveAccess(account:_:)`` runs a read-refresh-write under a lock that other processes
///   sharing the store also honour, where the store supports it.
///
/// A complete small conformance, for a single process:
///
/// ```swift
/// actor DictionaryStore: TokenStore {
///     var sessions: [String: StoredSession] = [:]
///     func load(account: String) async -> TokenStoreRead {
///         sessions[account].map(TokenStoreRead.found) ?? .absent
///     }
///     func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
///         guard condition.allows(current: sessions[account]?.generation) else { throw .conflict }
///         sessions[account] = session
///     }
///     func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
///         guard condition.allows(current: sessions[account]?.generation) else { throw .conflict }
///         sessions[account] = nil
///     }
/// }
/// ```
public protocol TokenStore: Sendable {
    /// Reads the session stored for `account`.
    ///
    /// - Parameter account: The account key.
    /// - Returns: `.found`, `.absent`, or `.unavailable` with the reason. Never report a read failure
    ///   as `.absent`: callers treat absent as signed out.
    func load(account: String) async -> TokenStoreRead

    /// Stores `session` for `account` if `condition` holds for the generation stored now.
    ///
    /// - Parameters:
    ///   - session: The session to store.
    ///   - account: The account key.
    ///   - condition: When the write may happen; ``WriteCondition/always`` to write unconditionally.
    /// - Throws: ``PersistenceError/conflict`` when the condition fails; another ``PersistenceError``
    ///   when the write fails. A failed write leaves what was stored before intact.
    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError)

    /// Removes the session stored for `account` if `condition` holds. Removing an absent session succeeds.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - condition: When the removal may happen.
    /// - Throws: ``PersistenceError/conflict`` when the condition fails; another ``PersistenceError``
    ///   when the removal fails.
    func remove(account: String, condition: WriteCondition) async throws(PersistenceError)

    /// Runs `body` while holding this store's exclusive lock for `account`.
    ///
    /// Stores shared between processes (a file store) take an advisory lock, so that only one process
    /// refreshes at a time; the default implementation simply runs `body`.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The work to run under the lock.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or a ``PersistenceError`` when the lock cannot be taken.
    func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T
}

extension TokenStore {
    /// Runs `body` without any lock: in-process single flight is enough for stores that are not shared.
    ///
    /// - Parameters:
    ///   - account: The account key (unused).
    ///   - body: The work to run.
    /// - Returns: What `body` returns.
    public func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        try await body()
    }
}
