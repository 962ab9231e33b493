import AuthToken
import Foundation

extension TokenRefreshClient {
    /// The signed-in user, from the current token's claims and the session's user ID, completed by the profile
    /// the token provider or the app supplied (``setProfile(_:)``); `nil` without a session.
    ///
    /// A supplied profile's fields win over the claims'; the session ID comes from the token (`sid`) unless the
    /// profile has one. A profile is used only for the session's own user.
    public nonisolated var currentUser: AuthUser? {
        SessionMachine.currentUser(in: snapshot.withLock { $0 })
    }

    /// Supplies the signed-in user's profile (name, e-mail, image) when the token's claims lack it, as Clerk's
    /// default session token does: from the SDK's user object, or from an OpenID Connect ID token
    /// (``AuthUser/init(idToken:)``). ``currentUser`` and ``sessionStates()`` then carry it.
    ///
    /// ```swift
    /// if let user = clerk.user {
    ///     await auth.setProfile(AuthUser(id: user.id, firstName: user.firstName, lastName: user.lastName))
    /// }
    /// ```
    ///
    /// The profile lasts as long as the session, in memory: a new session or a sign-out drops it, and a token
    /// provider that supplies profiles (``SDKTokenStrategy``'s `user`) replaces it at each refresh.
    ///
    /// - Parameter profile: The user's profile; its ``AuthUser/id`` must be the session's user.
    /// - Returns: Whether it was taken: `false` without a session, or for another user.
    @discardableResult
    public func setProfile(_ profile: AuthUser) -> Bool {
        machine.profileSupplied(profile)
    }

    /// The session as a root view switches over it, signed out or signed in with the user, then every change
    /// (a sign-in, a sign-out, another user, a new profile):
    ///
    /// ```swift
    /// for await state in auth.sessionStates() {
    ///     switch state {
    ///     case .signedOut: await scheduler.cancelAllPersonalizedNotifications()
    ///     case .signedIn(let user): try? await scheduler.scheduleDailyNotifications(firstName: user.firstName ?? "Friend")
    ///     }
    /// }
    /// ```
    ///
    /// Each call returns its own stream. The first element is the current state once the stored session has been
    /// read (``restoreSession(validatingWithProvider:)``); equal consecutive states are sent once; a session kept
    /// while offline with an expired token reads `signedIn`. The stream ends when the client goes away. Use
    /// ``states()`` for `loading` and `expired`.
    ///
    /// - Returns: The stream; it buffers the newest 64 states for a slow reader.
    public nonisolated func sessionStates() -> AsyncStream<AuthSessionState> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: AuthSessionState.self, bufferingPolicy: .bufferingNewest(64))
        let id = sessionStateSubscribers.withLock { $0.subscribe(continuation) }
        continuation.onTermination = { [weak self] _ in
            _ = self?.sessionStateSubscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends the session state `snapshot` shows to the ``sessionStates()`` subscribers, if it differs from the
    /// last one sent (nothing while loading, nor while the store cannot be read).
    nonisolated func publishSessionState(_ snapshot: Snapshot) {
        let state = SessionMachine.sessionState(of: snapshot)
        sessionStateSubscribers.withLock { $0.send(state) }
    }
}
