// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import HTTPTypes
public import Hummingbird
import HummingbirdAuth
import Logging
public import TokenVerification

/// Hummingbird middleware that lets a request through only with a valid `Authorization: Bearer` JWT, and puts
/// the verified identity on the request context.
///
/// ```swift
/// let router = Router(context: BasicBearerAuthRequestContext.self)
/// router.group("api")
///     .add(middleware: TokenVerificationMiddleware(verifier: verifier))
///     .get("users/me") { _, context in
///         let identity = try context.requireIdentity()
///         return ["userId": identity.userId, "sessionId": identity.sessionId ?? ""]
///     }
/// ```
///
/// A request without a Bearer, or whose token fails verification, never reaches the routes: it is answered
/// through ``BearerRejection`` (401 with the diet-app backend's JSON body and RFC 6750's `WWW-Authenticate`,
/// or 503 when no key set is usable). Only the first `Authorization` field is read. The rejection's reason is
/// logged at debug level on the request's logger; token text never is.
public struct TokenVerificationMiddleware<Context: BearerAuthRequestContext>: RouterMiddleware {
    /// The framework-neutral authenticator that does the work.
    package let authenticator: BearerAuthenticator

    /// Middleware over an authenticator.
    ///
    /// - Parameter authenticator: Checks the `Authorization` header.
    public init(authenticator: BearerAuthenticator) {
        self.authenticator = authenticator
    }

    /// Middleware over a verifier.
    ///
    /// - Parameter verifier: Verifies the Bearer token.
    public init(verifier: TokenVerifier) {
        self.init(authenticator: BearerAuthenticator(verifier: verifier))
    }

    /// Verifies the request's Bearer token and calls `next` with the identity on the context.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Its context.
    ///   - next: The rest of the chain.
    /// - Returns: What the rest of the chain answers.
    /// - Throws: ``BearerRejection`` when the request is not authenticated; what `next` throws.
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        switch await authenticator.authenticate(authorization: request.headers[.authorization]) {
        case .authenticated(let claims):
            var context = context
            context.identity = BearerIdentity(claims: claims)
            return try await next(request, context)
        case .rejected(let rejection):
            context.logger.debug(
                "bearer token rejected",
                metadata: ["status": "\(rejection.status)", "reason": "\(rejection.error.reason)"])
            throw BearerRejection(rejection)
        }
    }
}
#endif
