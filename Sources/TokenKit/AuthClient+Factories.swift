import AuthToken
public import Foundation
public import NetworkRetry
public import Persistence
public import TokenRefresh

#if canImport(Security)
    import PersistenceKeychain
#endif

extension AuthClient {
    /// An app that signs users in with OAuth 2.0 (password grant, or authorization code with PKCE) and refreshes
    /// with the `refresh_token` grant.
    ///
    /// - Parameters:
    ///   - tokenURL: The token endpoint (`https://auth.example.com/oauth/token`).
    ///   - clientID: The OAuth client ID.
    ///   - clientSecret: The client secret of a confidential client (sent with HTTP Basic); `nil` for an app.
    ///   - apiURL: The API's base URL; tokens are sent to its origin only.
    ///   - appName: Names the default store: the Keychain service `<appName>.tokens` on Apple platforms, the
    ///     directory of the file store elsewhere (``/Persistence/FileTokenStore/init(appName:configuration:)``).
    ///   - store: Where the session is kept; by default the Keychain on Apple platforms (this device only, not in
    ///     backups) and a ``/Persistence/FileTokenStore`` in the platform's usual place elsewhere.
    ///   - transport: How requests are sent; a `URLSessionTransport` by default.
    ///   - configuration: The refresh client's options.
    ///   - serverTime: Whether expiry and proactive refresh are judged by the server's clock, learned from the
    ///     `Date` of its answers (see ``/TokenRefresh/ServerClock``); `false` by default. The clock is
    ///     ``/TokenRefresh/TokenRefreshClient/Configuration/serverClock`` (one is made when it is `nil`).
    /// - Returns: The client; call ``signIn(username:password:scope:)`` or ``restoreSession()`` next.
    public static func oauth(
        tokenURL: URL, clientID: String, clientSecret: String? = nil, apiURL: URL, appName: String,
        store: (any TokenStore)? = nil, transport: any HTTPTransport = URLSessionTransport(),
        configuration: TokenRefreshClient.Configuration = TokenRefreshClient.Configuration(), serverTime: Bool = false
    ) -> AuthClient {
        let (transport, configuration) = timed(transport, configuration, serverTime: serverTime)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: clientID, secret: clientSecret), transport: transport,
            now: configuration.serverClock?.wallClock ?? AuthToken.systemNow)
        let tokens = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store ?? defaultStore(appName: appName),
            configuration: configuration)
        return AuthClient(
            tokens: tokens, api: apiClient(apiURL, transport: transport, tokens: tokens), apiURL: apiURL,
            signIn: .oauth(endpoint))
    }

    /// An app whose backend speaks FitIQ's JSON format: login at `POST <baseURL>/api/v1/auth/login` with
    /// `{"email", "password"}`, refresh at `POST <baseURL>/api/v1/auth/refresh` with `{"refreshToken": ...}`, both
    /// with `X-API-Key`; answers in camelCase or snake_case, with or without a `data` wrapper.
    ///
    /// - Parameters:
    ///   - baseURL: The backend's base URL; the API is on the same origin.
    ///   - apiKey: The value of `X-API-Key`.
    ///   - appName: Names the default store (the Keychain service `<appName>.tokens`, or the file store's directory).
    ///   - loginPath: The login path.
    ///   - refreshPath: The refresh path.
    ///   - store: Where the session is kept; the Keychain on Apple platforms and a ``/Persistence/FileTokenStore``
    ///     elsewhere by default.
    ///   - transport: How requests are sent; a `URLSessionTransport` by default.
    ///   - configuration: The refresh client's options.
    ///   - serverTime: Whether expiry and proactive refresh are judged by the server's clock (see
    ///     ``oauth(tokenURL:clientID:clientSecret:apiURL:appName:store:transport:configuration:serverTime:)``);
    ///     `false` by default.
    /// - Returns: The client; call ``signIn(username:password:scope:)`` or ``restoreSession()`` next.
    public static func fitIQ(
        baseURL: URL, apiKey: String, appName: String, loginPath: String = "/api/v1/auth/login",
        refreshPath: String = "/api/v1/auth/refresh", store: (any TokenStore)? = nil,
        transport: any HTTPTransport = URLSessionTransport(),
        configuration: TokenRefreshClient.Configuration = TokenRefreshClient.Configuration(), serverTime: Bool = false
    ) -> AuthClient {
        let (transport, configuration) = timed(transport, configuration, serverTime: serverTime)
        let strategy = JSONEndpointRefreshStrategy(
            baseURL: baseURL, path: refreshPath, apiKey: apiKey, transport: transport,
            now: configuration.serverClock?.wallClock ?? AuthToken.systemNow)
        let tokens = TokenRefreshClient(
            strategy: strategy, store: store ?? defaultStore(appName: appName), configuration: configuration)
        let loginURL = url(baseURL, loginPath) ?? baseURL
        return AuthClient(
            tokens: tokens, api: apiClient(baseURL, transport: transport, tokens: tokens), apiURL: baseURL,
            signIn: .json(strategy, loginURL: loginURL))
    }

    /// A backend that calls an API with its own credentials (the client-credentials grant, RFC 6749 section 4.4):
    /// no sign-in, the first request gets a token, and an expired one is replaced the same way.
    ///
    /// The token is kept in memory by default: the service gets a new one with its credentials after a restart,
    /// so writing it to disk would only widen where it can be read. Pass `store:` to keep it elsewhere.
    ///
    /// - Parameters:
    ///   - tokenURL: The token endpoint.
    ///   - clientID: The client ID.
    ///   - clientSecret: The client secret (sent with HTTP Basic).
    ///   - scope: The scope to ask for, if any.
    ///   - apiURL: The API's base URL; tokens are sent to its origin only.
    ///   - store: Where the token is kept; an ``/Persistence/InMemoryTokenStore`` by default.
    ///   - transport: How requests are sent; a `URLSessionTransport` by default.
    ///   - configuration: The refresh client's options.
    /// - Returns: The client; send requests with ``get(_:)`` or ``send(_:body:)`` right away.
    public static func clientCredentials(
        tokenURL: URL, clientID: String, clientSecret: String, scope: String? = nil, apiURL: URL,
        store: any TokenStore = InMemoryTokenStore(), transport: any HTTPTransport = URLSessionTransport(),
        configuration: TokenRefreshClient.Configuration = TokenRefreshClient.Configuration()
    ) -> AuthClient {
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: clientID, secret: clientSecret), transport: transport)
        let tokens = TokenRefreshClient(
            strategy: ClientCredentialsStrategy(endpoint: endpoint, scope: scope), store: store,
            configuration: configuration)
        return AuthClient(
            tokens: tokens, api: apiClient(apiURL, transport: transport, tokens: tokens), apiURL: apiURL,
            signIn: .none)
    }

    /// With server time on (or a server clock configured), the transport that feeds the server clock and the
    /// configuration that holds it; otherwise both as given.
    static func timed(
        _ transport: any HTTPTransport, _ configuration: TokenRefreshClient.Configuration, serverTime: Bool
    ) -> (any HTTPTransport, TokenRefreshClient.Configuration) {
        var configuration = configuration
        if serverTime && configuration.serverClock == nil { configuration.serverClock = ServerClock() }
        guard let clock = configuration.serverClock else { return (transport, configuration) }
        return (ServerClockTransport(transport, clock: clock), configuration)
    }

    /// The store the factories use when none is given: on Apple platforms the Keychain (as the apps it replaces used;
    /// items stay on this device and out of backups), elsewhere a ``/Persistence/FileTokenStore`` in the platform's
    /// usual place.
    static func defaultStore(appName: String) -> any TokenStore {
        #if canImport(Security)
            KeychainTokenStore(configuration: .init(service: appName + ".tokens"))
        #else
            FileTokenStore(appName: appName)
        #endif
    }

    /// An `AuthenticatedClient` that sends tokens to `apiURL`'s origin only.
    static func apiClient(
        _ apiURL: URL, transport: any HTTPTransport, tokens: any TokenProvider,
        presentation: CredentialPresentation = .bearer
    )
        -> AuthenticatedClient
    {
        AuthenticatedClient(
            transport: transport, tokenProvider: tokens,
            configuration: AuthenticatedClient.Configuration(
                allowedOrigins: HTTPOrigin(apiURL).map { [$0] } ?? [], credentialPresentation: presentation))
    }
}
