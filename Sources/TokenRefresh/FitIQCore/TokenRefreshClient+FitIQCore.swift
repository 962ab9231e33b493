package import AuthToken
import Foundation
import Logging

/// Where the app's own persistence keeps its pair, as ``TokenRefreshClient/tokenForRetry(rejecting:persistence:)``
/// reads and writes it (the compatibility module adapts the FitIQ apps' persistence protocol to it).
package struct AppPairStore: Sendable {
    /// Reads the stored refresh token.
    package let fetchRefreshToken: @Sendable () throws -> String?
    /// Reads the stored access token.
    package let fetchAccessToken: @Sendable () throws -> String?
    /// Saves a pair.
    package let save: @Sendable (_ accessToken: String, _ refreshToken: String) throws -> Void
    /// What to throw when no refresh token is stored.
    package let noRefreshToken: @Sendable () -> any Error

    /// Creates a pair store from the app's operations.
    package init(
        fetchRefreshToken: @escaping @Sendable () throws -> String?,
        fetchAccessToken: @escaping @Sendable () throws -> String?,
        save: @escaping @Sendable (_ accessToken: String, _ refreshToken: String) throws -> Void,
        noRefreshToken: @escaping @Sendable () -> any Error
    ) {
        self.fetchRefreshToken = fetchRefreshToken
        self.fetchAccessToken = fetchAccessToken
        self.save = save
        self.noRefreshToken = noRefreshToken
    }
}

extension TokenRefreshClient {
    /// The token to retry with after a request carrying `rejected` got a 401, saved in `persistence` first.
    ///
    /// Concurrent callers share one refresh (this client's single flight). A request that carried an older token
    /// of the same session than the one saved meanwhile is retried with the saved one, without refreshing again;
    /// one that carried a token of another session (the app signed out, or signed another user in, while it was
    /// under way) fails with ``TokenRefreshError/sessionChanged`` and is not retried. When the app signed in anew
    /// through its own code (the stored pair is one this client never held), the client makes that pair its
    /// session before refreshing it, so the answer is always the stored pair's user.
    ///
    /// - Parameters:
    ///   - rejected: The access token the rejected request carried, if any.
    ///   - persistence: The app's persistence.
    /// - Returns: The token to retry with.
    /// - Throws: `persistence.noRefreshToken()` when no refresh token is stored; ``TokenRefreshError/sessionChanged`` (also
    ///   when the app's persistence no longer holds the refresh token the refresh started from: nothing is saved);
    ///   the refresh's error.
    package nonisolated func tokenForRetry(
        rejecting rejected: String?, persistence: AppPairStore
    ) async throws -> AuthToken {
        // The refresh token first, then the access token: a pair saved between the two reads shows in the second.
        guard let storedRefresh = try persistence.fetchRefreshToken(), !storedRefresh.isEmpty else {
            throw persistence.noRefreshToken()
        }
        let storedAccess = try persistence.fetchAccessToken()
        if let rejected, let storedAccess, !storedAccess.isEmpty, storedAccess != rejected {
            // The pair changed since the request was built. A stale rejection only if both tokens are this session's
            // (another caller refreshed and saved); otherwise the app switched sessions while it was under way.
            guard await sessionHolds(accessTokens: rejected, storedAccess) else {
                throw TokenRefreshError.sessionChanged
            }
            // Only the access token is used (for the retry's header), so its claims are not parsed.
            return AuthToken(accessToken: storedAccess, refreshToken: storedRefresh, receivedAt: now())
        }
        let token = try await refreshForRetry(
            rejected: rejected, storedAccess: storedAccess, storedRefresh: storedRefresh)
        // The refresh took a while: if the app logged out, or logged another user in, through its own code meanwhile,
        // its persistence no longer holds the refresh token this refresh started from, and the answer is neither
        // saved over what is there now nor used for the retry. A pair of this session that another caller of the same
        // refresh saved first is kept as it is.
        let refreshToSave = token.refreshToken ?? storedRefresh
        switch try persistence.fetchRefreshToken() {
        case storedRefresh:
            try persistence.save(token.accessToken, refreshToSave)
        case .some(let current) where current == refreshToSave:
            break
        case .some(let current) where await sessionHolds(refreshToken: current):
            break
        default:
            logger.debug(
                "the app's stored pair changed during the refresh; not saved",
                metadata: ["token": "\(token.fingerprint)"])
            throw TokenRefreshError.sessionChanged
        }
        return token
    }

    /// Whether every one of `accessTokens` is a token of the session held now.
    func sessionHolds(accessTokens: String...) async -> Bool {
        try? await ensureLoaded()
        guard session != nil else { return false }
        return accessTokens.allSatisfy { machine.lineage.contains(accessToken: $0) }
    }

    /// Whether the session held now has held `refreshToken` (this one or an earlier pair of it).
    func sessionHolds(refreshToken: String) -> Bool {
        session != nil && machine.lineage.contains(refreshToken: refreshToken)
    }

    /// The refresh behind ``tokenForRetry(rejecting:persistence:)`` for the pair the app's persistence holds.
    func refreshForRetry(rejected: String?, storedAccess: String?, storedRefresh: String) async throws -> AuthToken {
        try await ensureLoaded()
        if machine.rejected.contains(storedRefresh) { throw TokenRefreshError.refreshTokenRejected }
        if let session, session.token.refreshToken != storedRefresh,
            !machine.lineage.contains(refreshToken: storedRefresh)
        {
            // The app signed in anew through its own code: its persistence holds a pair this client never held, and
            // that pair is the session now. Runs on the actor, and the session is replaced before the first
            // suspension, so concurrent callers adopt it once; a refresh in flight for the old session fails.
            let token = AuthToken.withParsedExpiration(
                accessToken: storedAccess ?? rejected ?? "", refreshToken: storedRefresh)
            logger.debug("adopting a pair the app stored", metadata: ["token": "\(token.fingerprint)"])
            _ = try await startSession(token, userID: token.claims?.subject, previousState: state)
        }
        if session != nil, let rejected { return try await refreshToken(afterRejectionOf: rejected) }
        switch try await prepare(.seed(storedRefresh), pairedAccessToken: rejected ?? storedAccess) {
        case .token(let token): return token
        case .wait(let flight): return try await flight.wait()
        }
    }
}
