import AuthToken
import Foundation

/// A ``TokenStore`` over an app's own ``AuthTokenPersistenceProtocol`` (FitIQ's Keychain adapter), so that
/// the app's persistence backs a `TokenRefreshClient`: the client restores the session from it and writes every
/// rotated pair to it before any caller sees the new token.
///
/// The app's persistence keeps no generation, so this adapter counts its own writes; conditional writes are
/// checked against that count under a lock, which makes them exact within one process. The token is read back
/// with ``AuthTokenPersistenceProtocol/fetchToken()`` (by default: the expiry from the JWT's `exp` against the
/// clock), and a user profile ID that is a UUID is stored with
/// ``AuthTokenPersistenceProtocol/saveUserProfileID(_:)``.
///
/// Errors of the app's persistence become ``PersistenceError/readFailed`` or ``PersistenceError/writeFailed``
/// naming the method and the error's type, never its text (which could hold a token).
public final class AuthTokenPersistenceStore: TokenStore {
    /// The app's persistence.
    public let persistence: any AuthTokenPersistenceProtocol
    /// Writes made through this adapter (the generation reported on reads), guarded by the mutex.
    private let generation = LockedValue<UInt64>(0)

    /// Creates the adapter.
    ///
    /// - Parameter persistence: The app's persistence.
    public init(_ persistence: any AuthTokenPersistenceProtocol) {
        self.persistence = persistence
    }

    /// Reads the token and the user profile ID.
    ///
    /// - Parameter account: Ignored: the app's persistence keeps one session.
    /// - Returns: `.found`, `.absent` when no access token is stored, or `.unavailable` when a read threw.
    public func load(account: String) async -> TokenStoreRead {
        generation.withLock { generation in
            do {
                guard let token = try persistence.fetchToken() else { return .absent }
                let userID = try persistence.fetchUserProfileID()
                return .found(StoredSession(token: token, userID: userID?.uuidString, generation: generation))
            } catch {
                return .unavailable(.readFailed.with(detail: "the app's persistence threw \(type(of: error))"))
            }
        }
    }

    /// Stores the session's token (and its user profile ID, when that is a UUID) if `condition` holds.
    ///
    /// - Parameters:
    ///   - session: The session.
    ///   - account: Ignored: the app's persistence keeps one session.
    ///   - condition: When the write may happen.
    /// - Throws: ``PersistenceError/conflict`` or ``PersistenceError/writeFailed``.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        try generation.withLock { (generation: inout UInt64) throws(PersistenceError) in
            try checkCondition(condition, generation: generation)
            do {
                try persistence.saveToken(session.token)
                if let userID = session.userID.flatMap(UUID.init(uuidString:)) {
                    try persistence.saveUserProfileID(userID)
                }
            } catch {
                throw .writeFailed.with(detail: "the app's persistence threw \(type(of: error))")
            }
            generation = max(generation &+ 1, session.generation)
        }
    }

    /// Deletes the tokens and the user profile ID if `condition` holds.
    ///
    /// - Parameters:
    ///   - account: Ignored: the app's persistence keeps one session.
    ///   - condition: When the removal may happen.
    /// - Throws: ``PersistenceError/conflict`` or ``PersistenceError/writeFailed``.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        try generation.withLock { (generation: inout UInt64) throws(PersistenceError) in
            try checkCondition(condition, generation: generation)
            do {
                try persistence.deleteToken()
                try persistence.deleteUserProfileID()
            } catch {
                throw .writeFailed.with(detail: "the app's persistence threw \(type(of: error))")
            }
            generation &+= 1
        }
    }

    /// Throws ``PersistenceError/conflict`` unless `condition` holds for what is stored now.
    private func checkCondition(_ condition: WriteCondition, generation: UInt64) throws(PersistenceError) {
        if condition == .always { return }
        let stored: Bool
        do {
            stored = try persistence.fetchAccessToken().map { !$0.isEmpty } ?? false
        } catch {
            throw .readFailed.with(detail: "the app's persistence threw \(type(of: error))")
        }
        guard condition.allows(current: stored ? generation : nil) else { throw .conflict }
    }
}
