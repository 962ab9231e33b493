extension TokenStore {
    /// Saves a new session (a sign-in) above every generation stored, and returns it as saved.
    ///
    /// Another process may have refreshed or signed in since this one last read the store; a new session stored at
    /// a generation that process also holds would be taken for its own and overwritten by its next refresh. The read
    /// and the save run under the store's exclusive access. When another holder keeps that past the store's lock wait,
    /// the save is made without it, conditional on what was read (read again, up to three times, when another write
    /// landed in between).
    ///
    /// - Parameters:
    ///   - session: The new session; its generation is raised when the store holds one as high or higher.
    ///   - account: The account key.
    /// - Returns: The session as saved.
    /// - Throws: The store's ``PersistenceError`` when the store cannot be read or the save fails;
    ///   ``PersistenceError/conflict`` when, without the lock, other writes kept landing between the read and the save.
    package func saveAboveStored(
        _ session: StoredSession, account: String
    ) async throws(PersistenceError) -> StoredSession {
        /// Reads what is stored and the session placed above it, or throws when the store cannot be read (a session
        /// stored there may hold a higher generation than this process knows).
        @Sendable func placed() async throws(PersistenceError) -> (StoredSession, WriteCondition) {
            switch await load(account: account) {
            case .found(let stored):
                let generation = max(session.generation, stored.generation &+ 1)
                return (session.with(generation: generation), .session(stored.sessionID, generation: stored.generation))
            case .absent:
                return (session, .absent)
            case .unavailable(let error):
                throw error
            }
        }
        do {
            return try await withExclusiveAccess(account: account) {
                let (session, _) = try await placed()
                // The caller drops the session if this save fails: a store must not complete it later.
                try await SaveFailure.withDroppedOnFailure { () async throws(PersistenceError) in
                    try await save(session, account: account, condition: .always)
                }
                return session
            }
        } catch let error as PersistenceError where error == .lockTimedOut {
            // Without the lock, a compare-and-swap: a write that landed between the read and the save is never
            // overwritten; the read is made again.
            for _ in 0..<3 {
                let (session, condition) = try await placed()
                do {
                    try await save(session, account: account, condition: condition)
                    return session
                } catch .conflict {
                    continue
                }
            }
            throw .conflict
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw .writeFailed
        }
    }
}

/// A store that code other than its clients writes too (an app's own persistence behind an adapter): a client asks
/// it, before handing out a token from memory, whether the stored session may have changed.
package protocol ExternallyWrittenTokenStore: TokenStore {
    /// Whether what is stored for `account` differs from what this store last read or wrote. Cheap and synchronous;
    /// it changes nothing (the next ``TokenStore/load(account:)`` takes the change up).
    func mayHaveChanged(account: String) -> Bool
}
