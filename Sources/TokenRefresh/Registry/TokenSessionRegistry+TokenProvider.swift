package import AuthToken
public import NetworkRetry

extension TokenSessionRegistry {
    /// One account's ``/NetworkRetry/TokenProvider``, for an `AuthenticatedClient` that sends that user's requests
    /// (``TokenSessionRegistry/tokenProvider(for:)``).
    ///
    /// It holds the registry and the account, not a client: every call goes through the registry, so the account's
    /// callers share one refresh whichever provider or registry call they came through, and a client evicted while
    /// idle is replaced by a new one that reads the stored pair.
    package struct AccountTokenProvider: TokenProvider {
        /// The registry.
        package let registry: TokenSessionRegistry
        /// The account key.
        package let account: String

        /// A valid access token for the account (``TokenSessionRegistry/validToken(for:)``).
        ///
        /// - Returns: A token that is not about to expire.
        /// - Throws: What the account's client throws (``TokenRefreshError``).
        package func validToken() async throws -> AuthToken {
            try await registry.validToken(for: account)
        }

        /// A token to retry with after the server rejected `accessToken`
        /// (the registry's `refreshToken(afterRejectionOf:for:)`).
        ///
        /// - Parameter accessToken: The access token the server rejected.
        /// - Returns: The token to retry with.
        /// - Throws: What the account's client throws (``TokenRefreshError``).
        package func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken {
            try await registry.refreshToken(afterRejectionOf: accessToken, for: account)
        }

        /// Tells the account's client that a refresh did not cure a rejection
        /// (``TokenRefreshClient/sessionRejected(afterRefreshOf:endSession:)``).
        ///
        /// - Parameters:
        ///   - accessToken: The access token the server rejected after the refresh.
        ///   - endSession: Whether to end the account's session.
        package func sessionRejected(afterRefreshOf accessToken: String, endSession: Bool) async {
            await registry.client(for: account).sessionRejected(afterRefreshOf: accessToken, endSession: endSession)
        }
    }

    /// The ``/NetworkRetry/TokenProvider`` of `account`, for an `AuthenticatedClient` that sends that user's requests:
    ///
    /// ```swift
    /// let api = AuthenticatedClient(
    ///     transport: transport, tokenProvider: registry.tokenProvider(for: userID), configuration: configuration)
    /// ```
    ///
    /// - Parameter account: The account key.
    /// - Returns: The provider; it makes no client until it is first asked for a token.
    public func tokenProvider(for account: String) -> any TokenProvider {
        AccountTokenProvider(registry: self, account: account)
    }
}
