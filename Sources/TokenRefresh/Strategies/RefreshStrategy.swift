/// How a session gets a new access token: the one network call a ``TokenRefreshClient`` shares among
/// all its callers.
///
/// TokenKit ships the OAuth 2.0 `refresh_token` grant (``OAuthRefreshStrategy``), the FitIQ-style JSON
/// endpoint (``JSONEndpointRefreshStrategy``), the client-credentials grant (``ClientCredentialsStrategy``)
/// and a closure (``ClosureRefreshStrategy``). A strategy throws a classified ``TokenRefreshError``: the
/// client ends the session on ``TokenRefreshError/refreshTokenRejected``, keeps it on a transient error,
/// and wipes nothing on ``TokenRefreshError/configuration``. Any other error counts as transient.
///
/// A complete small conformance, for a server that hands out tokens from its own SDK:
///
/// ```swift
/// struct SDKStrategy: RefreshStrategy {
///     let sdk: MySDK
///     var requiresRefreshToken: Bool { false }
///     func refresh(using refreshToken: String?) async throws -> TokenResponse {
///         TokenResponse(accessToken: try await sdk.currentToken(), expiresIn: 60)
///     }
/// }
/// ```
public protocol RefreshStrategy: Sendable {
    /// Whether a refresh needs the session's refresh token. `true` by default; client credentials and
    /// closures that ask an SDK do not.
    var requiresRefreshToken: Bool { get }

    /// Asks for a new token.
    ///
    /// - Parameter refreshToken: The session's refresh token, if it has one.
    /// - Returns: The token response. A `nil` ``TokenResponse/refreshToken`` keeps the old one.
    /// - Throws: A ``TokenRefreshError`` saying what went wrong; other errors count as transient.
    func refresh(using refreshToken: String?) async throws -> TokenResponse

    /// Asks for a new token, saying whether the server rejected the current one.
    ///
    /// A strategy over an SDK that caches tokens skips its cache when `forced` is `true` (a 401 said the
    /// cached token is no good). The default calls ``refresh(using:)``.
    ///
    /// - Parameters:
    ///   - refreshToken: The session's refresh token, if it has one.
    ///   - forced: Whether this refresh follows a rejection of the current access token by the server.
    /// - Returns: The token response.
    /// - Throws: As ``refresh(using:)``.
    func refresh(using refreshToken: String?, forced: Bool) async throws -> TokenResponse

    /// Whether a refresh is a check of the session with the server (a cookie session), so that validating a
    /// session at launch runs it even while the credential looks fresh. `false` by default.
    var checksSessionWithServer: Bool { get }

    /// Whether a refresh that is not forced may be answered from a cache the strategy keeps, without a request to a
    /// server (an SDK that caches its tokens). Such calls do not count against the client's rate breaker
    /// (``TokenRefreshClient/Configuration/maximumRefreshes``), which counts refresh requests sent to a server.
    /// `false` by default; ``SDKTokenStrategy`` says `true`.
    var mayAnswerFromCache: Bool { get }
}

extension RefreshStrategy {
    /// A refresh needs the refresh token, unless a strategy says otherwise.
    public var requiresRefreshToken: Bool { true }

    /// `false`: a refresh gets a new token; validating at launch refreshes only when one is due.
    public var checksSessionWithServer: Bool { false }

    /// `false`: every refresh sends a request to a server, and the rate breaker counts it.
    public var mayAnswerFromCache: Bool { false }

    /// Calls ``refresh(using:)``: most strategies refresh the same way whatever the reason.
    ///
    /// - Parameters:
    ///   - refreshToken: The session's refresh token, if it has one.
    ///   - forced: Ignored.
    /// - Returns: What ``refresh(using:)`` returns.
    /// - Throws: What ``refresh(using:)`` throws.
    public func refresh(using refreshToken: String?, forced: Bool) async throws -> TokenResponse {
        try await refresh(using: refreshToken)
    }
}
