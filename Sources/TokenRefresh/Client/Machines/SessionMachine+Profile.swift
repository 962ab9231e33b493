import AuthToken

/// The user and the session state the app sees, from what the lock-free snapshot holds.
extension SessionMachine {
    /// The user `token` and `profile` describe together, for the session of `userID`: a supplied profile's fields win
    /// over the claims', and a profile is used only for the session's own user.
    static func user(token: AuthToken, userID: String?, profile: AuthUser?) -> AuthUser? {
        let claimed = AuthUser(token: token, userID: userID)
        guard let profile, profile.id == (userID ?? claimed?.id ?? profile.id) else { return claimed }
        guard let claimed else { return profile }
        return AuthUser(
            id: claimed.id, firstName: profile.firstName ?? claimed.firstName,
            lastName: profile.lastName ?? claimed.lastName, name: profile.name ?? claimed.name,
            email: profile.email ?? claimed.email, imageURL: profile.imageURL ?? claimed.imageURL,
            sessionID: profile.sessionID ?? claimed.sessionID)
    }

    /// The signed-in user `snapshot` shows, or `nil` without a session.
    static func currentUser(in snapshot: TokenRefreshClient.Snapshot) -> AuthUser? {
        guard let token = snapshot.token else { return nil }
        switch snapshot.state {
        case .signedIn(let userID), .expired(let userID):
            return user(token: token, userID: userID, profile: snapshot.profile)
        case .signedOut, .loading, .unavailable:
            return nil
        }
    }

    /// The session state `snapshot` shows to ``TokenRefreshClient/sessionStates()``: `nil` while loading, and while
    /// the store cannot be read.
    static func sessionState(of snapshot: TokenRefreshClient.Snapshot) -> AuthSessionState? {
        switch snapshot.state {
        case .loading, .unavailable: return nil
        case .signedOut: return .signedOut
        case .signedIn(let userID), .expired(let userID):
            let user = snapshot.token.flatMap { Self.user(token: $0, userID: userID, profile: snapshot.profile) }
            return .signedIn(user: user ?? AuthUser(id: userID ?? ""))
        }
    }
}
