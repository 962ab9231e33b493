public import Foundation

extension BearerAuthenticator {
    /// A backend that verifies the Bearer JWTs its clients send against a provider's JWKS (Clerk, Auth0, Keycloak):
    /// the verifier, its remote key source and the authenticator in one call.
    ///
    /// ```swift
    /// let authenticator = BearerAuthenticator.jwks(
    ///     URL(string: "https://clerk.example.com/.well-known/jwks.json")!, issuer: "https://clerk.example.com",
    ///     audience: .notChecked(reason: "Clerk session tokens carry no aud; azp is checked"),
    ///     allowedParties: ["https://app.example.com"])
    /// let outcome = await authenticator.authenticate(authorization: request.headerFields[.authorization])
    /// ```
    ///
    /// Keys are fetched over URLSession (<doc:KeySetFetchingRules>); for other options, build the verifier yourself.
    ///
    /// - Parameters:
    ///   - jwksURL: The provider's JWKS document.
    ///   - issuer: The exact `iss` the tokens must carry.
    ///   - audience: Whether `aud` is checked: ``TokenVerifier/AudienceRule/oneOf(_:)`` or
    ///     ``TokenVerifier/AudienceRule/notChecked(reason:)``.
    ///   - allowedParties: Accepted `azp` values (Clerk's frontend origins), or `nil`.
    ///   - algorithms: Accepted algorithms. By default every asymmetric one (``JWSAlgorithm/asymmetric``), each
    ///     token checked against its key: a key whose `alg` names an algorithm verifies that one only, and a key
    ///     without `alg` the algorithms of its type (an RSA key RS256 to PS512, a P-256 key ES256). So a provider's
    ///     key set decides, and HMAC is never accepted. Name algorithms here to accept fewer.
    /// - Returns: The authenticator.
    public static func jwks(
        _ jwksURL: URL, issuer: String, audience: TokenVerifier.AudienceRule, allowedParties: Set<String>? = nil,
        algorithms: Set<JWSAlgorithm> = JWSAlgorithm.asymmetric
    ) -> BearerAuthenticator {
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: issuer, audience: audience, algorithms: algorithms, allowedParties: allowedParties),
            keySource: RemoteJWKSSource(jwksURL: jwksURL))
        return BearerAuthenticator(verifier: verifier)
    }
}
