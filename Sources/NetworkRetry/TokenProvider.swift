public import AuthToken

/// Hands out access tokens to ``HTTPTransport`` users and refreshes after a rejection.
///
/// `TokenRefresh`'s `TokenRefreshClient` conforms; NetworkRetry never imports TokenRefresh. A conformance
/// must share one refresh among concurrent callers.
///
/// A complete small conformance, for a token that never changes:
///
/// ```swift
/// struct FixedTokenProvider: TokenProvider {
///     let token: AuthToken
///     func validToken() async throws -> AuthToken { token }
///     func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken { token }
/// }
/// ```
public protocol TokenProvider: Sendable {
    /// Returns a token that is valid now, refreshing ahead of expiry when needed.
    ///
    /// - Returns: The current access token.
    /// - Throws: When no valid token can be had (signed out, refresh failed).
    func validToken() async throws -> AuthToken

    /// Returns a token to retry with after the server rejected `accessToken`.
    ///
    /// If the current token is already newer than the rejected one (another caller refreshed meanwhile),
    /// return it without a network call; otherwise refresh once, shared with every concurrent caller.
    ///
    /// - Parameter accessToken: The access token the server rejected.
    /// - Returns: A token to retry with.
    /// - Throws: When the refresh fails.
    func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken

    /// Told when the server rejected `accessToken` although it came from a refresh made for that very
    /// request: a refresh does not cure this session. The default does nothing.
    ///
    /// - Parameters:
    ///   - accessToken: The access token the server rejected after the refresh.
    ///   - endSession: Whether the app asked to end the session in this case
    ///     (``AuthenticatedClient/Configuration/endsSessionWhenRefreshDoesNotHelp``).
    func sessionRejected(afterRefreshOf accessToken: String, endSession: Bool) async
}

extension TokenProvider {
    /// Does nothing: a provider without a session to end ignores the news.
    ///
    /// - Parameters:
    ///   - accessToken: The rejected access token.
    ///   - endSession: Whether the app asked to end the session.
    public func sessionRejected(afterRefreshOf accessToken: String, endSession: Bool) async {}
}
