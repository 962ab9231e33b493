/// The client-credentials grant (RFC 6749 section 4.4), for backends: there is no refresh token, so a
/// "refresh" asks for a new token with the client's own credentials.
public struct ClientCredentialsStrategy: RefreshStrategy {
    /// The token endpoint; its client must be confidential.
    package let endpoint: TokenEndpoint
    /// The scope to ask for, if any.
    package let scope: String?

    /// Creates the strategy.
    ///
    /// - Parameters:
    ///   - endpoint: The token endpoint, with the client's secret.
    ///   - scope: The scope to ask for.
    public init(endpoint: TokenEndpoint, scope: String? = nil) {
        self.endpoint = endpoint
        self.scope = scope
    }

    /// No refresh token is involved.
    public var requiresRefreshToken: Bool { false }

    /// Sends `grant_type=client_credentials`.
    ///
    /// - Parameter refreshToken: Ignored.
    /// - Returns: The token response.
    /// - Throws: The classified answer of the endpoint.
    public func refresh(using refreshToken: String?) async throws -> TokenResponse {
        var parameters = [("grant_type", "client_credentials")]
        if let scope { parameters.append(("scope", scope)) }
        return try await endpoint.requestToken(parameters)
    }
}
