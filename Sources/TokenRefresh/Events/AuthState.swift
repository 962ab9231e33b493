/// Where a session stands, in the terms an app's screens use.
public enum AuthState: Sendable, Hashable, CustomStringConvertible {
    /// No session.
    case signedOut
    /// A session for `userID` (when known).
    case signedIn(userID: String?)
    /// The stored session is being read, or a sign-in is under way.
    case loading
    /// The access token has expired and could not be refreshed for a transient reason (offline). The
    /// session is kept; the app may show cached data for `lastUserID` and try again later.
    case expired(lastUserID: String?)
    /// The store cannot be read now (the Keychain before the device's first unlock, a dismissed user-presence
    /// prompt), so whether a session is stored is not known yet. Never signed out: the stored session is kept, and
    /// the next read that succeeds (the client's next call, or
    /// ``TokenRefreshClient/restoreSession(validatingWithProvider:)`` when protected data becomes available) shows
    /// it. No session is usable meanwhile (``hasSession`` is `false`).
    case unavailable

    /// Whether a session exists (signed in or expired-but-kept).
    public var hasSession: Bool {
        switch self {
        case .signedIn, .expired: true
        case .signedOut, .loading, .unavailable: false
        }
    }

    /// `signedIn(<user>)` and similar; user IDs are not secrets.
    public var description: String {
        switch self {
        case .signedOut: "signedOut"
        case .signedIn(let userID): "signedIn(\(userID ?? "unknown user"))"
        case .loading: "loading"
        case .unavailable: "unavailable"
        case .expired(let userID): "expired(\(userID ?? "unknown user"))"
        }
    }
}
