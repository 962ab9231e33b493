// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
import HTTPTypes
public import Hummingbird

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
public protocol BearerAuthRequestContext: RequestContext {
    /// The verified identity: `nil` before the middleware ran, set for every request it lets through.
    var identity: BearerIdentity? { get set }
}

extension BearerAuthRequestContext {
    /// The verified `sub`, or `nil` on a route the middleware does not guard.
    public var userId: String? { identity?.userId }
    /// The verified `sid`, or `nil` when the token has none or the route is not guarded.
    public var sessionId: String? { identity?.sessionId }

    /// The verified identity, or a 401 if the route was reached without the middleware.
    ///
    /// - Returns: The identity.
    /// - Throws: `HTTPError(.unauthorized)` when no middleware set one (a routing mistake, not a client's).
    public func requireIdentity() throws -> BearerIdentity {
        guard let identity else { throw HTTPError(.unauthorized) }
        return identity
    }
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
