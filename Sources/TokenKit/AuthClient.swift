public import AuthToken
public import Foundation
public import HTTPTypes
public import NetworkRetry
public import TokenRefresh

/// The common setup in one value: a ``/TokenRefresh/TokenRefreshClient`` and an `AuthenticatedClient` for one API, with
/// URLSession and a file store in the platform's usual place by default.
///
/// ```swift
/// let client = AuthClient.oauth(
///     tokenURL: URL(string: "https://auth.example.com/oauth/token")!, clientID: "my-app",
///     apiURL: URL(string: "https://api.example.com")!, appName: "MyApp")
/// try await client.signIn(username: "ada", password: password)
/// let (response, body) = try await client.get("/v1/me")
/// ```
///
/// Make one with a factory, such as
/// ``oauth(tokenURL:clientID:clientSecret:apiURL:appName:store:transport:configuration:serverTime:)``.
///
/// It is built from the same types as the full composition, and exposes them (``tokens``, ``api``), so an
/// app can start here and take over any part later: pass its own `store:` or `transport:`, or build the
/// pieces itself as the "Getting started" article shows.
public struct AuthClient: Sendable {
    /// How ``signIn(username:password:scope:)`` signs in.
    enum SignIn: Sendable {
        /// The OAuth 2.0 password grant and authorization-code exchange at this endpoint.
        case oauth(TokenEndpoint)
        /// A FitIQ-style JSON login: `POST <loginURL>` with `{"email", "password"}` and the strategy's `X-API-Key`.
        case json(JSONEndpointRefreshStrategy, loginURL: URL)
        /// A cookie session's JSON sign-in: `POST <path>` with `{"<usernameField>", "password"}`; the session
        /// cookie comes back in `Set-Cookie`.
        case cookie(CookieSessionStrategy, path: String, usernameField: String)
        /// No sign-in: the client's credentials get every token (client credentials), or an SDK signs in.
        case none
    }

    /// The session: refreshes, the store, events and states.
    public let tokens: TokenRefreshClient
    /// The client for the API: attaches the token, refreshes once after a 401 and retries once.
    public let api: AuthenticatedClient
    /// The API's base URL; ``get(_:)`` resolves paths against it, and its origin is the one tokens go to.
    public let apiURL: URL
    let signInMethod: SignIn

    init(tokens: TokenRefreshClient, api: AuthenticatedClient, apiURL: URL, signIn: SignIn) {
        self.tokens = tokens
        self.api = api
        self.apiURL = apiURL
        self.signInMethod = signIn
    }

    /// Signs in with a user name (FitIQ: an email) and a password.
    ///
    /// OAuth: the password grant (RFC 6749 section 4.3). FitIQ-style JSON: `POST` of `{"email", "password"}` to
    /// the login path with `X-API-Key`. A cookie session: `POST` of `{"username", "password"}` (or the field the
    /// client was made with) to the sign-in path. The password is sent once and never kept or logged.
    ///
    /// - Parameters:
    ///   - username: The user name or email.
    ///   - password: The password.
    ///   - scope: The scope to ask for (OAuth only), if any.
    /// - Returns: The new token.
    /// - Throws: ``/TokenRefresh/TokenRefreshError/signInRejected`` for wrong credentials, a transient error when
    ///   the server cannot be reached, ``/TokenRefresh/TokenRefreshError/invalidArgument`` for a client-credentials
    ///   client.
    @discardableResult
    public func signIn(username: String, password: String, scope: String? = nil) async throws -> AuthToken {
        switch signInMethod {
        case .oauth(let endpoint):
            return try await tokens.signIn(
                .password(username: username, password: password, scope: scope, at: endpoint))
        case .json(let strategy, let loginURL):
            return try await tokens.signIn(strategy.signIn(at: loginURL, email: username, password: password))
        case .cookie(let strategy, let path, let usernameField):
            let body = try JSONEncoder().encode([usernameField: username, "password": password])
            return try await tokens.signIn(strategy.signIn(path: path, body: body))
        case .none:
            throw TokenRefreshError.invalidArgument
        }
    }

    /// Signs in with an authorization code from the browser part of an OAuth flow with PKCE (RFC 7636).
    ///
    /// - Parameters:
    ///   - code: The code the redirect carried.
    ///   - redirectURI: The redirect URI of the authorization request.
    ///   - pkce: The PKCE pair whose challenge went with the authorization request.
    /// - Returns: The new token.
    /// - Throws: As ``signIn(username:password:scope:)``; ``/TokenRefresh/TokenRefreshError/invalidArgument``
    ///   unless this is an OAuth client.
    @discardableResult
    public func signIn(authorizationCode code: String, redirectURI: URL, pkce: PKCE) async throws -> AuthToken {
        guard case .oauth(let endpoint) = signInMethod else { throw TokenRefreshError.invalidArgument }
        return try await tokens.signIn(.authorizationCode(code, redirectURI: redirectURI, pkce: pkce, at: endpoint))
    }

    /// Reads the stored session, on launch: signed in, expired but kept (offline), or signed out.
    ///
    /// - Returns: The state after reading the store.
    @discardableResult
    public func restoreSession() async -> AuthState { await tokens.restoreSession() }

    /// Sends a request to the API with the session's token, refreshing once after a 401.
    ///
    /// - Parameters:
    ///   - request: The request, with an absolute URL on ``apiURL``'s origin.
    ///   - body: The body, replayed on the retry.
    /// - Returns: The response and its body; never a 401.
    /// - Throws: `NetworkRetryError` or ``/TokenRefresh/TokenRefreshError``; both have user-facing
    ///   `localizedDescription`s.
    public func send(_ request: HTTPRequest, body: Data? = nil) async throws -> (HTTPResponse, Data) {
        try await api.executeWithAutoRetry(request, body: body)
    }

    /// Sends `GET` for a path on ``apiURL``.
    ///
    /// - Parameter path: The path (and query), such as `"/v1/me"`; it is appended to ``apiURL``'s path.
    /// - Returns: The response and its body.
    /// - Throws: As ``send(_:body:)``; `NetworkRetryError.invalidRequest` for a path that makes no URL.
    public func get(_ path: String) async throws -> (HTTPResponse, Data) {
        try await send(request(.get, path))
    }

    /// A request for a path on ``apiURL``.
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - path: The path (and query), appended to ``apiURL``'s path.
    /// - Returns: The request.
    /// - Throws: `NetworkRetryError.invalidRequest` for a path that makes no URL.
    public func request(_ method: HTTPRequest.Method, _ path: String) throws -> HTTPRequest {
        guard let url = Self.url(apiURL, path) else { throw NetworkRetryError.invalidRequest }
        return HTTPRequest(method: method, url: url)
    }

    /// `path` appended to `base`'s path, with one `/` between them; `nil` when that makes no URL.
    static func url(_ base: URL, _ path: String) -> URL? {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return URL(string: text + (path.hasPrefix("/") ? path : "/" + path))
    }

    /// Ends the session here: the stored session is removed, and ``tokens`` publishes `signedOut`.
    ///
    /// - Throws: A store error when the session could not be removed.
    public func signOut() async throws { try await tokens.signOut() }
}
