// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import HTTPTypes
public import Hummingbird
import HummingbirdAuth
import Logging
public import TokenVerification

/// Hummingbird middleware that lets a request through only with a DPoP-bound access token and a valid DPoP proof
/// (RFC 9449), and puts the verified identity on the request context.
///
/// ```swift
/// let authenticator = DPoPAuthenticator(
///     tokens: BearerAuthenticator(verifier: verifier),
///     proofs: DPoPVerifier(replayCache: InMemoryDPoPReplayCache()))
/// let router = Router(context: BasicBearerAuthRequestContext.self)
/// router.group("api")
///     .add(middleware: DPoPVerificationMiddleware(authenticator: authenticator, origin: "https://api.example.com"))
///     .get("orders") { _, context in try context.requireIdentity().userId }
/// ```
///
/// The proof's `htu` is compared with `origin` followed by the request's path: the origin clients use, which a
/// server behind a proxy cannot learn from the request itself. A refused request never reaches the routes: it is
/// answered through ``BearerRejection`` with RFC 9449's `WWW-Authenticate: DPoP error="...", algs="..."` (and
/// `DPoP-Nonce` when the client must use a server nonce), or 503 when a key set, an introspection endpoint or the
/// replay cache cannot answer. With server nonces, every accepted request's response carries the current
/// `DPoP-Nonce`. The reason of a refusal is logged at debug level; token and proof text never are.
public struct DPoPVerificationMiddleware<Context: BearerAuthRequestContext>: RouterMiddleware {
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

    /// Authenticates the request and calls `next` with the identity on the context.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Its context.
    ///   - next: The rest of the chain.
    /// - Returns: What the rest of the chain answers, with `DPoP-Nonce` when server nonces are on.
    /// - Throws: ``BearerRejection`` when the request is not authenticated; what `next` throws.
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let proofs = request.headers[values: Self.dpop]
        let outcome = await authenticator.authenticate(
            authorization: request.headers[.authorization], proofs: proofs, method: request.method.rawValue,
            uri: origin + request.uri.path)
        switch outcome {
        case .authenticated(let claims, _):
            var context = context
            context.identity = BearerIdentity(claims: claims)
            var response = try await next(request, context)
            if let nonce = authenticator.currentNonce { response.headers[Self.dpopNonce] = nonce }
            return response
        case .rejected(let rejection):
            context.logger.debug(
                "dpop request rejected",
                metadata: ["status": "\(rejection.status)", "reason": "\(rejection.error.reason)"])
            throw BearerRejection(rejection)
        }
    }

    static var dpop: HTTPField.Name { HTTPField.Name("DPoP")! }
    static var dpopNonce: HTTPField.Name { HTTPField.Name("DPoP-Nonce")! }
}
#endif
