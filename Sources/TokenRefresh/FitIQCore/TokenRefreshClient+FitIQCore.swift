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
        let pair = SessionMachine.AppPair(
            rejected: rejected, access: try persistence.fetchAccessToken(), refresh: storedRefresh)
        var action = await appPairAsked(pair)
        while true {
            switch action {
            case .token(let token):
                return token
            case .fail(let error):
                logger.debug("no token for the app's retry", metadata: ["error": "\(error)"])
                throw error
            case .adopt:
                action = .fail(.sessionChanged)  // carried out by appPairAsked(_:), on the actor
            case .refresh(let request, let pairedAccessToken):
                // The refresh took a while: the app may have signed out, or signed another user in, through its own
                // code meanwhile (see SessionMachine.appPairRefreshed(_:from:storedNow:)).
                let token = try await prepare(request, pairedAccessToken: pairedAccessToken).token()
                let storedNow = try persistence.fetchRefreshToken()
                action = await appPairRefreshed(token, from: pair, storedNow: storedNow)
            case .save(let token, let refreshToken):
                try persistence.save(token.accessToken, refreshToken)
                return token
            }
        }
    }

    /// Reads the store if needed, and asks the machine about the app's `pair`; a pair the app stored by itself is
    /// made the session here, before the actor suspends.
    func appPairAsked(_ pair: SessionMachine.AppPair) async -> SessionMachine.AppPairAction {
        let loading = await Result.of { () async throws(TokenRefreshError) in try await ensureLoaded() }
        let action = machine.appPairAsked(pair, loadFailure: loading.failure, now: now())
        switch action {
        case .adopt(let token, let next):
            logger.debug("adopting a pair the app stored", metadata: ["token": "\(token.fingerprint)"])
            let adopted = await Result.of { () async throws(TokenRefreshError) in
                try await startSession(token, userID: token.claims?.subject, previousState: state)
            }
            switch adopted {
            case .success: return next
            case .failure(let error): return .fail(error)
            }
        case .token, .fail, .refresh, .save:
            return action
        }
    }

    /// The machine's answer once the refresh for the app's `pair` answered `token` (see
    /// ``SessionMachine/appPairRefreshed(_:from:storedNow:)``).
    func appPairRefreshed(
        _ token: AuthToken, from pair: SessionMachine.AppPair, storedNow: String?
    ) -> SessionMachine.AppPairAction {
        machine.appPairRefreshed(token, from: pair, storedNow: storedNow)
    }
}
