import AuthToken

/// Several issuers behind one front: each token goes to the ``TokenVerifier`` configured for its `iss`, with that
/// issuer's own key source, audiences, algorithms and rules. A backend that accepts tokens from two identity
/// providers (during a migration from one to the other, or staff and customers) uses one router.
///
/// ```swift
/// let router = IssuerRouter([
///     TokenVerifier(
///         configuration: .init(issuer: "https://clerk.example.com", audience: .notChecked(reason: "Clerk")),
///         keySource: RemoteJWKSSource(jwksURL: URL(string: "https://clerk.example.com/.well-known/jwks.json")!)),
///     TokenVerifier(
///         configuration: .init(issuer: "https://staff.example.com/", audience: .oneOf(["https://api.example.com"])),
///         keySource: RemoteJWKSSource(location: .openIDDiscovery(issuer: URL(string: "https://staff.example.com/")!))),
/// ])
/// let authenticator = BearerAuthenticator(router: router)
/// ```
///
/// The unverified `iss` only chooses the verifier, which then checks everything as it would alone; an unknown `iss`
/// is refused (``TokenVerificationError/issuerMismatch``) before any key is looked up, and a token never reaches
/// another issuer's keys ("Several issuers" in ``TokenVerification``).
public struct IssuerRouter: Sendable {
    /// The verifiers by their configured issuer.
    package let verifiers: [String: TokenVerifier]
    /// The longest token any verifier accepts: longer ones are refused before they are parsed.
    private let maximumTokenLength: Int

    /// A router over `verifiers`, each for its ``TokenVerifier/Configuration/issuer``.
    ///
    /// - Parameter verifiers: One verifier per issuer; if two name the same issuer, the first is used.
    public init(_ verifiers: [TokenVerifier]) {
        var byIssuer: [String: TokenVerifier] = [:]
        for verifier in verifiers where byIssuer[verifier.configuration.issuer] == nil {
            byIssuer[verifier.configuration.issuer] = verifier
        }
        self.verifiers = byIssuer
        maximumTokenLength = verifiers.map(\.configuration.maximumTokenLength).max() ?? 0
    }

    /// Verifies a token with the verifier of its `iss`.
    ///
    /// - Parameter token: The compact JWS, without the `Bearer ` prefix.
    /// - Returns: The verified claims.
    /// - Throws: ``TokenVerificationError/issuerMismatch`` when no verifier is configured for the token's `iss`;
    ///   otherwise what that verifier throws.
    public func verify(_ token: String) async throws(TokenVerificationError) -> VerifiedClaims {
        guard let verifier = try verifier(for: token) else { throw .issuerMismatch }
        return try await verifier.verify(token)
    }

    /// The verifier for the token's unverified `iss`, or `nil` if none is configured.
    func verifier(for token: String) throws(TokenVerificationError) -> TokenVerifier? {
        var token = token
        guard token.utf8.count <= maximumTokenLength else { throw .tokenTooLong }
        let parsed: Result<CompactJWS, TokenVerificationError> = token.withUTF8 { bytes in
            do throws(TokenVerificationError) {
                return .success(try CompactJWS(bytes))
            } catch {
                return .failure(error)
            }
        }
        guard let issuer = try parsed.get().claims["iss"]?.stringValue else { return nil }
        return verifiers[issuer]
    }
}
