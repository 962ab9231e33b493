public import Foundation

extension BearerAuthenticator {
    /// A backend that verifies the Bearer JWTs its clients send against a provider's JWKS (Clerk, Auth0, Keycloak):
    /// the verifier, its remote key source and the authenticator in one call, with keys fetched over URLSession
    /// (<doc:KeySetFetchingRules>). For other options, build the verifier yourself.
    ///
    /// ```swift
    /// let authenticator = BearerAuthenticator.jwks(
    ///     URL(string: "https://clerk.example.com/.well-known/jwks.json")!, issuer: "https://clerk.example.com",
    ///     audience: .notChecked(reason: "Clerk session tokens carry no aud; azp is checked"),
    ///     allowedParties: ["https://app.example.com"])
    /// let outcome = await authenticator.authenticate(authorization: request.headerFields[.authorization])
    /// ```
    ///
    /// - Parameters:
    ///   - jwksURL: The provider's JWKS document.
    ///   - issuer: The exact `iss` the tokens must carry.
    ///   - audience: Whether `aud` is checked (``TokenVerifier/AudienceRule``).
    ///   - allowedParties: Accepted `azp` values (Clerk's frontend origins), or `nil`.
    ///   - algorithms: Accepted algorithms; by default every asymmetric one (``JWSAlgorithm/asymmetric``). A key
    ///     verifies its own `alg` only, or without one the algorithms of its type; HMAC is never accepted.
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
