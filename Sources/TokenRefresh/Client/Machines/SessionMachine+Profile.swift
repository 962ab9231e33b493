import AuthToken

/// The user and the session state the app sees, from what the lock-free snapshot holds.
extension SessionMachine {
    /// The user `token` and `profile` describe together, for the session of `userID`: a supplied profile's fields win
    /// over the claims', and a profile is used only for the session's own user.
    static func user(token: AuthToken, userID: String?, profile: AuthUser?) -> AuthUser? {
        // The claims' user has the session's ID (`userID`, else the subject); without one, the profile is all there is.
        guard var user = AuthUser(token: token, userID: userID) else { return profile }
        guard let profile, profile.id == user.id else { return user }
        let fields: [WritableKeyPath<AuthUser, String?>] = [
            \.firstName, \.lastName, \.name, \.email, \.imageURL, \.sessionID,
        ]
        for field in fields { user[keyPath: field] = profile[keyPath: field] ?? user[keyPath: field] }
        return user
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
            return .signedIn(user: currentUser(in: snapshot) ?? AuthUser(id: userID ?? ""))
        }
    }
}
