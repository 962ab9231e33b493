/// A framework-neutral front for DPoP-bound access tokens (RFC 9449 section 7): the `Authorization` and `DPoP`
/// headers in, verified claims or the HTTP answer out. The article "Accepting DPoP-bound tokens" sets one up.
///
/// `Authorization: DPoP <token>` with exactly one `DPoP` header is accepted when the token verifies, is bound to a
/// key (`cnf.jkt` in its claims or introspection answer), and the proof checks out with that key; the proof's
/// `jti` is spent last. A token with `cnf.jkt` sent as `Bearer` is refused; an unbound Bearer token is accepted only
/// with `allowsBearer`. The answers:
/// - no credential: 401 with `WWW-Authenticate: DPoP algs="..."`;
/// - a bad proof, a replayed one, or one signed by another key than the token's: 401 with
///   `DPoP error="invalid_dpop_proof", algs="..."`;
/// - a proof without the server's current nonce (when ``DPoPVerifier/Configuration/nonces`` is set): 401 with
///   `DPoP error="use_dpop_nonce"` and a `DPoP-Nonce` header;
/// - a token that fails verification, is bound to no key, or a bound token sent as `Bearer`: 401 with
///   `DPoP error="invalid_token"`;
/// - a key set, an introspection endpoint or a replay cache that cannot answer: 503 (fail closed).
public struct DPoPAuthenticator: Sendable {
    /// The outcome of ``authenticate(authorization:proofs:method:uri:)``.
    public enum Outcome: Sendable {
        /// The token verified and, for the `DPoP` scheme, its proof too (`nil` for an accepted Bearer token).
        case authenticated(VerifiedClaims, proof: DPoPProof?)
        /// The request must be answered with this.
        case rejected(BearerAuthenticator.Rejection)
    }

    /// Verifies the access tokens.
    package let tokens: BearerAuthenticator
    /// Verifies the proofs.
    package let proofs: DPoPVerifier
    /// Whether an access token bound to no key is accepted with the `Bearer` scheme.
    package let allowsBearer: Bool

    /// An authenticator.
    ///
    /// - Parameters:
    ///   - tokens: Verifies the access tokens (JWTs, introspection, or both).
    ///   - proofs: Verifies the proofs and spends their `jti`.
    ///   - allowsBearer: Whether unbound tokens may still come as `Bearer`; `false` by default. A token with
    ///     `cnf.jkt` is refused as `Bearer` either way.
    public init(tokens: BearerAuthenticator, proofs: DPoPVerifier, allowsBearer: Bool = false) {
        self.tokens = tokens
        self.proofs = proofs
        self.allowsBearer = allowsBearer
    }

    /// The `DPoP-Nonce` to send on a successful answer, or `nil` without server nonces.
    public var currentNonce: String? { proofs.currentNonce }

    /// Authenticates a request.
    ///
    /// - Parameters:
    ///   - authorization: The `Authorization` header's value, or `nil`.
    ///   - proofs: Every `DPoP` header value of the request (more than one is refused).
    ///   - method: The request method.
    ///   - uri: The request's absolute URI as the client addressed it (the public origin and the path).
    /// - Returns: The claims and proof, or the answer to send.
    public func authenticate(
        authorization: String?, proofs: [String], method: String, uri: String
    ) async -> Outcome {
        if let token = BearerAuthenticator.credential(authorization, scheme: "dpop") {
            let now = self.proofs.now()
            do throws(TokenVerificationError) {
                guard proofs.count == 1 else { throw .invalidDPoPProof("proof") }
                let proof = try self.proofs.check(
                    proof: proofs[0], method: method, uri: uri, accessToken: token, now: now)
                let claims = try await tokens.verify(token: token)
                guard let bound = claims.confirmationKeyThumbprint else { throw .dpopTokenNotBound }
                guard bound == proof.keyThumbprint else { throw .dpopKeyMismatch }
                try await self.proofs.spend(proof, now: now)
                return .authenticated(claims, proof: proof)
            } catch {
                return .rejected(rejection(error))
            }
        }
        if let token = BearerAuthenticator.bearerToken(authorization) {
            // Without `allowsBearer` no Bearer is looked at; with it, one bound to a key is still refused.
            guard allowsBearer else { return .rejected(rejection(.dpopBoundTokenAsBearer)) }
            do {
                let claims = try await tokens.verify(token: token)
                guard claims.confirmationKeyThumbprint == nil else {
                    return .rejected(rejection(.dpopBoundTokenAsBearer))
                }
                return .authenticated(claims, proof: nil)
            } catch {
                return .rejected(BearerAuthenticator.Rejection(error))
            }
        }
        return .rejected(rejection(.missingAuthorization))
    }

    /// The answer for `error`: the DPoP challenge with `algs`, and a fresh nonce when the client must use one.
    func rejection(_ error: TokenVerificationError) -> BearerAuthenticator.Rejection {
        let algs = #"algs="\#(proofs.algorithmNames)""#
        if error == .missingAuthorization {
            return .init(
                status: 401, body: #"{"error": "Missing authorization header"}"#,
                wwwAuthenticate: (allowsBearer ? "Bearer, " : "") + "DPoP " + algs, error: error, dpopNonce: nil)
        }
        guard error.isTokenProblem, let code = error.dpopErrorCode else {
            return .init(
                status: 503, body: #"{"error": "Token verification unavailable"}"#, wwwAuthenticate: nil,
                error: error, dpopNonce: nil)
        }
        let body =
            switch code {
            case "use_dpop_nonce": #"{"error": "DPoP nonce required"}"#
            case "invalid_dpop_proof": #"{"error": "Invalid DPoP proof"}"#
            default: #"{"error": "Invalid token"}"#
            }
        return .init(
            status: 401, body: body,
            wwwAuthenticate: #"DPoP error="\#(code)", error_description="\#(error.safeDescription)", \#(algs)"#,
            error: error, dpopNonce: code == "use_dpop_nonce" ? proofs.currentNonce : nil)
    }
}
