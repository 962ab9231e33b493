import AuthToken
public import Persistence

/// A ``/Persistence/TokenStore`` over a ``TokenStorageProtocol`` (Lume's Keychain storage), so that it backs a
/// `TokenRefreshClient`.
///
/// Lume's storage keeps no generation, user ID or session identity: the user ID is the access token's JWT `sub`, and
/// this adapter counts its own writes for conditional writes and remembers the identity of the session it last saved
/// (a session it finds without having saved it, as at launch, has none). It keeps no server-time offset and no record
/// of server failures either: a client over it learns the server's time again after a launch, and its failure budget
/// counts its own failures only.
/// The check and the write are two calls to the storage, so the condition is exact for one writer at a time (a
/// `TokenRefreshClient` writes one at a time).
public actor TokenStorageStore: TokenStore {
    /// The storage.
    package let storage: any TokenStorageProtocol
    private var generation: UInt64 = 0
    /// The identity of the session this adapter last saved, while that save is what it wrote last.
    private var sessionID: String?

    /// Creates the adapter.
    ///
    /// - Parameter storage: The storage.
    public init(_ storage: any TokenStorageProtocol) {
        self.storage = storage
    }

    /// Reads the token.
    ///
    /// - Parameter account: Ignored: the storage keeps one token.
    /// - Returns: `.found` (with the JWT `sub` as the user ID), `.absent`, or `.unavailable` when the read threw.
    public func load(account: String) async -> TokenStoreRead {
        do {
            guard let token = try await storage.getToken() else { return .absent }
            return .found(
                StoredSession(
                    token: token, userID: token.parseUserIdFromJWT(), generation: generation, sessionID: sessionID))
        } catch {
            return .unavailable(.readFailed.with(detail: "the token storage threw \(type(of: error))"))
        }
    }

    /// Stores the session's token if `condition` holds.
    ///
    /// - Parameters:
    ///   - session: The session.
    ///   - account: Ignored.
    ///   - condition: When the write may happen.
    /// - Throws: ``/Persistence/PersistenceError/conflict`` or ``/Persistence/PersistenceError/writeFailed``.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        try await check(condition)
        // The session as stored (its token, generation and identity): the write carries only what Lume's storage
        // cannot keep (a server-time offset, a record of server failures). Nothing is written, and the generation
        // stays, as the writer expects.
        if session.generation == generation, session.sessionID == sessionID,
            (try? await storage.getToken()) == session.token
        {
            return
        }
        do {
            try await storage.saveToken(session.token)
        } catch {
            throw .writeFailed.with(detail: "the token storage threw \(type(of: error))")
        }
        generation = max(generation &+ 1, session.generation)
        sessionID = session.sessionID
    }

    /// Deletes the token if `condition` holds.
    ///
    /// - Parameters:
    ///   - account: Ignored.
    ///   - condition: When the removal may happen.
    /// - Throws: ``/Persistence/PersistenceError/conflict`` or ``/Persistence/PersistenceError/writeFailed``.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await check(condition)
        do {
            try await storage.deleteToken()
        } catch {
            throw .writeFailed.with(detail: "the token storage threw \(type(of: error))")
        }
        generation &+= 1
        sessionID = nil
    }

    private func check(_ condition: WriteCondition) async throws(PersistenceError) {
        if condition == .always { return }
        let stored: Bool
        do {
            stored = try await storage.getToken() != nil
        } catch {
            throw .readFailed.with(detail: "the token storage threw \(type(of: error))")
        }
        guard condition.allows(generation: stored ? generation : nil, sessionID: stored ? sessionID : nil) else {
            throw .conflict
        }
    }
}
