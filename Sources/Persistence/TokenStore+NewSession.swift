extension TokenStore {
    /// Saves a new session (a sign-in) above every generation stored, and returns it as saved.
    ///
    /// Another process may have refreshed or signed in since this one last read the store; a new session stored at
    /// a generation that process also holds would be taken for its own and overwritten by its next refresh. The read
    /// and the save run under the store's exclusive access; when that cannot be had (a lock held elsewhere past the
    /// wait), they run without it, so a sign-in is never lost to another process's lock.
    ///
    /// - Parameters:
    ///   - session: The new session; its generation is raised when the store holds one as high or higher.
    ///   - account: The account key.
    /// - Returns: The session as saved.
    /// - Throws: The store's ``PersistenceError`` when the save fails.
    package func saveAboveStored(
        _ session: StoredSession, account: String
    ) async throws(PersistenceError) -> StoredSession {
        @Sendable func place() async throws(PersistenceError) -> StoredSession {
            var placed = session
            if case .found(let stored) = await load(account: account), stored.generation >= session.generation {
                placed = StoredSession(token: session.token, userID: session.userID, generation: stored.generation &+ 1)
            }
            try await save(placed, account: account, condition: .always)
            return placed
        }
        do {
            return try await withExclusiveAccess(account: account) { try await place() }
        } catch let error as PersistenceError where error == .lockTimedOut || error == .lockFailed {
            return try await place()
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw .writeFailed
        }
    }
}
