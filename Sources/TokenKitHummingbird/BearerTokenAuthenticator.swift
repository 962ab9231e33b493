// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import HTTPTypes
public import Hummingbird
public import HummingbirdAuth
import Logging
public import TokenVerification

/// A hummingbird-auth authenticator for `Authorization: Bearer` JWTs: a request whose token verifies gets an
/// identity on its context; any other request goes on without one, so another authenticator (a session cookie,
/// Basic) may still log it in, and the chain's end decides.
///
/// ```swift
/// let router = Router(context: BasicAuthRequestContext<User>.self)
/// router.group("api")
///     .add(middleware: SessionAuthenticator(users: users, context: BasicAuthRequestContext<User>.self))
///     .add(middleware: BearerTokenAuthenticator(verifier: verifier) { identity, _, _ in
///         try await users.find(clerkID: identity.userId)
///     })
///     .add(middleware: BearerChallengeMiddleware())
///     .get("me") { _, context in try context.requireIdentity() }
/// ```
///
/// With ``BearerChallengeMiddleware`` at the end, a request that no authenticator logged in gets the same
/// answer as ``TokenVerificationMiddleware`` gives: RFC 6750's 401 with the reason of the Bearer's refusal, or
/// 503 when no key set is usable. (hummingbird-auth's `IsAuthenticatedMiddleware` answers a bare 401 instead.)
/// A request with an identity already on its context is not checked again. The refusal's reason is logged at
/// debug level; token text never is.
public struct BearerTokenAuthenticator<Context: AuthRequestContext>: AuthenticatorMiddleware {
    /// The identity this authenticator puts on the context.
    public typealias Identity = Context.Identity

    /// The framework-neutral authenticator that verifies the token.
    package let authenticator: BearerAuthenticator
    private let identify: @Sendable (BearerIdentity, Request, Context) async throws -> Context.Identity?

    /// An authenticator that maps a verified token to the app's own identity type.
    ///
    /// - Parameters:
    ///   - authenticator: Verifies the Bearer token.
    ///   - identify: The app's identity for a verified token, or `nil` to leave the request unauthenticated
    ///     (an unknown user); what it throws stops the request.
    public init(
        authenticator: BearerAuthenticator,
        identify: @escaping @Sendable (BearerIdentity, Request, Context) async throws -> Context.Identity?
    ) {
        self.authenticator = authenticator
        self.identify = identify
    }

    /// An authenticator over a verifier that maps a verified token to the app's own identity type.
    ///
    /// - Parameters:
    ///   - verifier: Verifies the Bearer token.
    ///   - identify: The app's identity for a verified token, or `nil` to leave the request unauthenticated.
    public init(
        verifier: TokenVerifier,
        identify: @escaping @Sendable (BearerIdentity, Request, Context) async throws -> Context.Identity?
    ) {
        self.init(authenticator: BearerAuthenticator(verifier: verifier), identify: identify)
    }

    /// The identity for the request's Bearer token, or `nil` to let the chain go on without one.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Its context.
    /// - Returns: The identity, or `nil` when the request has no Bearer or its token does not verify.
    /// - Throws: What `identify` throws.
    public func authenticate(request: Request, context: Context) async throws -> Context.Identity? {
        try await outcome(request: request, context: context).identity
    }

    /// Authenticates the request (unless an earlier authenticator did), then calls `next`; a refusal is remembered
    /// for ``BearerChallengeMiddleware`` during `next`.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Its context.
    ///   - next: The rest of the chain.
    /// - Returns: What the rest of the chain answers.
    /// - Throws: What `identify` or `next` throws.
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard context.identity == nil else { return try await next(request, context) }
        switch try await outcome(request: request, context: context) {
        case (let identity?, _):
            var context = context
            context.identity = identity
            return try await next(request, context)
        case (nil, let rejection?):
            return try await BearerRefusal.$current.withValue(rejection) { try await next(request, context) }
        case (nil, nil):
            return try await next(request, context)
        }
    }

    private func outcome(
        request: Request, context: Context
    ) async throws -> (identity: Context.Identity?, rejection: BearerAuthenticator.Rejection?) {
        switch await authenticator.authenticate(authorization: request.headers[.authorization]) {
        case .authenticated(let claims):
            return (try await identify(BearerIdentity(claims: claims), request, context), nil)
        case .rejected(let rejection):
            // No Bearer at all is not a refusal: another scheme may log the request in.
            guard rejection.error != .missingAuthorization else { return (nil, nil) }
            context.logger.debug(
                "bearer token not accepted",
                metadata: ["status": "\(rejection.status)", "reason": "\(rejection.error.reason)"])
            return (nil, rejection)
        }
    }
}

extension BearerTokenAuthenticator where Context.Identity == BearerIdentity {
    /// An authenticator that puts the verified ``/TokenVerification/BearerIdentity`` on the context.
    ///
    /// - Parameter authenticator: Verifies the Bearer token.
    public init(authenticator: BearerAuthenticator) {
        self.init(authenticator: authenticator) { identity, _, _ in identity }
    }

    /// An authenticator over a verifier that puts the verified identity on the context.
    ///
    /// - Parameter verifier: Verifies the Bearer token.
    public init(verifier: TokenVerifier) {
        self.init(authenticator: BearerAuthenticator(verifier: verifier))
    }
}

/// The Bearer refusal of the request being handled, from ``BearerTokenAuthenticator`` to
/// ``BearerChallengeMiddleware`` further down the same chain (the context's shape belongs to the app).
enum BearerRefusal {
    @TaskLocal static var current: BearerAuthenticator.Rejection?
}
#endif
