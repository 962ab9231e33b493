// The store contract; see StoredSession.swift for the values it keeps.

/// A place that keeps sessions between launches, keyed by account.
///
/// A store is the only thing that remembers a rotated refresh token, so its contract is strict:
/// - ``load(account:)`` tells found, absent and unavailable apart, and never reports a read failure as
///   ``TokenStoreRead/absent`` (callers sign the user out on absent);
/// - ``save(_:account:condition:)`` and ``remove(account:condition:)`` judge their ``WriteCondition`` against the
///   ``StoredSession/generation`` and ``StoredSession/sessionID`` stored now (``WriteCondition/allows(stored:)``),
///   atomically with the write, and otherwise throw ``PersistenceError/conflict`` and change nothing; a store keeps
///   the identity a session was saved with;
/// - a store shared by processes or replicas runs one ``withExclusiveAccess(account:_:)`` body per account at a time,
///   whatever happens to its connections meanwhile, and lands the saves made inside it.
///
/// Each clause, a complete conformance and how to check yours: <doc:ImplementingATokenStore>.
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

    /// Runs `body` while no other body for `account` runs on any process or replica sharing this store.
    ///
    /// A store shared by processes keeps a lease that outlives connections and locks (see the protocol's
    /// documentation for the clauses); the default implementation runs `body` at once, which is right only for a
    /// store private to one process. Inside `body`, the store's own operations and a nested call for the same
    /// account do not wait for the access already held.
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - body: The work to run, typically a read-refresh-write.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or a ``PersistenceError`` (``PersistenceError/lockTimedOut``,
    ///   ``PersistenceError/lockFailed``) when the access could not be had within the store's lock wait.
    func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T
}

extension TokenStore {
    /// Runs `body` without any lock: the client's single flight is enough for a store private to one process. A
    /// store shared by processes or replicas implements its own, with a lease.
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
