public import Foundation

/// The OAuth 2.0 `refresh_token` grant (RFC 6749 section 6): a form-encoded POST to the token endpoint
/// with the refresh token, client authentication by HTTP Basic or in the body, an optional scope, and an
/// optional resource (RFC 8707) or audience for servers that hand out one access token per API.
public struct OAuthRefreshStrategy: RefreshStrategy {
    /// The token endpoint.
    package let endpoint: TokenEndpoint
    /// The scope to ask for; `nil` keeps the scope already granted.
    package let scope: String?
    /// The API the access token is for, sent as `resource` (RFC 8707); `nil` sends none.
    package let resource: URL?
    /// The API the access token is for, sent as `audience` (servers such as Auth0); `nil` sends none.
    package let audience: String?

    /// Creates the strategy.
    ///
    /// For an access token per API from one refresh token (one client per API sharing one session), give each
    /// API's strategy its own `resource` (RFC 8707 resource indicators) or `audience` (Auth0's multi-resource
    /// refresh tokens), and its scope.
    ///
    /// - Parameters:
    ///   - endpoint: The token endpoint.
    ///   - scope: The scope to ask for, if narrower than the granted one.
    ///   - resource: The API the access token is for, as an absolute URI without a fragment (RFC 8707 section 2).
    ///   - audience: The API identifier the access token is for, for servers that take `audience` instead.
    public init(endpoint: TokenEndpoint, scope: String? = nil, resource: URL? = nil, audience: String? = nil) {
        self.endpoint = endpoint
        self.scope = scope
        self.resource = resource
        self.audience = audience
    }

    /// Sends `grant_type=refresh_token`.
    ///
    /// - Parameter refreshToken: The refresh token.
    /// - Returns: The token response.
    /// - Throws: ``TokenRefreshError/missingRefreshToken`` without a refresh token;
    ///   ``TokenRefreshError/invalidArgument`` for a resource that is not an absolute URI or has a fragment;
    ///   otherwise the classified answer of the endpoint.
    public func refresh(using refreshToken: String?) async throws -> TokenResponse {
        guard let refreshToken, !refreshToken.isEmpty else { throw TokenRefreshError.missingRefreshToken }
        var parameters = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
        if let scope { parameters.append(("scope", scope)) }
        if let resource {
            // RFC 8707 section 2: an absolute URI, without a fragment.
            guard resource.scheme != nil, resource.fragment == nil else { throw TokenRefreshError.invalidArgument }
            parameters.append(("resource", resource.absoluteString))
        }
        if let audience { parameters.append(("audience", audience)) }
        return try await endpoint.requestToken(parameters)
    }
}
