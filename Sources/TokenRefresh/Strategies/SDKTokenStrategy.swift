/// Tokens from an SDK that owns the session and its refresh (Clerk's `session.getToken()`, Firebase's
/// `getIDToken(forcingRefresh:)`).
///
/// TokenKit hands the SDK's token to every request, asks once for all concurrent callers, skips the SDK's cache after a
/// 401, and tells the app the truth about the session (what each answer of the closures does: <doc:SDKSessionRules>):
///
/// ```swift
/// let auth = TokenRefreshClient(strategy: SDKTokenStrategy { forceRefresh in
///     try await clerk.session?.getToken(.init(skipCache: forceRefresh))?.jwt
/// } user: {
///     clerk.user.map { AuthUser(id: $0.id, firstName: $0.firstName, lastName: $0.lastName, imageURL: $0.imageUrl) }
/// })
/// let api = AuthenticatedClient(transport: transport, tokenProvider: auth, configuration: configuration)
/// ```
public struct SDKTokenStrategy: RefreshStrategy {
    private let body: @Sendable (_ forceRefresh: Bool) async throws -> String?
    private let user: (@Sendable () async -> AuthUser?)?
    /// An SDK keeps its own refresh token: `false`.
    public var requiresRefreshToken: Bool { false }
    /// An SDK answers from its cache unless forced: `true`.
    public var mayAnswerFromCache: Bool { true }

    /// Creates the strategy.
    ///
    /// - Parameters:
    ///   - body: Returns the SDK's current token, or `nil` without a session; skips the SDK's cache when its
    ///     argument is `true`.
    ///   - user: Returns the signed-in user's profile from the SDK, if it has one; `nil` by default (the profile
    ///     then comes from the token's claims, or from ``TokenRefreshClient/setProfile(_:)``).
    public init(
        _ body: @escaping @Sendable (_ forceRefresh: Bool) async throws -> String?,
        user: (@Sendable () async -> AuthUser?)? = nil
    ) {
        self.body = body
        self.user = user
    }

    /// Asks the SDK for its token, from its cache if it has a good one.
    ///
    /// - Parameter refreshToken: Ignored (the SDK keeps its own).
    /// - Returns: The SDK's token.
    /// - Throws: ``TokenRefreshError/signedOut`` when the SDK has no session; what the closure throws.
    public func refresh(using refreshToken: String?) async throws -> TokenResponse {
        try await refresh(using: refreshToken, forced: false)
    }

    /// Asks the SDK for its token, skipping its cache when `forced`.
    ///
    /// - Parameters:
    ///   - refreshToken: Ignored (the SDK keeps its own).
    ///   - forced: Whether the server rejected the current token.
    /// - Returns: The SDK's token.
    /// - Throws: ``TokenRefreshError/signedOut`` when the SDK has no session; what the closure throws.
    public func refresh(using refreshToken: String?, forced: Bool) async throws -> TokenResponse {
        guard let token = try await body(forced), !token.isEmpty else { throw TokenRefreshError.signedOut }
        var response = TokenResponse(accessToken: token, user: await user?())
        response.mayComeFromCache = true
        return response
    }
}
