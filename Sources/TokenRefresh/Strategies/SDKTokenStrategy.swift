/// Tokens from an SDK that owns the session and its refresh (Clerk's `session.getToken()`, Firebase's
/// `getIDToken(forcingRefresh:)`).
///
/// TokenKit's job is then to hand the SDK's token to every request, ask once for all concurrent callers, skip
/// the SDK's cache after a 401, and tell the app the truth about the session:
///
/// ```swift
/// let auth = TokenRefreshClient(strategy: SDKTokenStrategy { forceRefresh in
///     try await clerk.session?.getToken(.init(skipCache: forceRefresh))?.jwt
/// } user: {
///     clerk.user.map { AuthUser(id: $0.id, firstName: $0.firstName, lastName: $0.lastName, imageURL: $0.imageUrl) }
/// })
/// let api = AuthenticatedClient(transport: transport, tokenProvider: auth, configuration: configuration)
/// ```
///
/// - The `user` closure supplies the profile (Clerk's default session token carries no name or e-mail): it is
///   asked after each token, and ``TokenRefreshClient/currentUser`` and ``TokenRefreshClient/sessionStates()``
///   carry it. A profile whose ID is not the session's user is ignored.
/// - The closure returns the token, or `nil` when the SDK has no session: the session then ends once, with
///   ``AuthEvent/SignOutReason/providerSignedOut``. A JWT expires at its `exp`, however many times the SDK hands it
///   back from its cache (`exp - iat` is the lifetime the expiry margins scale with).
/// - Asking the SDK is not a refresh sent to a server unless `forceRefresh` is `true`: only forced calls count
///   against the rate breaker, so checks after the SDK's change callbacks never hold a sign-out back.
/// - Throw ``TokenRefreshError/refreshTokenRejected`` when the SDK says the session was revoked: it ends once,
///   with ``AuthEvent/SignOutReason/revoked``.
/// - Connectivity errors (`URLError`, `POSIXError` connection failures) count as offline: the session is kept
///   and ``TokenRefreshClient/isOfflineNow`` says so.
/// - `forceRefresh` is `true` when the server rejected the current token (a 401), so the SDK should not
///   answer from its cache.
/// - When the SDK signs another user in by itself, its next token (another `sub`) starts a new session for that
///   user: requests made for the previous user fail with ``TokenRefreshError/sessionChanged`` and are never sent
///   with the new user's token.
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
