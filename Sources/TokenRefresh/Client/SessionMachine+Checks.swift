import AuthToken
import Foundation

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
        if checksWithServer, session != nil { return .ask(.sessionCheck, asksProvider: false) }
        if !requiresRefreshToken { return .ask(.providerCheck, asksProvider: true) }
        return session == nil ? .nothing : .validToken
    }

    /// What follows a check that failed.
    enum ProviderCheckFailureAction: Sendable, Equatable {
        /// The session is kept as it is (a rejection has ended it already).
        case kept
        /// The provider could not be reached and the token has expired (or the server was asked): the session reads
        /// `expired` (offline).
        case keptExpired
    }

    /// The check `check` failed with `error` at wall time `now`. An SDK that cannot be reached says nothing about a
    /// token that is still fresh.
    @discardableResult
    mutating func providerCheckFailed(
        _ error: any Error, check: ProviderCheckAction, now: Date
    ) -> ProviderCheckFailureAction {
        guard let error = error as? TokenRefreshError, error.isConnectivityFailure, let session else { return .kept }
        let asksProvider = check == .ask(.providerCheck, asksProvider: true)
        guard !asksProvider || session.token.isExpired(at: now, policy: configuration.expiryPolicy) else {
            return .kept
        }
        setState(.expired(lastUserID: session.userID))
        return .keptExpired
    }

    /// What the actor does after a sign-in's grant failed.
    enum SignInFailureAction: Sendable, Equatable {
        /// Read the store if it never was, then settle the state (``stateAfterFailedSignIn(previous:)``).
        case settle
        /// Another sign-in or a sign-out came meanwhile: it has set the state.
        case leave
    }

    /// The grant of a sign-in started under `epoch` failed.
    func signInFailed(epoch: UInt64) -> SignInFailureAction {
        isCurrent(epoch) ? .settle : .leave
    }

    /// After a failed sign-in, the state says what is true: the session that was there before (`previous`, or signed
    /// in when it read otherwise), or signed out when nothing usable is held (the store may be unreadable). Never
    /// `loading`.
    func stateAfterFailedSignIn(previous: AuthState) -> AuthState {
        guard let session else { return .signedOut }
        switch previous {
        case .signedIn, .expired: return previous
        default: return .signedIn(userID: session.userID)
        }
    }
}
