public import AuthToken
public import Foundation
public import Persistence

/// Serves the synchronous ``AuthTokenPersistenceProtocol`` from any ``/Persistence/TokenStore``.
///
/// A store is asynchronous and the protocol is not, so the adapter keeps the session in memory: it is read
/// once when the adapter is created, every read is answered from memory, and every write lands in memory at
/// once and reaches the store in order, in the background. ``flush()`` waits until every write so far has
/// reached the store and throws the first failure since the last flush.
///
/// ```swift
/// let persistence = try await TokenStoreAuthTokenPersistence(store: fileStore)
/// try persistence.save(accessToken: access, refreshToken: refresh)
/// try await persistence.flush()
/// ```
public final class TokenStoreAuthTokenPersistence: AuthTokenPersistenceProtocol {
    private struct State {
        var session: StoredSession?
        var lastWrite: Task<Void, Never>?
        var failure: PersistenceError?
    }

    /// The store.
    package let store: any TokenStore
    /// The account key the session is kept under.
    package let account: String
    /// The session as last written, the write chain and its first failure.
    private let state = LockedValue(State())

    /// Creates the adapter and reads the stored session.
    ///
    /// - Parameters:
    ///   - store: The store.
    ///   - account: The account key; `default` (a `TokenRefreshClient`'s default) unless given.
    /// - Throws: The ``/Persistence/PersistenceError`` of a store that cannot be read now (not "signed out").
    public init(store: any TokenStore, account: String = "default") async throws(PersistenceError) {
        self.store = store
        self.account = account
        switch await store.load(account: account) {
        case .found(let stored): state.withLock { $0.session = stored }
        case .absent: break
        case .unavailable(let error): throw error
        }
    }

    /// Waits until every write made so far has reached the store.
    ///
    /// - Throws: The first ``/Persistence/PersistenceError`` since the last flush.
    public func flush() async throws(PersistenceError) {
        let last = state.withLock { $0.lastWrite }
        await last?.value
        let failure = state.withLock { state -> PersistenceError? in
            defer { state.failure = nil }
            return state.failure
        }
        if let failure { throw failure }
    }

    /// Stores the whole token, keeping the user profile ID.
    ///
    /// - Parameter token: The token.
    public func saveToken(_ token: AuthToken) throws {
        // A pair over a stored session keeps its identity (a rotation); over nothing, it starts a new session.
        update {
            StoredSession(
                token: token, userID: $0?.userID, generation: ($0?.generation ?? 0) &+ 1,
                sessionID: $0 == nil ? StoredSession.newSessionID() : $0?.sessionID)
        }
    }

    /// The stored token, or `nil`.
    ///
    /// - Returns: The token as stored (with its receipt time when it came from TokenKit).
    public func fetchToken() throws -> AuthToken? {
        state.withLock { $0.session?.token }
    }

    /// Deletes the token and the user profile ID.
    public func deleteToken() throws {
        update { _ in nil }
    }

    /// Stores the two tokens; the expiry is parsed from the access token's `exp`.
    ///
    /// - Parameters:
    ///   - accessToken: The access token.
    ///   - refreshToken: The refresh token; empty means none.
    public func save(accessToken: String, refreshToken: String) throws {
        try saveToken(
            AuthToken.withParsedExpiration(
                accessToken: accessToken, refreshToken: refreshToken.isEmpty ? nil : refreshToken))
    }

    /// The stored access token, or `nil`.
    ///
    /// - Returns: The access token.
    public func fetchAccessToken() throws -> String? {
        state.withLock { $0.session?.token.accessToken }
    }

    /// The stored refresh token, or `nil`.
    ///
    /// - Returns: The refresh token.
    public func fetchRefreshToken() throws -> String? {
        state.withLock { $0.session?.token.refreshToken }
    }

    /// Deletes the token and the user profile ID.
    public func deleteTokens() throws {
        try deleteToken()
    }

    /// Stores the user profile ID with the session; without a stored token there is nothing to attach it to,
    /// and it is not kept.
    ///
    /// - Parameter userID: The user profile ID.
    public func saveUserProfileID(_ userID: UUID) throws {
        update { session in
            session.map {
                StoredSession(
                    token: $0.token, userID: userID.uuidString, generation: $0.generation &+ 1, sessionID: $0.sessionID)
            }
        }
    }

    /// The stored user profile ID, or `nil` (also when the stored one is not a UUID).
    ///
    /// - Returns: The user profile ID.
    public func fetchUserProfileID() throws -> UUID? {
        state.withLock { $0.session?.userID.flatMap(UUID.init(uuidString:)) }
    }

    /// Forgets the user profile ID, keeping the token.
    public func deleteUserProfileID() throws {
        update { session in
            session.map {
                StoredSession(token: $0.token, userID: nil, generation: $0.generation &+ 1, sessionID: $0.sessionID)
            }
        }
    }

    /// Applies `change` in memory and queues the write behind the ones before it.
    private func update(_ change: (StoredSession?) -> StoredSession?) {
        state.withLock { state in
            let new = change(state.session)
            state.session = new
            let previous = state.lastWrite
            let store = self.store
            let account = self.account
            state.lastWrite = Task { [weak self] in
                await previous?.value
                do throws(PersistenceError) {
                    if let new {
                        try await store.save(new, account: account, condition: .always)
                    } else {
                        try await store.remove(account: account, condition: .always)
                    }
                } catch {
                    self?.state.withLock { state in
                        if state.failure == nil { state.failure = error }
                    }
                }
            }
        }
    }
}
