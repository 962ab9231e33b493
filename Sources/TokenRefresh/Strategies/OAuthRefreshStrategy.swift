/// The OAuth 2.0 `refresh_token` grant (RFC 6749 section 6): a form-encoded POST to the token endpoint
/// with the refresh token, client authentication by HTTP Basic or in the body, and an optional scope.
public struct OAuthRefreshStrategy: RefreshStrategy {
    /// The token endpoint.
    package let endpoint: TokenEndpoint
    /// The scope to ask for; `nil` keeps the scope already granted.
    package let scope: String?

    /// Creates the strategy.
    ///
    /// - Parameters:
    ///   - endpoint: The token endpoint.
    ///   - scope: The scope to ask for, if narrower than the granted one.
    public init(endpoint: TokenEndpoint, scope: String? = nil) {
        self.endpoint = endpoint
        self.scope = scope
    }

    /// Sends `grant_type=refresh_token`.
    ///
    /// - Parameter refreshToken: The refresh token.
    /// - Returns: The token response.
    /// - Throws: ``TokenRefreshError/missingRefreshToken`` without a refresh token; otherwise the classified
    ///   answer of the endpoint.
    public func refresh(using refreshToken: String?) async throws -> TokenResponse {
        guard let refreshToken, !refreshToken.isEmpty else { throw TokenRefreshError.missingRefreshToken }
        var parameters = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
        if let scope { parameters.append(("scope", scope)) }
        return try await endpoint.requestToken(parameters)
    }
}
