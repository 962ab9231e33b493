public import AuthToken
public import Persistence

/// Serves Lume's ``TokenStorageProtocol`` from any ``/Persistence/TokenStore`` (a file store, the Keychain store, memory).
///
/// ```swift
/// let tokenStorage: any TokenStorageProtocol = TokenStoreTokenStorage(store: InMemoryTokenStore())
/// ```
public struct TokenStoreTokenStorage: TokenStorageProtocol {
    /// The store.
    package let store: any TokenStore
    /// The account key the token is kept under.
    package let account: String

    /// Creates the adapter.
    ///
    /// - Parameters:
    ///   - store: The store.
    ///   - account: The account key; `default` (a `TokenRefreshClient`'s default) unless given.
    public init(store: any TokenStore, account: String = "default") {
        self.store = store
        self.account = account
    }

    /// Stores the token, keeping the stored user ID, with the next generation.
    ///
    /// - Parameter token: The token.
    /// - Throws: A ``/Persistence/PersistenceError``.
    public func saveToken(_ token: AuthToken) async throws {
        var userID: String?
        var generation: UInt64 = 0
        // A pair over a stored session keeps its identity (a rotation); over nothing, it starts a new session.
        var sessionID: String? = StoredSession.newSessionID()
        switch await store.load(account: account) {
        case .found(let stored):
            userID = stored.userID
            generation = stored.generation
            sessionID = stored.sessionID
        case .absent: break
        case .unavailable(let error): throw error
        }
        try await store.save(
            StoredSession(token: token, userID: userID, generation: generation &+ 1, sessionID: sessionID),
            account: account, condition: .always)
    }

    /// Reads the token.
    ///
    /// - Returns: The token, or `nil` when none is stored.
    /// - Throws: The ``/Persistence/PersistenceError`` of an unavailable store (not "signed out").
    public func getToken() async throws -> AuthToken? {
        switch await store.load(account: account) {
        case .found(let stored): return stored.token
        case .absent: return nil
        case .unavailable(let error): throw error
        }
    }

    /// Deletes the token.
    ///
    /// - Throws: A ``/Persistence/PersistenceError``.
    public func deleteToken() async throws {
        try await store.remove(account: account, condition: .always)
    }
}
