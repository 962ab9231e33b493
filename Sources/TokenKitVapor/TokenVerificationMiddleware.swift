// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    import Logging
    public import TokenVerification
    public import Vapor

    /// Vapor middleware that lets a request through only with a valid `Authorization: Bearer` JWT, with the verified
    /// ``/TokenVerification/BearerIdentity`` in `req.auth`: ``BearerTokenAuthenticator`` and
    /// ``BearerChallengeMiddleware`` in one, for routes where a Bearer is the only credential.
    ///
    /// ```swift
    /// let users = app.grouped("users").grouped(TokenVerificationMiddleware(verifier: verifier))
    /// users.get("me") { req in
    ///     let identity = try req.auth.require(BearerIdentity.self)
    ///     return ["userId": identity.userId, "sessionId": identity.sessionId ?? ""]
    /// }
    /// ```
    ///
    /// Any other request is answered, not thrown (Vapor's `ErrorMiddleware` would replace the body): 401 with the
    /// diet-app backend's JSON body and RFC 6750's `WWW-Authenticate`, or 503 when no key set is usable. Only the
    /// first `Authorization` field is read. The reason is logged at debug level; token text never is.
    public struct TokenVerificationMiddleware: AsyncMiddleware {
        /// The framework-neutral authenticator that does the work.
        package let authenticator: TokenVerification.BearerAuthenticator

        /// Middleware over TokenVerification's authenticator.
        ///
        /// - Parameter authenticator: Checks the `Authorization` header.
        public init(authenticator: TokenVerification.BearerAuthenticator) {
            self.authenticator = authenticator
        }

        /// Middleware over a verifier.
        ///
        /// - Parameter verifier: Verifies the Bearer token.
        public init(verifier: TokenVerifier) {
            self.init(authenticator: TokenVerification.BearerAuthenticator(verifier: verifier))
        }

        /// Verifies the request's Bearer token and calls `next` with the identity in `req.auth`.
        ///
        /// - Parameters:
        ///   - request: The request.
        ///   - next: The rest of the chain.
        /// - Returns: What the rest of the chain answers, or the 401/503 answer.
        /// - Throws: What `next` throws.
        public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
            switch await authenticator.authenticate(authorization: request.headers.first(name: .authorization)) {
            case .authenticated(let claims):
                request.auth.login(BearerIdentity(claims: claims))
                return try await next.respond(to: request)
            case .rejected(let rejection):
                request.logger.debug(
                    "bearer token rejected",
                    metadata: ["status": "\(rejection.status)", "reason": "\(rejection.error.reason)"])
                request.storage[BearerRefusalKey.self] = rejection
                return rejection.response
            }
        }

        /// Why this middleware or ``BearerTokenAuthenticator`` refused the request's Bearer token, for a middleware
        /// in front of it that counts or logs refusals; `nil` if neither refused it (no Bearer at all is a refusal
        /// here, an authenticator lets it through).
        ///
        /// ```swift
        /// struct RefusalCounter: AsyncMiddleware {
        ///     func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        ///         let response = try await next.respond(to: request)
        ///         if let rejection = TokenVerificationMiddleware.rejection(of: request) {
        ///             request.logger.info("refused", metadata: ["reason": "\(rejection.error.reason)"])
        ///         }
        ///         return response
        ///     }
        /// }
        /// ```
        ///
        /// - Parameter request: The request, after the middleware has answered it.
        /// - Returns: The refusal: its status, its error (never token text) and its answer's headers and body.
        public static func rejection(of request: Request) -> TokenVerification.BearerAuthenticator.Rejection? {
            request.storage[BearerRefusalKey.self]
        }
    }
#endif
