// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    import Logging
    public import TokenVerification
    public import Vapor

    /// A Vapor authenticator for `Authorization: Bearer` JWTs: a request whose token verifies gets a
    /// ``/TokenVerification/BearerIdentity`` in `req.auth`; any other request goes on without one, so another
    /// authenticator (a session, Basic) may still log it in, and the chain's end decides.
    ///
    /// ```swift
    /// let api = app.grouped("api")
    ///     .grouped(BearerTokenAuthenticator(verifier: verifier))
    ///     .grouped(BearerChallengeMiddleware())
    /// api.get("me") { req in try req.auth.require(BearerIdentity.self).userId }
    /// ```
    ///
    /// With ``BearerChallengeMiddleware`` at the end, a request no authenticator logged in is answered as
    /// ``TokenVerificationMiddleware`` answers it: RFC 6750's 401 with the reason of the Bearer's refusal, or 503 when
    /// no key set is usable. (Vapor's `guardMiddleware()` throws a bare 401 instead.) A request that already has a
    /// `BearerIdentity` is not checked again. The refusal's reason is logged at debug level; token text never is.
    ///
    /// TokenVerification's `BearerAuthenticator` shares its name with Vapor's protocol: in a file that imports
    /// both, write `TokenVerification.BearerAuthenticator`.
    public struct BearerTokenAuthenticator: AsyncRequestAuthenticator {
        /// The framework-neutral authenticator that verifies the token.
        package let authenticator: TokenVerification.BearerAuthenticator

        /// An authenticator over TokenVerification's authenticator.
        ///
        /// - Parameter authenticator: Verifies the Bearer token.
        public init(authenticator: TokenVerification.BearerAuthenticator) {
            self.authenticator = authenticator
        }

        /// An authenticator over a verifier.
        ///
        /// - Parameter verifier: Verifies the Bearer token.
        public init(verifier: TokenVerifier) {
            self.init(authenticator: TokenVerification.BearerAuthenticator(verifier: verifier))
        }

        /// Logs the request's verified identity in, or remembers why its Bearer was refused.
        ///
        /// - Parameter request: The request.
        public func authenticate(request: Request) async throws {
            guard !request.auth.has(BearerIdentity.self) else { return }
            switch await authenticator.authenticate(authorization: request.headers.first(name: .authorization)) {
            case .authenticated(let claims):
                request.auth.login(BearerIdentity(claims: claims))
            case .rejected(let rejection):
                // No Bearer at all is not a refusal: another scheme may log the request in.
                guard rejection.error != .missingAuthorization else { return }
                request.logger.debug(
                    "bearer token not accepted",
                    metadata: ["status": "\(rejection.status)", "reason": "\(rejection.error.reason)"])
                request.storage[BearerRefusalKey.self] = rejection
            }
        }
    }

    /// The Bearer refusal of a request, from ``BearerTokenAuthenticator`` to ``BearerChallengeMiddleware``.
    struct BearerRefusalKey: StorageKey {
        typealias Value = TokenVerification.BearerAuthenticator.Rejection
    }

    extension TokenVerification.BearerAuthenticator.Rejection {
        /// The diet-app backend's answer: the JSON body, `Content-Type` and, for a 401, `WWW-Authenticate`.
        var response: Response {
            var headers = HTTPHeaders()
            for header in self.headers { headers.add(name: header.name, value: header.value) }
            return Response(status: HTTPResponseStatus(statusCode: status), headers: headers, body: .init(string: body))
        }
    }
#endif
