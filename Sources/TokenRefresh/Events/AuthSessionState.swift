/// The session as an app's root view switches over it: signed out, or signed in with the user and their profile
/// (CommuteTimely's `AuthSessionState`), from ``TokenRefreshClient/sessionStates()``.
///
/// ```swift
/// for await state in auth.sessionStates() {
///     switch state {
///     case .signedOut: showLanding()
///     case .signedIn(let user): greet(user.firstName ?? "Friend")
///     }
/// }
/// ```
///
/// There is no `loading`: the stream starts once the stored session has been read. A session whose token expired
/// while offline is kept, so it reads `signedIn`; ``AuthState`` tells it apart as `expired`.
public enum AuthSessionState: Sendable, Hashable, CustomStringConvertible {
    /// No session.
    case signedOut
    /// A session for `user`, with the profile the token provider or the app supplied (see
    /// ``TokenRefreshClient/currentUser``). Its ``AuthUser/id`` is empty when neither the token nor the sign-in
    /// named the user (an opaque token).
    case signedIn(user: AuthUser)

    /// `signedIn(<user>)` or `signedOut`; names and e-mail are left out.
    public var description: String {
        switch self {
        case .signedOut: "signedOut"
        case .signedIn(let user): "signedIn(\(user))"
        }
    }
}
