// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import HTTPTypes
public import Hummingbird
public import HummingbirdAuth

/// A Hummingbird request context that can carry the identity ``TokenVerificationMiddleware`` verified.
///
/// Add one stored property to your own context:
///
/// ```swift
/// struct AppRequestContext: BearerAuthRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var identity: BearerIdentity?
///
///     init(source: Source) {
///         coreContext = .init(source: source)
///         identity = nil
///     }
/// }
/// ```
///
/// Or use ``BasicBearerAuthRequestContext``.
///
/// It is hummingbird-auth's `AuthRequestContext` with `BearerIdentity` as the identity, so hummingbird-auth's
/// authenticators, ``BearerTokenAuthenticator`` and ``BearerChallengeMiddleware`` all work with it.
public protocol BearerAuthRequestContext: AuthRequestContext where Identity == BearerIdentity {}

extension BearerAuthRequestContext {
    /// The verified `sub`, or `nil` on a route the middleware does not guard.
    public var userId: String? { identity?.userId }
    /// The verified `sid`, or `nil` when the token has none or the route is not guarded.
    public var sessionId: String? { identity?.sessionId }
    // `requireIdentity()` is hummingbird-auth's: the identity, or a 401 if no middleware set one (a routing mistake).
}

/// The smallest context for ``TokenVerificationMiddleware``: Hummingbird's core context and the identity.
public struct BasicBearerAuthRequestContext: BearerAuthRequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The verified identity.
    public var identity: BearerIdentity?

    /// A context for a new request, with no identity yet.
    ///
    /// - Parameter source: What Hummingbird builds contexts from.
    public init(source: Source) {
        coreContext = .init(source: source)
        identity = nil
    }
}
#endif
