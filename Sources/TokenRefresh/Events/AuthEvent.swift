/// Something that happened to a session, published on ``TokenRefreshClient/events()``.
///
/// An open set: compare ``kind`` with the static members of ``Kind``. Descriptions carry a token
/// fingerprint at most, never token text.
public struct AuthEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A session started (sign-in, or a restored or adopted session).
        public static let signedIn = Kind("signedIn")
        /// The access token was refreshed: the token provider was asked (a network call, or an SDK's answer).
        public static let tokenRefreshed = Kind("tokenRefreshed")
        /// A newer pair that another process or replica saved in the shared store was taken instead of
        /// refreshing: no call to the token provider.
        public static let tokenAdopted = Kind("tokenAdopted")
        /// The session ended; ``AuthEvent/reason`` says why.
        public static let signedOut = Kind("signedOut")
        /// A refresh failed and the session was kept; ``AuthEvent/error`` says why.
        public static let refreshFailed = Kind("refreshFailed")
        /// A new token pair could not be written to the store; it is kept in memory and the write is retried.
        public static let persistenceFailed = Kind("persistenceFailed")
        /// A token pair that failed to persist earlier has now been written.
        public static let persistenceRecovered = Kind("persistenceRecovered")
        /// The store could not be read (a locked Keychain). The session is not considered ended.
        public static let storageUnavailable = Kind("storageUnavailable")
        /// A stored session was read at launch (``TokenRefreshClient/restoreSession(validatingWithProvider:)``).
        public static let sessionRestored = Kind("sessionRestored")
        /// The server rejected a request again after a refresh (a 401 a refresh did not cure).
        public static let unauthorizedAfterRefresh = Kind("unauthorizedAfterRefresh")

        /// The kind's name.
        public var description: String { name }
    }

    /// Why a session ended.
    public struct SignOutReason: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The server rejected the refresh token (`invalid_grant`): revoked, reused, or expired server-side.
        public static let revoked = SignOutReason("revoked")
        /// The user (or the app) signed out.
        public static let userAction = SignOutReason("userAction")
        /// The access token expired and there was no way to refresh it.
        public static let expired = SignOutReason("expired")
        /// Another process removed the session from the shared store.
        public static let removedElsewhere = SignOutReason("removedElsewhere")
        /// The token provider (an SDK such as Clerk's) reported that it has no session any more.
        public static let providerSignedOut = SignOutReason("providerSignedOut")
        /// The server kept rejecting requests after a refresh, and the app asked for the session to end then
        /// (``TokenRefreshClient/sessionRejected(afterRefreshOf:endSession:)``).
        public static let unauthorized = SignOutReason("unauthorized")
        /// The account was deleted on the server (``TokenRefreshClient/deleteAccount(_:body:through:)``).
        public static let accountDeleted = SignOutReason("accountDeleted")
        /// The server no longer knows the session (a cookie session's check at launch or on demand found it gone).
        public static let invalidatedOnServer = SignOutReason("invalidatedOnServer")
        /// A request was refused (401) and the session check that followed found the session gone: it expired or
        /// was ended on the server while in use (an app's global 401 handler shows "セッションが期限切れです").
        public static let sessionExpired = SignOutReason("sessionExpired")
        /// Every session of the user was revoked on the server
        /// (``TokenRefreshClient/signOutEverywhere(_:body:through:)``).
        public static let signedOutEverywhere = SignOutReason("signedOutEverywhere")

        /// The reason's name.
        public var description: String { name }
    }

    /// What happened.
    public let kind: Kind
    /// The user concerned, when known.
    public let userID: String?
    /// For ``Kind/signedOut``: why.
    public let reason: SignOutReason?
    /// For failures: the error (its description is secret-free).
    public let error: TokenRefreshError?
    /// The fingerprint of the access token concerned, if any.
    public let tokenFingerprint: String?

    private init(
        _ kind: Kind, userID: String? = nil, reason: SignOutReason? = nil, error: TokenRefreshError? = nil,
        tokenFingerprint: String? = nil
    ) {
        self.kind = kind
        self.userID = userID
        self.reason = reason
        self.error = error
        self.tokenFingerprint = tokenFingerprint
    }

    /// A session started.
    ///
    /// - Parameters:
    ///   - userID: The user, if known.
    ///   - tokenFingerprint: The access token's fingerprint.
    /// - Returns: The event.
    package static func signedIn(userID: String?, tokenFingerprint: String? = nil) -> AuthEvent {
        AuthEvent(.signedIn, userID: userID, tokenFingerprint: tokenFingerprint)
    }

    /// The token was refreshed.
    ///
    /// - Parameters:
    ///   - userID: The user, if known.
    ///   - tokenFingerprint: The new access token's fingerprint.
    /// - Returns: The event.
    package static func tokenRefreshed(userID: String?, tokenFingerprint: String?) -> AuthEvent {
        AuthEvent(.tokenRefreshed, userID: userID, tokenFingerprint: tokenFingerprint)
    }

    /// A pair another process saved was adopted, without a refresh.
    ///
    /// - Parameters:
    ///   - userID: The user, if known.
    ///   - tokenFingerprint: The adopted access token's fingerprint.
    /// - Returns: The event.
    package static func tokenAdopted(userID: String?, tokenFingerprint: String?) -> AuthEvent {
        AuthEvent(.tokenAdopted, userID: userID, tokenFingerprint: tokenFingerprint)
    }

    /// The session ended.
    ///
    /// - Parameters:
    ///   - reason: Why.
    ///   - userID: The user, if known.
    ///   - error: The error behind it, if any.
    /// - Returns: The event.
    package static func signedOut(
        reason: SignOutReason, userID: String? = nil, error: TokenRefreshError? = nil
    ) -> AuthEvent {
        AuthEvent(.signedOut, userID: userID, reason: reason, error: error)
    }

    /// A refresh failed and the session was kept.
    ///
    /// - Parameters:
    ///   - error: Why.
    ///   - userID: The user, if known.
    /// - Returns: The event.
    package static func refreshFailed(_ error: TokenRefreshError, userID: String? = nil) -> AuthEvent {
        AuthEvent(.refreshFailed, userID: userID, error: error)
    }

    /// A token pair could not be written to the store.
    ///
    /// - Parameters:
    ///   - error: The store's error, wrapped.
    ///   - tokenFingerprint: The unsaved access token's fingerprint.
    /// - Returns: The event.
    package static func persistenceFailed(_ error: TokenRefreshError, tokenFingerprint: String?) -> AuthEvent {
        AuthEvent(.persistenceFailed, error: error, tokenFingerprint: tokenFingerprint)
    }

    /// A token pair that failed to persist has been written.
    ///
    /// - Parameter tokenFingerprint: The access token's fingerprint.
    /// - Returns: The event.
    package static func persistenceRecovered(tokenFingerprint: String?) -> AuthEvent {
        AuthEvent(.persistenceRecovered, tokenFingerprint: tokenFingerprint)
    }

    /// A stored session was read.
    ///
    /// - Parameters:
    ///   - userID: The user, if known.
    ///   - tokenFingerprint: The stored access token's fingerprint.
    /// - Returns: The event.
    package static func sessionRestored(userID: String?, tokenFingerprint: String?) -> AuthEvent {
        AuthEvent(.sessionRestored, userID: userID, tokenFingerprint: tokenFingerprint)
    }

    /// The server rejected a request again after a refresh.
    ///
    /// - Parameters:
    ///   - userID: The user, if known.
    ///   - tokenFingerprint: The rejected access token's fingerprint.
    /// - Returns: The event.
    package static func unauthorizedAfterRefresh(userID: String?, tokenFingerprint: String?) -> AuthEvent {
        AuthEvent(.unauthorizedAfterRefresh, userID: userID, tokenFingerprint: tokenFingerprint)
    }

    /// The store could not be read.
    ///
    /// - Parameter error: The store's error, wrapped.
    /// - Returns: The event.
    package static func storageUnavailable(_ error: TokenRefreshError) -> AuthEvent {
        AuthEvent(.storageUnavailable, error: error)
    }

    /// `AuthEvent.<kind>` with reason, user, error and fingerprint; never token text.
    public var description: String {
        var parts: [String] = []
        if let reason { parts.append("reason: \(reason)") }
        if let userID { parts.append("user: \(userID)") }
        if let error { parts.append("error: \(error)") }
        if let tokenFingerprint { parts.append("token: \(tokenFingerprint)") }
        return "AuthEvent.\(kind)" + (parts.isEmpty ? "" : "(" + parts.joined(separator: ", ") + ")")
    }
}
