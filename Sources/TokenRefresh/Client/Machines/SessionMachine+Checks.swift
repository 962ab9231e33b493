import AuthToken
import Foundation
import Persistence

/// The decisions of the launch check with the provider and of a sign-in whose grant failed.
extension SessionMachine {
    /// How the session is checked with the provider (``TokenRefreshClient/restoreSession(validatingWithProvider:)``,
    /// ``TokenRefreshClient/networkRestored()``).
    enum ProviderCheckAction: Sendable, Equatable {
        /// Ask with this request; `asksProvider` when an SDK owns the session (only it knows whether it still has
        /// one).
        case ask(Request, asksProvider: Bool)
        /// Get a valid token (refreshed if due).
        case validToken
        /// Nothing to check.
        case nothing
    }

    /// What a check with the provider does: a session check for strategies that check with the server (even while
    /// the credential looks fresh), a provider check for strategies without refresh tokens, a valid token for the
    /// others.
    func providerCheck(checksWithServer: Bool) -> ProviderCheckAction {
        switch (state, checksWithServer, requiresRefreshToken) {
        case (.active, true, _): .ask(.sessionCheck, asksProvider: false)
        case (_, _, false): .ask(.providerCheck, asksProvider: true)
        case (.active, false, true): .validToken
        case (.unloaded, _, true), (.signedOut, _, true): .nothing
        }
    }

    /// The check at launch (``TokenRefreshClient/restoreSession(validatingWithProvider:)``): none unless the app asked
    /// for it (`validating`) and the store has been read, else as ``providerCheck(checksWithServer:)``.
    func launchCheck(validating: Bool, checksWithServer: Bool) -> ProviderCheckAction {
        guard validating, loaded else { return .nothing }
        return providerCheck(checksWithServer: checksWithServer)
    }

    /// The check `check` ended with `outcome` at wall time `now`. The session is kept as it is (a rejection has ended
    /// it already), except that a provider that could not be reached over an expired token (or a server that was
    /// asked) leaves it reading `expired` (offline). An SDK that cannot be reached says nothing about a token that is
    /// still fresh.
    mutating func providerCheckEnded(_ outcome: Result<Void, any Error>, check: ProviderCheckAction, now: Date) {
        guard case .failure(let error as TokenRefreshError) = outcome, error.isConnectivityFailure, let session,
            check != .ask(.providerCheck, asksProvider: true)
                || session.token.isExpired(at: now, policy: configuration.expiryPolicy)
        else { return }
        authState = .expired(lastUserID: session.userID)
    }

    /// A sign-in with a grant starts: the state reads `loading` until it ends. Returns the state before (to settle on
    /// if the grant fails) and the epoch the sign-in started under.
    mutating func signInStarting() -> (previous: AuthState, epoch: UInt64) {
        let start = (previous: authState, epoch: epoch)
        authState = .loading
        return start
    }

    /// What the actor does once a sign-in's grant has answered.
    enum SignInGrantAction: Sendable {
        /// Start the session with this token, user ID and profile (``signingIn(_:userID:stateBefore:profile:)``).
        case startSession(AuthToken, userID: String?, profile: AuthUser?)
        /// Read the store if it never was, settle the state (``failedSignInSettled(previous:)``), then fail.
        case settleThenFail(TokenRefreshError)
        /// Fail; another sign-in or a sign-out came meanwhile and has set the state.
        case fail(TokenRefreshError)
    }

    /// The grant of a sign-in started under `epoch` answered with `outcome`, received at wall time `receivedAt`.
    /// The user ID is the app's (`userID`), else the response's, the token's subject, or the user the response
    /// describes.
    func grantAnswered(
        _ outcome: Result<TokenResponse, any Error>, userID: String?, receivedAt: Date, epoch: UInt64
    ) -> SignInGrantAction {
        switch outcome {
        case .success(let response):
            let token = response.token(receivedAt: receivedAt)
            let userID = Self.userID(userID, else: response.userID, token: token, response: response)
            return .startSession(token, userID: userID, profile: response.user)
        case .failure(let error):
            // A sign-in that is still the current one settles the state; another sign-in or a sign-out that came
            // meanwhile has set it.
            let failure = ErrorClassification.classify(error)
            return isCurrent(epoch) ? .settleThenFail(failure) : .fail(failure)
        }
    }

    /// The user ID of a session started with `token`: the app's (`userID`), else the token's subject.
    static func userID(_ userID: String?, token: AuthToken) -> String? { userID ?? token.claims?.subject }

    /// The user ID of the pair `response` answered with (`token`): `preferred`, else `fallback`, else the token's
    /// subject, else the user the response describes.
    static func userID(
        _ preferred: String?, else fallback: String?, token: AuthToken, response: TokenResponse
    ) -> String? {
        userID(preferred ?? fallback, token: token) ?? response.user?.id
    }

    /// A sign-in failed and the store has been read if it could be: the state says what is true
    /// (``stateAfterFailedSignIn(previous:)``); the sign-in then fails.
    mutating func failedSignInSettled(previous: AuthState) {
        authState = stateAfterFailedSignIn(previous: previous)
    }

    /// After a proactive refresh failed with `error`: the `current` token if it is still valid at `now` and the
    /// failure transient (or the breaker, or a store that could not be read before the refresh), else the error.
    static func stillValidToken(
        after error: any Error, current: () -> AuthToken?, now: () -> Date, policy: ExpiryPolicy
    ) -> Result<AuthToken, any Error> {
        guard let failure = error as? TokenRefreshError,
            failure.isTransient || failure == .rateLimited || failure == .storageUnavailable,
            let token = current(), !token.isExpired(at: now(), policy: policy)
        else { return .failure(error) }
        return .success(token)
    }

    /// After a failed sign-in, the state says what is true: the session that was there before (`previous`, or signed
    /// in when it read otherwise), `unavailable` when the store could not be read (the stored session may still be
    /// there, as at a launch over an unreadable store), or signed out when nothing is stored. Never `loading`.
    func stateAfterFailedSignIn(previous: AuthState) -> AuthState {
        switch (state, previous) {
        case (.active, .signedIn), (.active, .expired): previous
        case (.active(let session, _), _): .signedIn(userID: session.userID)
        case (.signedOut, _): .signedOut
        case (.unloaded, _): .unavailable
        }
    }
}

/// The decisions of a sign-out and of a session change over a store never read.
extension SessionMachine {
    /// A call that needs the stored session is starting: read the store if it never was.
    func loadStarting() -> Action { Action(store: loaded ? .none : .readAtLoad) }

    /// A sign-in or sign-out is starting: read the store first if it never was.
    func sessionChangeStarting() -> Action { Action(store: loaded ? .none : .readBeforeSessionChange) }

    /// The sign-out that ended the session under `epoch` may now write: remove what the account's store holds now (the
    /// sign-out is the app's, made now: a session another process stored that this one has not read yet goes too),
    /// unless a new session has begun here meanwhile (its save overwrites the ended one).
    func signOutWriteTurn(epoch: UInt64) -> Action { Action(store: isCurrent(epoch) ? .remove(.always) : .none) }

    /// The condition of a sign-out's removal made again later (its first attempt failed): the session known to be
    /// stored (the one that ended, or one ended before whose removal is still to be made) at any generation, so that
    /// the same session refreshed by another process goes and a session another process signed in since stays; when
    /// none is known stored (its save failed, or the store could not be read), the `ended` session's identity alike;
    /// whatever is stored only when neither is known (a store never read, and no session ended).
    func signOutRemoval(of ended: Session?) -> WriteCondition {
        inStore.map { .sessionAtAnyGeneration($0.sessionID) } ?? ended.map { .sessionAtAnyGeneration($0.sessionID) }
            ?? .always
    }

    /// What a sign-out revokes for the `ended` session (best effort): its refresh token with the revocation
    /// configured, or `nil` for nothing.
    func revocation(of ended: Session?) -> (refreshToken: String, revocation: TokenRevocation)? {
        guard let refreshToken = ended?.token.refreshToken, let revocation = configuration.revocation else {
            return nil
        }
        return (refreshToken, revocation)
    }
}
