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

        /// The response headers: `Content-Type` and, for a 401, `WWW-Authenticate`.
        public var headers: [(name: String, value: String)] {
            var headers = [(name: "Content-Type", value: "application/json")]
            if let wwwAuthenticate { headers.append((name: "WWW-Authenticate", value: wwwAuthenticate)) }
            return headers
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
        }
    }

    /// The JWT verifier, or `nil` for an authenticator over an ``IssuerRouter`` or introspection alone.
    public var verifier: TokenVerifier? {
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
            switch verification {
            case .single(let verifier): return .authenticated(try await verifier.verify(token))
            case .routed(let router): return .authenticated(try await router.verify(token))
            case .introspection(let introspection): return .authenticated(try await introspection.verify(token))
            case .jwtOrIntrospection(let verifier, let introspection):
                if Self.looksLikeJWT(token) { return .authenticated(try await verifier.verify(token)) }
                return .authenticated(try await introspection.verify(token))
            }
        } catch {
            return .rejected(Rejection(error))
        }
    }

    /// Whether `token` has a JWS compact shape: exactly two dots, and a first segment starting with `eyJ` (the
    /// base64url of `{"`).
    static func looksLikeJWT(_ token: String) -> Bool {
        token.utf8.starts(with: "eyJ".utf8) && token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The credential of a `Bearer` header value (scheme without letter case, RFC 7235), or `nil`.
    static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization else { return nil }
        let utf8 = authorization.utf8
        guard utf8.count > 7, utf8.prefix(6).elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }),
            utf8.dropFirst(6).first == UInt8(ascii: " ")
        else { return nil }
        let token = authorization.dropFirst(7).drop { $0 == " " }
        let trimmed = token.reversed().drop { $0 == " " }
        guard !trimmed.isEmpty else { return nil }
        return String(token.prefix(trimmed.count))
    }
}
