/// What a caller does with a session whose save fails, told to the store for the saves made inside
/// ``withDroppedOnFailure(_:)``.
package enum SaveFailure {
    /// Whether the caller drops the session when its save fails (a sign-in goes back to the session it replaced): a
    /// store must then not complete that save later, neither by retrying it in the background nor by letting an
    /// attempt still in flight commit. `false` by default: a caller keeps a pair it could not store (a refreshed
    /// pair, whose old refresh token is spent) and saves it again, so a store may go on trying.
    @TaskLocal package static var dropsSession = false

    /// Runs `body` with ``dropsSession`` set: a save in it that is reported failed never lands afterwards, unless
    /// the store's error says the save's outcome is unknown.
    ///
    /// - Parameter body: The saves whose failure drops the session.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    package static func withDroppedOnFailure<T: Sendable>(
        _ body: () async throws(PersistenceError) -> T
    ) async throws(PersistenceError) -> T {
        do {
            return try await $dropsSession.withValue(true) { () async throws -> T in try await body() }
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw .writeFailed
        }
    }
}
