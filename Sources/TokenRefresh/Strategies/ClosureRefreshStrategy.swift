/// A refresh done by a closure, for SDKs that hand out tokens themselves (Clerk's `session.getToken()`).
public struct ClosureRefreshStrategy: RefreshStrategy {
    private let body: @Sendable (String?) async throws -> TokenResponse
    /// Whether the closure needs the session's refresh token.
    public let requiresRefreshToken: Bool

    /// Creates the strategy.
    ///
    /// - Parameters:
    ///   - requiresRefreshToken: Whether the closure needs the refresh token; `false` by default.
    ///   - body: Returns a new token; given the refresh token, if any. Throw a ``TokenRefreshError`` to say
    ///     how the failure should be treated.
    public init(
        requiresRefreshToken: Bool = false, _ body: @escaping @Sendable (String?) async throws -> TokenResponse
    ) {
        self.requiresRefreshToken = requiresRefreshToken
        self.body = body
    }

    /// Calls the closure.
    ///
    /// - Parameter refreshToken: The refresh token, if any.
    /// - Returns: What the closure returns.
    /// - Throws: What the closure throws.
    public func refresh(using refreshToken: String?) async throws -> TokenResponse {
        try await body(refreshToken)
    }
}
