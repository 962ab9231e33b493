import AuthToken
public import Foundation
import Logging
public import Persistence

extension TokenRefreshClient {
    /// Creates a client for the FitIQ refresh endpoint, the unification analysis's
    /// `TokenRefreshClient(networkClient:baseURL:apiKey:)`.
    ///
    /// It posts `{"refreshToken": "..."}` to `baseURL/api/v1/auth/refresh` with `X-API-Key` through the app's
    /// network client (``JSONEndpointRefreshStrategy`` over ``NetworkClientTransport``), and is the same
    /// single-flight client as every other: concurrent ``refreshToken(_:)`` calls share one refresh.
    ///
    /// ```swift
    /// lazy var tokenRefreshClient: TokenRefreshClient = {
    ///     TokenRefreshClient(networkClient: networkClient, baseURL: Config.baseURL, apiKey: Config.apiKey)
    /// }()
    /// ```
    ///
    /// - Parameters:
    ///   - networkClient: The app's network client.
    ///   - baseURL: The API's base URL.
    ///   - apiKey: The API key sent as `X-API-Key`.
    ///   - store: Where the session is kept; in memory by default (the app's persistence keeps the pair, through
    ///     ``NetworkClientProtocol/executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:retryCount:)``).
    ///     Pass an ``AuthTokenPersistenceStore`` to keep client and persistence on one storage.
    ///   - configuration: The options.
    public init(
        networkClient: any NetworkClientProtocol, baseURL: URL, apiKey: String,
        store: any TokenStore = InMemoryTokenStore(), configuration: Configuration = Configuration()
    ) {
        self.init(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: baseURL, apiKey: apiKey, transport: NetworkClientTransport(networkClient)),
            store: store, configuration: configuration)
    }

    /// The token to retry with after a request carrying `rejected` got a 401, saved in `persistence` first.
    ///
    /// Concurrent callers share one refresh (this client's single flight), and a caller whose request carried
    /// an older token than the one saved meanwhile retries with the saved one, without refreshing again. When the
    /// app signed in anew through its own code (the stored pair is a JWT issued after this client's session), the
    /// client adopts the stored pair before refreshing it; for opaque tokens, call ``signIn(with:userID:)``.
    ///
    /// - Parameters:
    ///   - rejected: The access token the rejected request carried, if any.
    ///   - persistence: The app's persistence.
    /// - Returns: The token to retry with.
    /// - Throws: ``APIError/unauthorized`` when no refresh token is stored; the refresh's error.
    nonisolated func tokenForRetry(
        rejecting rejected: String?, persistence: any AuthTokenPersistenceProtocol
    ) async throws -> AuthToken {
        // The refresh token first, then the access token: a pair saved between the two reads shows in the second.
        guard let storedRefresh = try persistence.fetchRefreshToken(), !storedRefresh.isEmpty else {
            throw APIError.unauthorized
        }
        let storedAccess = try persistence.fetchAccessToken()
        if let rejected, let storedAccess, !storedAccess.isEmpty, storedAccess != rejected {
            // Another caller refreshed and saved already: a stale rejection. Only the access token is used (for
            // the retry's header), so its claims are not parsed.
            return AuthToken(accessToken: storedAccess, refreshToken: storedRefresh, receivedAt: now())
        }
        if let rejected, rejected == storedAccess, let current = currentToken, current.refreshToken != storedRefresh,
            current.accessToken != rejected, Self.wasIssued(rejected, after: current.accessToken)
        {
            // The app signed in anew through its own code: the stored pair is newer than this client's session.
            await adoptSignedInPair(AuthToken.withParsedExpiration(accessToken: rejected, refreshToken: storedRefresh))
        }
        let token: AuthToken
        if let rejected, let current = currentToken, current.refreshToken == storedRefresh {
            token = try await refreshToken(afterRejectionOf: rejected)
        } else {
            token = try await refreshToken(storedRefresh)
        }
        try persistence.save(accessToken: token.accessToken, refreshToken: token.refreshToken ?? storedRefresh)
        return token
    }

    /// Makes `token` the session, unless the session already carries its refresh token (another caller adopted
    /// it first). Runs on the actor, and the session is replaced before the first suspension, so concurrent
    /// callers adopt it once.
    func adoptSignedInPair(_ token: AuthToken) async {
        guard let session, session.token.refreshToken != token.refreshToken else { return }
        logger.debug("adopting a newer stored pair", metadata: ["token": "\(token.fingerprint)"])
        _ = try? await startSession(token, userID: token.parseUserIdFromJWT() ?? session.userID, previousState: state)
    }

    /// Whether both tokens are JWTs and `token` was issued (`iat`) strictly after `other`.
    static func wasIssued(_ token: String, after other: String) -> Bool {
        guard let issued = AuthToken(accessToken: token, receivedAt: .distantPast).claims?.issuedAt,
            let otherIssued = AuthToken(accessToken: other, receivedAt: .distantPast).claims?.issuedAt
        else { return false }
        return issued > otherIssued
    }
}
