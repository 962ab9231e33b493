// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    import Logging
    public import TokenVerification
    public import Vapor

    /// Vapor middleware that lets a request through only with a DPoP-bound access token and a valid DPoP proof
    /// (RFC 9449), with the verified ``/TokenVerification/BearerIdentity`` in `req.auth`.
    ///
    /// ```swift
    /// let authenticator = DPoPAuthenticator(
    ///     tokens: BearerAuthenticator(verifier: verifier),
    ///     proofs: DPoPVerifier(replayCache: InMemoryDPoPReplayCache()))
    /// let orders = app.grouped(DPoPVerificationMiddleware(authenticator: authenticator, origin: "https://api.example.com"))
    /// orders.get("orders") { req in try req.auth.require(BearerIdentity.self).userId }
    /// ```
    ///
    /// The proof's `htu` is compared with `origin` followed by the request's path. Any other request is answered,
    /// not thrown: 401 with RFC 9449's `WWW-Authenticate: DPoP error="...", algs="..."` (and `DPoP-Nonce` when the
    /// client must use a server nonce), or 503 when a key set, an introspection endpoint or the replay cache cannot
    /// answer; ``TokenVerificationMiddleware/rejection(of:)`` tells why. With server nonces, every accepted request's
    /// response carries the current `DPoP-Nonce`. The reason is logged at debug level; token and proof text never are.
    public struct DPoPVerificationMiddleware: AsyncMiddleware {
        /// The framework-neutral authenticator that does the work.
        package let authenticator: DPoPAuthenticator
        /// The scheme, host and port clients address this server by, without a trailing `/`.
        package let origin: String

        /// Middleware over an authenticator.
        ///
        /// - Parameters:
        ///   - authenticator: Checks the `Authorization` and `DPoP` headers.
        ///   - origin: The public origin of this server, such as `https://api.example.com`.
        public init(authenticator: DPoPAuthenticator, origin: String) {
            self.authenticator = authenticator
            self.origin = origin.hasSuffix("/") ? String(origin.dropLast()) : origin
        }

        /// Authenticates the request and calls `next` with the identity in `req.auth`.
        ///
        /// - Parameters:
        ///   - request: The request.
        ///   - next: The rest of the chain.
        /// - Returns: What the rest of the chain answers (with `DPoP-Nonce` when server nonces are on), or the
        ///   401/503 answer.
        /// - Throws: What `next` throws.
        public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
            let outcome = await authenticator.authenticate(
                authorization: request.headers.first(name: .authorization), proofs: request.headers[Self.dpop],
                method: request.method.rawValue, uri: origin + request.url.path)
            switch outcome {
            case .authenticated(let claims, _):
                request.auth.login(BearerIdentity(claims: claims))
                let response = try await next.respond(to: request)
                if let nonce = authenticator.currentNonce {
                    response.headers.replaceOrAdd(name: "DPoP-Nonce", value: nonce)
                }
                return response
            case .rejected(let rejection):
                request.logger.debug(
                    "dpop request rejected",
                    metadata: ["status": "\(rejection.status)", "reason": "\(rejection.error.reason)"])
                request.storage[BearerRefusalKey.self] = rejection
                return rejection.response
            }
        }

        static let dpop = "DPoP"
    }
#endif
