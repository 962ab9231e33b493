// The store contract; see StoredSession.swift for the values it keeps.

/// A place that keeps sessions between launches, keyed by account.
///
/// A store is the only thing that remembers a rotated refresh token, so its contract is strict.
///
/// **Three-way load.** ``load(account:)`` tells three cases apart: a session was found, there is none, or the
/// store cannot be read right now. "Cannot be read" (a locked Keychain, an unreadable file, a database that does not
/// answer) is ``TokenStoreRead/unavailable(_:)``, never ``TokenStoreRead/absent``: callers sign the user out on
/// absent.
///
/// **Writes conditional on the session.** ``save(_:account:condition:)`` and ``remove(account:condition:)``
/// judge their ``WriteCondition`` against the ``StoredSession/generation`` and ``StoredSession/sessionID`` stored
/// *now* (``WriteCondition/allows(stored:)``), in one atomic step with the write, and otherwise throw
/// ``PersistenceError/conflict`` and change nothing. Keep the identity a session was saved with. So a write never lands after a
/// newer generation: a refresh that finishes late cannot overwrite a newer session or bring back one that was
/// signed out. Removing an absent session succeeds.
///
/// **Exclusive access, for a store shared by processes or replicas.** ``withExclusiveAccess(account:_:)`` is what
/// keeps two processes from presenting the same refresh token (a server with reuse detection then revokes the
/// whole session). A store private to one process may keep the default implementation, which takes no lock: the
/// client's own single flight is enough there. A store shared by processes or replicas guarantees:
/// - While a body runs in a live holder, no other body for the account starts, even if a connection, a lock or
///   the database behind the store is lost and comes back meanwhile. A lock tied to a connection (a session-level
///   advisory lock) is gone when the connection is, so it is only a hint. Keep a *lease* in the data itself, next
///   to the session: an owner, a fencing number that grows with every holder, and an expiry, taken in one atomic
///   step and renewed while the body runs. A waiter never runs its body while another holder's lease is live; only
///   an expired lease lets it in. Make the expiry longer than the longest outage a refresh should survive.
///   (`flock` on a file is such a lease already: it lasts until the holder's process ends.)
/// - A save from inside the body lands. One that fails transiently (a dropped connection) is retried by the store
///   within a bound, fenced by the lease and the generation, so a holder whose lease was taken over gets
///   ``PersistenceError/conflict`` instead of overwriting anything. The next holder reads what was saved.
/// - Errors while acquiring (no connection, a database restarting) are retried until the lock wait ends. Only
///   then throw ``PersistenceError/lockTimedOut`` or ``PersistenceError/lockFailed``, with the last error in the
///   detail.
/// - The store's own operations inside the body, and a nested `withExclusiveAccess` for the same account on the
///   same store, run under the access already held instead of waiting for it. `withExclusiveAccess` returns
///   what the body returns and rethrows what it throws.
///
/// One loss no store can prevent: a holder killed *after* the server rotated the refresh token, but before its
/// save landed, takes the new pair with it. Its lease expires, and the next holder presents the old refresh token,
/// which a server with reuse detection refuses. Only a grace window on the server, in which the previous refresh
/// token still works for a few seconds, cures that.
///
/// `TokenStoreConformance`, in the `TokenKitTesting` product, checks a store against these clauses from your own
/// tests.
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
///         guard condition.allows(stored: sessions[account]) else { throw .conflict }
///         sessions[account] = session
///     }
///     func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
///         guard condition.allows(stored: sessions[account]) else { throw .conflict }
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
