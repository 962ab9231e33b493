/// A framework-neutral front for a ``TokenVerifier`` (JWTs), an ``IntrospectionVerifier`` (opaque tokens, RFC 7662)
/// or both: an `Authorization` header value in, verified claims or the HTTP answer to send out.
///
/// The answers follow the diet-app backend's contract and RFC 6750:
/// - no `Authorization: Bearer <token>`: 401, `{"error": "Missing authorization header"}`,
///   `WWW-Authenticate: Bearer`;
/// - a token that fails verification: 401, `{"error": "Invalid token"}`,
///   `WWW-Authenticate: Bearer error="invalid_token", error_description="..."`;
/// - no usable key set (the issuer's JWKS endpoint is down past the staleness bound), or an introspection endpoint
///   that cannot answer: 503, `{"error": "Token verification unavailable"}`, so clients do not throw their tokens
///   away over it.
///
/// ```swift
/// switch await authenticator.authenticate(authorization: request.headers["Authorization"]) {
/// case .authenticated(let claims): request.auth = (userId: claims.subject, sessionId: claims.sessionID)
/// case .rejected(let answer): return Response(status: answer.status, headers: answer.headers, body: answer.body)
/// }
/// ```
public struct BearerAuthenticator: Sendable {
    /// The outcome of ``authenticate(authorization:)``.
    public enum Outcome: Sendable {
        /// The token verified (or, for an opaque token, the introspection endpoint said it is active).
        case authenticated(VerifiedClaims)
        /// The request must be answered with this.
        case rejected(Rejection)
    }

    /// The HTTP answer for a request that is not authenticated.
    public struct Rejection: Sendable, Hashable {
        /// 401, or 503 when the key set or the introspection endpoint is unavailable.
        public let status: Int
        /// The JSON body.
        public let body: String
        /// The `WWW-Authenticate` value for a 401, `nil` for a 503.
        public let wwwAuthenticate: String?
        /// Why: safe to log.
        public let error: TokenVerificationError
        /// The `DPoP-Nonce` value to send (RFC 9449 section 8), when a ``DPoPAuthenticator`` with server nonces
        /// refused the request; `nil` otherwise.
        package let dpopNonce: String?

        /// The response headers: `Content-Type`, for a 401 `WWW-Authenticate`, and `DPoP-Nonce` when due.
        public var headers: [(name: String, value: String)] {
            var headers = [(name: "Content-Type", value: "application/json")]
            if let wwwAuthenticate { headers.append((name: "WWW-Authenticate", value: wwwAuthenticate)) }
            if let dpopNonce { headers.append((name: "DPoP-Nonce", value: dpopNonce)) }
            return headers
        }

        /// An answer with its parts chosen by the caller (the DPoP authenticator's challenges).
        package init(
            status: Int, body: String, wwwAuthenticate: String?, error: TokenVerificationError, dpopNonce: String?
        ) {
            self.status = status
            self.body = body
            self.wwwAuthenticate = wwwAuthenticate
            self.error = error
            self.dpopNonce = dpopNonce
        }

        package init(_ error: TokenVerificationError) {
            self.error = error
            if error == .missingAuthorization {
                status = 401
                body = #"{"error": "Missing authorization header"}"#
            } else if error.isTokenProblem {
                status = 401
                body = #"{"error": "Invalid token"}"#
            } else {
                status = 503
                body = #"{"error": "Token verification unavailable"}"#
            }
            wwwAuthenticate = error.wwwAuthenticate
            dpopNonce = nil
        }
    }

    /// The JWT verifier, or `nil` for an authenticator over an ``IssuerRouter`` or introspection alone.
    package var verifier: TokenVerifier? {
        switch verification {
        case .single(let verifier), .jwtOrIntrospection(let verifier, _): verifier
        case .routed, .introspection: nil
        }
    }

    private enum Verification: Sendable {
        case single(TokenVerifier)
        case routed(IssuerRouter)
        case introspection(IntrospectionVerifier)
        case jwtOrIntrospection(TokenVerifier, IntrospectionVerifier)
    }

    private let verification: Verification

    /// An authenticator over `verifier`.
    ///
    /// - Parameter verifier: The verifier.
    public init(verifier: TokenVerifier) {
        verification = .single(verifier)
    }

    /// An authenticator over several issuers: each token is verified by the verifier of its `iss`, and a token
    /// from an issuer not in the router is an invalid token (401).
    ///
    /// - Parameter router: The issuers' verifiers.
    public init(router: IssuerRouter) {
        verification = .routed(router)
    }

    /// An authenticator for opaque access tokens, each checked with the issuer's RFC 7662 introspection endpoint:
    /// an inactive token is an invalid token (401), an endpoint that cannot answer a 503.
    ///
    /// - Parameter introspection: The introspection verifier.
    public init(introspection: IntrospectionVerifier) {
        verification = .introspection(introspection)
    }

    /// An authenticator for an issuer that sends both kinds: a token shaped like a JWT (three dot-separated
    /// segments, the first starting with `eyJ`) is verified by `verifier` alone, any other by `introspection`. A
    /// JWT that fails verification is refused; it is never sent to the introspection endpoint instead.
    ///
    /// - Parameters:
    ///   - verifier: The JWT verifier.
    ///   - introspection: The introspection verifier for opaque tokens.
    public init(verifier: TokenVerifier, introspection: IntrospectionVerifier) {
        verification = .jwtOrIntrospection(verifier, introspection)
    }

    /// Authenticates a request by its `Authorization` header.
    ///
    /// - Parameter authorization: The header's value, or `nil` if the request has none.
    /// - Returns: The claims, or the answer to send.
    public func authenticate(authorization: String?) async -> Outcome {
        guard let token = Self.bearerToken(authorization) else {
            return .rejected(Rejection(.missingAuthorization))
        }
        do {
            return .authenticated(try await verify(token: token))
        } catch {
            return .rejected(Rejection(error))
        }
    }

    /// Verifies a token taken from its header by whichever verifier this authenticator holds.
    package func verify(token: String) async throws(TokenVerificationError) -> VerifiedClaims {
        switch verification {
        case .single(let verifier): return try await verifier.verify(token)
        case .routed(let router): return try await router.verify(token)
        case .introspection(let introspection): return try await introspection.verify(token)
        case .jwtOrIntrospection(let verifier, let introspection):
            if Self.looksLikeJWT(token) { return try await verifier.verify(token) }
            return try await introspection.verify(token)
        }
    }

    /// Whether `token` has a JWS compact shape: exactly two dots, and a first segment starting with `eyJ` (the
    /// base64url of `{"`).
    static func looksLikeJWT(_ token: String) -> Bool {
        token.utf8.starts(with: "eyJ".utf8) && token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The credential of a `Bearer` header value (scheme without letter case, RFC 7235), or `nil`.
    static func bearerToken(_ authorization: String?) -> String? {
        credential(authorization, scheme: "bearer")
    }

    /// The credential of a header value with `scheme` (given in lowercase letters, compared without letter case),
    /// or `nil`. Spaces around the credential are dropped; the bytes are read once, not as characters.
    static func credential(_ authorization: String?, scheme: String) -> String? {
        guard let authorization else { return nil }
        let utf8 = authorization.utf8
        let length = scheme.utf8.count
        guard utf8.count > length + 1,
            utf8.prefix(length).elementsEqual(scheme.utf8, by: { $0 | 0x20 == $1 }),
            utf8.dropFirst(length).first == UInt8(ascii: " ")
        else { return nil }
        let space = UInt8(ascii: " ")
        let rest = utf8.dropFirst(length + 1)
        guard let start = rest.firstIndex(where: { $0 != space }),
            let last = rest.lastIndex(where: { $0 != space })
        else { return nil }
        return String(Substring(utf8[start...last]))
    }
}
