import AuthToken
import Foundation

/// The FitIQ apps' retry after a 401 (``TokenRefreshClient/tokenForRetry(rejecting:persistence:)``), whose pair the
/// app's own persistence keeps: the machine decides, the actor carries out the answer.
extension SessionMachine {
    /// What the app's persistence holds when a request it authorized got a 401.
    struct AppPair: Sendable, Equatable {
        /// The access token the rejected request carried, if any.
        var rejected: String?
        /// The access token stored now.
        var access: String?
        /// The refresh token stored now (never empty).
        var refresh: String
    }

    /// What the actor does for the app's retry.
    indirect enum AppPairAction: Sendable {
        /// Retry with this token.
        case token(AuthToken)
        /// Fail with this error.
        case fail(TokenRefreshError)
        /// Make this pair, which the app stored by itself, the session (at once, before the actor suspends), then
        /// carry out `then`.
        case adopt(AuthToken, then: AppPairAction)
        /// Refresh for `request`, then ask ``appPairRefreshed(_:from:storedNow:)``.
        case refresh(Request, pairedAccessToken: String?)
        /// Save the token with this refresh token in the app's persistence, then retry with it.
        case save(AuthToken, refreshToken: String)
    }

    /// The app's retry asks for a token for `pair`, once the store has been read (`loadFailure`: why it could not
    /// be). A pair changed since the request was built is a stale rejection only when both access tokens are this
    /// session's (another caller refreshed and saved); otherwise the app switched sessions meanwhile. A refresh token
    /// rejected before is never sent; a pair the app stored itself (one this session never held) becomes the
    /// session before it is refreshed.
    func appPairAsked(_ pair: AppPair, loadFailure: TokenRefreshError?, now: Date) -> AppPairAction {
        if let rejected = pair.rejected, let access = pair.access, !access.isEmpty, access != rejected {
            guard session != nil, lineage.contains(accessToken: rejected), lineage.contains(accessToken: access) else {
                return .fail(.sessionChanged)
            }
            // Only the access token is used (for the retry's header), so its claims are not parsed.
            return .token(AuthToken(accessToken: access, refreshToken: pair.refresh, receivedAt: now))
        }
        if let loadFailure { return .fail(loadFailure) }
        guard !rejected.contains(pair.refresh) else { return .fail(.refreshTokenRejected) }
        // A rejection is refreshed as one while a session is held; otherwise the pair's refresh token is the seed, and
        // the access token the app held with it counts as the new session's (only a seed's refresh uses it).
        let request: Request =
            if let rejected = pair.rejected, session != nil { .afterRejection(of: rejected) } else {
                .seed(pair.refresh)
            }
        let refresh = AppPairAction.refresh(request, pairedAccessToken: pair.rejected ?? pair.access)
        guard let held = session, held.token.refreshToken != pair.refresh, !lineage.contains(refreshToken: pair.refresh)
        else { return refresh }
        // The app signed in anew through its own code: the pair it stored becomes the session, before the actor
        // suspends, so concurrent callers adopt it once; a refresh in flight for the old session fails.
        let stored = AuthToken.withParsedExpiration(
            accessToken: pair.access ?? pair.rejected ?? "", refreshToken: pair.refresh)
        return .adopt(stored, then: refresh)
    }

    /// The refresh for `pair` answered `token`, and the app's persistence holds `storedNow` as its refresh token: save
    /// over the pair the refresh started from; keep a pair of this session another caller saved first; and use nothing
    /// once the app signed out or signed another user in meanwhile.
    func appPairRefreshed(_ token: AuthToken, from pair: AppPair, storedNow: String?) -> AppPairAction {
        let refreshToSave = token.refreshToken ?? pair.refresh
        switch storedNow {
        case pair.refresh:
            return .save(token, refreshToken: refreshToSave)
        case .some(let current)
        where current == refreshToSave || (session != nil && lineage.contains(refreshToken: current)):
            return .token(token)
        default:
            return .fail(.sessionChanged)
        }
    }
}
