public import Foundation

extension BearerAuthenticator {
    /// A backend whose clients send opaque access tokens: each token is checked with the issuer's RFC 7662
    /// introspection endpoint (answers cached within bounds), and the outcome is the same as for JWTs.
    ///
    /// ```swift
    /// let authenticator = BearerAuthenticator.introspection(
    ///     URL(string: "https://auth.example.com/o/introspect/")!,
    ///     client: .clientSecretBasic(id: "orders-api", secret: "from your secret store"),
    ///     audience: .notChecked(reason: "the server binds no audience to its tokens"), subjectMember: "username")
    /// ```
    ///
    /// An inactive token is a 401; an endpoint that cannot answer is a 503. For other options, build an
    /// ``IntrospectionVerifier`` and use ``init(introspection:)``.
    ///
    /// - Parameters:
    ///   - endpoint: The introspection endpoint.
    ///   - client: How this server authenticates to it.
    ///   - audience: Whether the answer's `aud` is checked.
    ///   - issuer: The required `iss` of the answer, or `nil`.
    ///   - subjectMember: The member that names the user: `sub` by default, `username` for django-oauth-toolkit.
    /// - Returns: The authenticator.
    public static func introspection(
        _ endpoint: URL, client: IntrospectionVerifier.ClientAuthentication, audience: TokenVerifier.AudienceRule,
        issuer: String? = nil, subjectMember: String = "sub"
    ) -> BearerAuthenticator {
        BearerAuthenticator(
            introspection: IntrospectionVerifier(
                configuration: .init(
                    endpoint: endpoint, clientAuthentication: client, audience: audience, issuer: issuer,
                    subjectMember: subjectMember)))
    }
}
