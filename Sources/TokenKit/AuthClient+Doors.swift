public import Foundation
public import HTTPTypes
public import NetworkRetry
public import Persistence
public import TokenRefresh

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension AuthClient {
    /// An app whose SDK owns the session (Clerk, Firebase): TokenKit asks the SDK for its token, once for all
    /// concurrent callers, skips the SDK's cache after a 401, and reports the session's state (<doc:SDKSessions>).
    ///
    /// There is no ``signIn(username:password:scope:)``: the SDK signs the user in. The token is kept in memory
    /// (the SDK keeps the session). At launch, ``tokens``'s `restoreSession(validatingWithProvider: true)` asks the
    /// SDK whether its session is still there.
    ///
    /// - Parameters:
    ///   - apiURL: The API's base URL; tokens are sent to its origin only.
    ///   - transport: How requests are sent; a `URLSessionTransport` by default.
    ///   - configuration: The refresh client's options.
    ///   - token: Returns the SDK's current token, or `nil` without a session; skips the SDK's cache when its
    ///     argument is `true`.
    ///   - user: Returns the signed-in user's profile from the SDK, if it has one; `nil` by default.
    /// - Returns: The client; send requests with ``get(_:)`` or ``send(_:body:)`` right away.
    public static func sdk(
        apiURL: URL, transport: any HTTPTransport = URLSessionTransport(),
        configuration: TokenRefreshClient.Configuration = TokenRefreshClient.Configuration(),
        token: @escaping @Sendable (_ forceRefresh: Bool) async throws -> String?,
        user: (@Sendable () async -> AuthUser?)? = nil
    ) -> AuthClient {
        let tokens = TokenRefreshClient(
            strategy: SDKTokenStrategy(token, user: user), configuration: configuration)
        return AuthClient(
            tokens: tokens, api: apiClient(apiURL, transport: transport, tokens: tokens), apiURL: apiURL,
            signIn: .none)
    }

    /// An app whose server keeps a session cookie (BetterAuth, Django, Rails): sign-in captures the HttpOnly
    /// cookie from `Set-Cookie`, the store keeps it, and every request to the server's origin carries it as
    /// `Cookie`, within the cookie's scope (<doc:CookieSessions>).
    ///
    /// The session is checked with the server at launch (call ``restoreSession()``).
    ///
    /// - Parameters:
    ///   - baseURL: The server's base URL (https, or http to loopback); the API is on the same origin.
    ///   - appName: Names the default store (the Keychain service `<appName>.tokens` on Apple platforms, the file
    ///     store's directory elsewhere).
    ///   - signInPath: Where ``signIn(username:password:scope:)`` posts; BetterAuth's username sign-in by default.
    ///   - usernameField: The JSON field of the user name (`"email"` for BetterAuth's `/sign-in/email`).
    ///   - cookieName: The session cookie's name; BetterAuth's by default.
    ///   - sessionPath: The session check's path; BetterAuth's by default.
    ///   - store: Where the session is kept; the Keychain on Apple platforms and a `FileTokenStore` elsewhere by
    ///     default.
    ///   - transport: How requests are sent; a `URLSessionTransport` (which keeps cookies out of URLSession's own
    ///     jar) by default.
    ///   - configuration: The refresh client's options.
    /// - Returns: The client; call ``signIn(username:password:scope:)`` or ``restoreSession()`` next.
    public static func cookieSession(
        baseURL: URL, appName: String, signInPath: String = "/api/auth/sign-in/username",
        usernameField: String = "username", cookieName: String = "better-auth.session_token",
        sessionPath: String = "/api/auth/get-session", store: (any TokenStore)? = nil,
        transport: any HTTPTransport = URLSessionTransport(),
        configuration: TokenRefreshClient.Configuration = TokenRefreshClient.Configuration()
    ) -> AuthClient {
        let cookie = CookieSessionStrategy(
            baseURL: baseURL, cookieName: cookieName, sessionPath: sessionPath, transport: transport)
        let tokens = TokenRefreshClient(
            strategy: cookie, store: store ?? defaultStore(appName: appName), configuration: configuration)
        return AuthClient(
            tokens: tokens,
            api: apiClient(baseURL, transport: transport, tokens: tokens, presentation: cookie.presentation),
            apiURL: baseURL, signIn: .cookie(cookie, path: signInPath, usernameField: usernameField))
    }

    /// A backend that calls an API on behalf of many users, each with an OAuth session in `store`: one refresh
    /// client per account, made on first use, with its own single flight. Replicas share one store
    /// (`PostgresTokenStore`), so each session is refreshed once across them (<doc:ManyAccountsAndReplicas>).
    ///
    /// - Parameters:
    ///   - tokenURL: The token endpoint.
    ///   - clientID: The OAuth client ID.
    ///   - clientSecret: The client secret (sent with HTTP Basic), if the client has one.
    ///   - apiURL: The API's base URL; tokens are sent to its origin only.
    ///   - store: Where every account's session is kept.
    ///   - transport: How requests are sent; a `URLSessionTransport` by default (`AsyncHTTPClientTransport` is the
    ///     one to pass on Linux).
    ///   - configuration: The bound on clients, their idle timeout, and each client's options.
    /// - Returns: The accounts; send requests with ``Accounts/get(_:for:)`` right away.
    public static func accounts(
        tokenURL: URL, clientID: String, clientSecret: String? = nil, apiURL: URL, store: any TokenStore,
        transport: any HTTPTransport = URLSessionTransport(),
        configuration: TokenSessionRegistry.Configuration = TokenSessionRegistry.Configuration()
    ) -> Accounts {
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: clientID, secret: clientSecret), transport: transport)
        let registry = TokenSessionRegistry(store: store, configuration: configuration) { _ in
            OAuthRefreshStrategy(endpoint: endpoint)
        }
        return Accounts(registry: registry, apiURL: apiURL, transport: transport)
    }

    /// Many users' sessions in one process, and the API they are used for:
    /// ``accounts(tokenURL:clientID:clientSecret:apiURL:store:transport:configuration:)``.
    public struct Accounts: Sendable {
        /// The sessions, one refresh client per account.
        public let registry: TokenSessionRegistry
        /// The API's base URL; paths are resolved against it, and its origin is the one tokens go to.
        public let apiURL: URL
        let transport: any HTTPTransport

        init(registry: TokenSessionRegistry, apiURL: URL, transport: any HTTPTransport) {
            self.registry = registry
            self.apiURL = apiURL
            self.transport = transport
        }

        /// The client for the API on behalf of `account`: attaches that account's token, refreshes it once after a
        /// 401 and retries once.
        ///
        /// - Parameter account: The account (a user ID).
        /// - Returns: The client. It goes through the registry on every call, so it outlives the eviction of the
        ///   account's idle refresh client.
        public func api(for account: String) -> AuthenticatedClient {
            AuthClient.apiClient(apiURL, transport: transport, tokens: registry.tokenProvider(for: account))
        }

        /// Sends `GET` for a path on ``apiURL`` on behalf of `account`.
        ///
        /// - Parameters:
        ///   - path: The path (and query), appended to ``apiURL``'s path.
        ///   - account: The account.
        /// - Returns: The response and its body; never a 401 the account's session could fix.
        /// - Throws: `NetworkRetryError` or `TokenRefreshError` (``/TokenRefresh/TokenRefreshError/signedOut`` when
        ///   the account has no stored session).
        public func get(_ path: String, for account: String) async throws -> (HTTPResponse, Data) {
            guard let url = AuthClient.url(apiURL, path) else { throw NetworkRetryError.invalidRequest }
            return try await api(for: account).executeWithAutoRetry(HTTPRequest(method: .get, url: url))
        }
    }
}
