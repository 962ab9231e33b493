// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import HTTPTypes
public import Hummingbird
public import HummingbirdAuth
import TokenVerification

/// The end of a hummingbird-auth chain: lets a request through only if some authenticator put an identity on its
/// context, and otherwise answers as RFC 6750 and the diet-app backend's contract say.
///
/// - no credential at all: 401, `{"error": "Missing authorization header"}`, `WWW-Authenticate: Bearer`;
/// - a Bearer that ``BearerTokenAuthenticator`` refused: 401, `{"error": "Invalid token"}`,
///   `WWW-Authenticate: Bearer error="invalid_token", error_description="..."`, or 503 when no key set was usable.
///
/// It throws ``BearerRejection``, so error-handling middleware sees the failure.
public struct BearerChallengeMiddleware<Context: AuthRequestContext>: RouterMiddleware {
    /// The chain end.
    public init() {}

    /// Calls `next` if the context has an identity, and throws the Bearer answer otherwise.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Its context.
    ///   - next: The rest of the chain.
    /// - Returns: What the rest of the chain answers.
    /// - Throws: ``BearerRejection`` when no authenticator logged the request in; what `next` throws.
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard context.identity == nil else { return try await next(request, context) }
        throw BearerRejection(BearerRefusal.current ?? BearerAuthenticator.Rejection(.missingAuthorization))
    }
}
#endif
