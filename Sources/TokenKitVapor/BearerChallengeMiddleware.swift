// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    import Logging
    import TokenVerification
    public import Vapor

    /// The end of a Vapor authenticator chain: lets a request through only if `req.auth` holds an `A`, and otherwise
    /// answers as RFC 6750 and the diet-app backend's contract say.
    ///
    /// - no credential at all: 401, `{"error": "Missing authorization header"}`, `WWW-Authenticate: Bearer`;
    /// - a Bearer that ``BearerTokenAuthenticator`` refused: 401, `{"error": "Invalid token"}`,
    ///   `WWW-Authenticate: Bearer error="invalid_token", error_description="..."`, or 503 when no key set was usable.
    ///
    /// The answer is returned, not thrown, because Vapor's `ErrorMiddleware` would replace the body with its own
    /// `{"error": true, "reason": ...}`.
    public struct BearerChallengeMiddleware<A: Authenticatable>: AsyncMiddleware {
        /// A chain end that requires an `A` in `req.auth` (the app's own user type, logged in by any authenticator).
        ///
        /// - Parameter type: The identity type to require.
        public init(_ type: A.Type) {}

        /// Calls `next` if `req.auth` holds an `A`, and answers the Bearer challenge otherwise.
        ///
        /// - Parameters:
        ///   - request: The request.
        ///   - next: The rest of the chain.
        /// - Returns: What the rest of the chain answers, or the challenge.
        /// - Throws: What `next` throws.
        public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
            if request.auth.has(A.self) { return try await next.respond(to: request) }
            let rejection =
                request.storage[BearerRefusalKey.self]
                ?? TokenVerification.BearerAuthenticator.Rejection(.missingAuthorization)
            return rejection.response
        }
    }

    extension BearerChallengeMiddleware where A == BearerIdentity {
        /// A chain end that requires a verified ``/TokenVerification/BearerIdentity`` in `req.auth`.
        public init() {}
    }
#endif
