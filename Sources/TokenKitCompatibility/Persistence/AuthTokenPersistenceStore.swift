import AuthToken
import Crypto
import Foundation
public import Persistence

/// A ``/Persistence/TokenStore`` over an app's own ``AuthTokenPersistenceProtocol`` (FitIQ's Keychain adapter), so
/// that the app's persistence backs a `TokenRefreshClient`: the client restores the session from it and writes every
/// rotated pair to it before any caller sees the new token.
///
/// It serves one account; a change the app makes itself counts as a new generation, so a client never overwrites the
/// app's pair; a profile ID never outlives the tokens it was saved with; errors name the method and the error's type,
/// never its text. Each guarantee in full: <doc:AnAppsOwnTokenPersistence>.
public final class AuthTokenPersistenceStore: TokenStore, ExternallyWrittenTokenStore {
    /// What the adapter last saw in the app's persistence, and the generation it gave it.
    private struct Seen {
        var generation: UInt64 = 0
        /// The identity of the session seen: the client's, or a new one for a pair the app stored itself (which may
        /// be another user's); `nil` for the pair found at the first look.
        var sessionID: String?
        /// A digest of the stored pair and profile ID (of "nothing stored" when absent); `nil` before the first look.
        var digest: SHA256.Digest?
    }

    /// The app's persistence.
    package let persistence: any AuthTokenPersistenceProtocol
    /// The account whose session the app's persistence keeps.
    public let account: String
    /// Guarded by the mutex; every call into the app's persistence is made while holding it.
    private let seen = LockedValue(Seen())

    /// Creates the adapter.
    ///
    /// - Parameters:
    ///   - persistence: The app's persistence.
    ///   - account: The account it keeps the session of; `default` (a `TokenRefreshClient`'s default) unless given.
    public init(_ persistence: any AuthTokenPersistenceProtocol, account: String = "default") {
        self.persistence = persistence
        self.account = account
    }

    /// Reads the token and the user profile ID.
    ///
    /// - Parameter account: The account key; any other than ``account`` is `.unavailable(.wrongAccount)`.
    /// - Returns: `.found`, `.absent` when no access token is stored, or `.unavailable` when a read threw.
    public func load(account: String) async -> TokenStoreRead {
        guard account == self.account else { return .unavailable(Self.wrongAccount) }
        return seen.withLock { seen in
            do throws(PersistenceError) {
                let current = try look(&seen)
                guard let token = current.token else { return .absent }
                return .found(
                    StoredSession(
                        token: token, userID: current.profileID?.uuidString, generation: seen.generation,
                        sessionID: seen.sessionID))
            } catch {
                return .unavailable(error)
            }
        }
    }

    /// Stores the session's token and profile ID if `condition` holds for what is stored now.
    ///
    /// - Parameters:
    ///   - session: The session; its user ID is stored as the profile ID when it is a UUID, and otherwise the
    ///     stored profile ID is deleted.
    ///   - account: The account key; must be ``account``.
    ///   - condition: When the write may happen.
    /// - Throws: ``/Persistence/PersistenceError/conflict``, ``/Persistence/PersistenceError/wrongAccount``, ``/Persistence/PersistenceError/readFailed``
    ///   or ``/Persistence/PersistenceError/writeFailed``.
    public func save(
        _ session: StoredSession, account: String, condition: WriteCondition
    ) async throws(PersistenceError) {
        guard account == self.account else { throw Self.wrongAccount }
        try seen.withLock { (seen: inout Seen) throws(PersistenceError) in
            let current = try look(&seen)
            guard condition.allows(generation: current.token == nil ? nil : seen.generation, sessionID: seen.sessionID)
            else { throw .conflict }
            let profileID = session.userID.flatMap(UUID.init(uuidString:))
            // The session as stored (its pair, profile ID, generation and identity): the write carries only what the
            // app's persistence cannot keep (a server-time offset, a record of server failures). Nothing is written,
            // and the generation stays, as the writer expects.
            if session.generation == seen.generation, session.sessionID == seen.sessionID, current.token != nil,
                Self.digest(token: session.token, profileID: profileID) == seen.digest
            {
                return
            }
            do {
                if current.profileID != nil && current.profileID != profileID {
                    try persistence.deleteUserProfileID()
                }
                try persistence.saveToken(session.token)
                if let profileID, profileID != current.profileID { try persistence.saveUserProfileID(profileID) }
            } catch {
                seen.digest = nil  // whatever is stored now is looked at afresh, as a change
                throw .writeFailed.with(detail: "the app's persistence threw \(type(of: error))")
            }
            seen.generation = max(seen.generation &+ 1, session.generation)
            seen.sessionID = session.sessionID
            seen.digest = Self.digest(token: session.token, profileID: profileID)
        }
    }

    /// Deletes the user profile ID, then the tokens, if `condition` holds for what is stored now.
    ///
    /// - Parameters:
    ///   - account: The account key; must be ``account``.
    ///   - condition: When the removal may happen.
    /// - Throws: ``/Persistence/PersistenceError/conflict``, ``/Persistence/PersistenceError/wrongAccount``, ``/Persistence/PersistenceError/readFailed``
    ///   or ``/Persistence/PersistenceError/writeFailed``.
    public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        guard account == self.account else { throw Self.wrongAccount }
        try seen.withLock { (seen: inout Seen) throws(PersistenceError) in
            let current = try look(&seen)
            guard condition.allows(generation: current.token == nil ? nil : seen.generation, sessionID: seen.sessionID)
            else { throw .conflict }
            do {
                try persistence.deleteUserProfileID()
                try persistence.deleteToken()
            } catch {
                seen.digest = nil
                throw .writeFailed.with(detail: "the app's persistence threw \(type(of: error))")
            }
            seen.generation &+= 1
            seen.sessionID = nil
            seen.digest = Self.digest(token: nil, profileID: nil)
        }
    }

    // MARK: Internals

    /// Whether the app's persistence holds another pair or profile ID than the adapter last read or wrote (one read
    /// of each). A read that throws is no evidence of a change: the token in memory is handed out, and the client's
    /// next store read reports the failure, instead of a store read on every call while the persistence fails.
    package func mayHaveChanged(account: String) -> Bool {
        guard account == self.account else { return false }
        return seen.withLock { seen in
            guard let previous = seen.digest else { return false }
            do {
                let token = try persistence.fetchToken()
                let profileID = token == nil ? nil : try persistence.fetchUserProfileID()
                return Self.digest(token: token, profileID: profileID) != previous
            } catch {
                return false
            }
        }
    }

    private static let wrongAccount = PersistenceError.wrongAccount.with(
        detail: "the app's persistence keeps one account's session")

    /// Reads what the app's persistence holds now. Anything other than what this adapter last saw or wrote was
    /// written by someone else (the app itself): a new generation.
    private func look(_ seen: inout Seen) throws(PersistenceError) -> (token: AuthToken?, profileID: UUID?) {
        let token: AuthToken?
        let profileID: UUID?
        do {
            token = try persistence.fetchToken()
            profileID = try persistence.fetchUserProfileID()
        } catch {
            throw .readFailed.with(detail: "the app's persistence threw \(type(of: error))")
        }
        let digest = Self.digest(token: token, profileID: token == nil ? nil : profileID)
        if let previous = seen.digest, previous != digest {
            seen.generation &+= 1
            seen.sessionID = StoredSession.newSessionID()
        }
        seen.digest = digest
        return (token, profileID)
    }

    /// A digest of the pair and the profile ID, to notice a change; never stored or logged.
    private static func digest(token: AuthToken?, profileID: UUID?) -> SHA256.Digest {
        var hasher = SHA256()
        for part in [token?.accessToken, token?.refreshToken, profileID?.uuidString] {
            let bytes = Array((part ?? "").utf8)
            hasher.update(data: [part == nil ? 0 : 1] + withUnsafeBytes(of: UInt64(bytes.count).bigEndian, Array.init))
            hasher.update(data: bytes)
        }
        return hasher.finalize()
    }
}
