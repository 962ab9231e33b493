public import AuthToken
public import Foundation
import HTTPTypes
public import NetworkRetry
public import Persistence
public import TokenRefresh
public import TokenVerification

/// Signs a user in through the browser with the authorization code grant and PKCE (RFC 6749 section 4.1,
/// RFC 7636), checks the redirect, verifies the OpenID Connect ID token, and stores the session in a
/// ``/TokenRefresh/TokenRefreshClient``.
///
/// ```swift
/// let server = try await AuthorizationServer.discover(issuer: issuerURL, transport: transport)
/// let flow = AuthorizationCodeFlow(
///     server: server, client: OAuthClient(id: "my-app"),
///     configuration: .init(redirectURI: URL(string: "com.example.app:/oauth/callback")!),
///     tokens: tokens, transport: transport)
/// try await flow.signIn(using: WebAuthenticationSessionUserAgent())
/// print(tokens.currentUser?.email ?? "-")
/// ```
///
/// What a sign-in checks, in order, before a code is exchanged: the redirect is at the redirect URI; its `state` is
/// the one this sign-in sent; the sign-in is still open (a redirect is accepted once); `iss`, when the server sends
/// it or promises it, is the server's issuer (RFC 9207); and the server sent no `error`. After the exchange, the ID
/// token must verify against the server's keys, with its `iss`, `aud` (the client ID), `azp`, `exp`, `iat`, the
/// sign-in's `nonce`, and `at_hash`/`c_hash` when present. Only then is the session stored, with the verified claims
/// as ``/TokenRefresh/TokenRefreshClient/currentUser``. A failed check stores nothing.
public actor AuthorizationCodeFlow {
    /// What the flow asks for.
    public struct Configuration: Sendable {
        /// Where the server sends the browser back: a claimed `https` URL, a private-use scheme
        /// (`com.example.app:/oauth/callback`), or a loopback URL (``LoopbackRedirectUserAgent/redirectURI``).
        public var redirectURI: URL
        /// The scopes asked for. Default `openid profile email`; add `offline_access` where the server issues
        /// refresh tokens only then. Without `openid` there is no ID token and no verified profile.
        public var scopes: [String]
        /// Further authorization request parameters (`audience`, `resource`, `ui_locales`). They cannot replace
        /// the ones the flow sets (`state`, `nonce`, `code_challenge`, `redirect_uri`, ...).
        public var additionalParameters: [String: String]
        /// Where the server sends the browser after a logout at the provider, if the app registered one.
        public var postLogoutRedirectURI: URL?
        /// Whether to push the request to the server first (RFC 9126) when it offers that. Default `true`.
        public var usesPushedAuthorization: Bool
        /// How long a started sign-in waits for its redirect. Default 10 minutes.
        public var flightLifetime: TimeInterval
        /// The session's DPoP prover (RFC 9449), to bind the tokens to its key: the authorization request (and the
        /// pushed one) carries its thumbprint as `dpop_jkt`, and the code exchange a proof. `nil` by default.
        public var dpop: DPoPProver?

        /// A configuration.
        ///
        /// - Parameters:
        ///   - redirectURI: The redirect URI registered for the client.
        ///   - scopes: The scopes; `openid profile email` by default.
        ///   - additionalParameters: Further request parameters.
        ///   - postLogoutRedirectURI: The post-logout redirect URI, if any.
        ///   - usesPushedAuthorization: Whether to use pushed authorization requests when offered.
        ///   - flightLifetime: How long a sign-in waits for its redirect, in seconds.
        ///   - dpop: The session's DPoP prover, to bind the tokens to its key; `nil` by default.
        public init(
            redirectURI: URL, scopes: [String] = ["openid", "profile", "email"],
            additionalParameters: [String: String] = [:], postLogoutRedirectURI: URL? = nil,
            usesPushedAuthorization: Bool = true, flightLifetime: TimeInterval = 600, dpop: DPoPProver? = nil
        ) {
            self.dpop = dpop
            self.redirectURI = redirectURI
            self.scopes = scopes
            self.additionalParameters = additionalParameters
            self.postLogoutRedirectURI = postLogoutRedirectURI
            self.usesPushedAuthorization = usesPushedAuthorization
            self.flightLifetime = flightLifetime
        }
    }

    /// What one started sign-in keeps until its redirect arrives.
    private struct Flight {
        let pkce: PKCE
        let nonce: String?
        let redirectURI: URL
        let startedAt: Date
    }

    nonisolated let server: AuthorizationServer
    nonisolated let configuration: Configuration
    nonisolated let tokens: TokenRefreshClient
    private nonisolated let endpoint: TokenEndpoint
    private nonisolated let idTokenCheck: IDTokenCheck?
    private nonisolated let idTokenStore: any TokenStore
    private nonisolated let now: @Sendable () -> Date
    private var flights: [String: Flight] = [:]

    /// A flow for `client` at `server`, storing its session in `tokens`.
    ///
    /// - Parameters:
    ///   - server: The server's metadata (``AuthorizationServer/discover(issuer:transport:now:)``).
    ///   - client: The client: its ID, and its secret for a confidential client.
    ///   - configuration: The redirect URI, scopes and options.
    ///   - tokens: The session client the sign-in stores into.
    ///   - transport: The transport for the token, PAR, revocation and key set requests.
    ///   - keySource: Where the ID token's keys come from; by default the server's `jwks_uri` over `transport`.
    ///   - idTokenStore: Where the ID token is kept between launches, for the logout at the provider (under the
    ///     session's account with `.id_token` appended); in memory by default. Pass the session's own store.
    ///   - now: The wall clock.
    public init(
        server: AuthorizationServer, client: OAuthClient, configuration: Configuration, tokens: TokenRefreshClient,
        transport: any HTTPTransport, keySource: (any JWKSSource)? = nil, idTokenStore: (any TokenStore)? = nil,
        now: @escaping @Sendable () -> Date = AuthToken.systemNow
    ) {
        self.server = server
        self.configuration = configuration
        self.tokens = tokens
        self.now = now
        // With DPoP, every request to the token endpoint (the code exchange, a pushed request) carries a proof.
        let tokenTransport: any HTTPTransport =
            configuration.dpop.map { DPoPTransport(transport, prover: $0) } ?? transport
        endpoint = TokenEndpoint(url: server.tokenEndpoint, client: client, transport: tokenTransport, now: now)
        let keys: (any JWKSSource)? =
            keySource
            ?? server.jwksURI.map { url in
                RemoteJWKSSource(jwksURL: url, fetch: Self.fetch(via: transport))
            }
        idTokenCheck = keys.map { IDTokenCheck(issuer: server.issuer, clientID: client.id, keySource: $0, now: now) }
        self.idTokenStore = idTokenStore ?? InMemoryTokenStore()
    }

    private var idTokenAccount: String { tokens.configuration.account + ".id_token" }
    private var asksForOpenID: Bool { configuration.scopes.contains("openid") }

    // MARK: - Signing in

    /// Signs in through `userAgent`, from opening the browser to the stored session.
    ///
    /// - Parameters:
    ///   - userAgent: The browser to show the sign-in in.
    ///   - prompt: The OpenID Connect `prompt` (`login`, `consent`, `select_account`, `none`), if any.
    ///   - loginHint: A hint of who signs in (an e-mail), if known.
    /// - Returns: The new session's token.
    /// - Throws: A ``SignInError`` for a refused redirect or ID token, or for the browser's cancellation; a
    ///   `TokenRefreshError` from the token endpoint (``/TokenRefresh/TokenRefreshError/signInRejected`` for a used
    ///   or expired code).
    @discardableResult
    public func signIn(
        using userAgent: any AuthorizationUserAgent, prompt: String? = nil, loginHint: String? = nil
    ) async throws -> AuthToken {
        let request = try await start(prompt: prompt, loginHint: loginHint)
        let redirect: URL
        do {
            redirect = try await userAgent.authorize(request)
        } catch {
            flights[request.state] = nil
            if error is CancellationError { throw SignInError.cancelled }
            throw error
        }
        return try await finish(redirect: redirect, for: request)
    }

    /// Starts a sign-in: a fresh PKCE pair, `state` and `nonce`, kept until the redirect; pushed to the server first
    /// when it offers pushed authorization requests.
    ///
    /// - Parameters:
    ///   - prompt: The OpenID Connect `prompt`, if any.
    ///   - loginHint: A hint of who signs in, if known.
    /// - Returns: The request; open its ``AuthorizationRequest/url``.
    /// - Throws: A `TokenRefreshError` when the pushed request could not be sent, ``SignInError/authorizationFailed``
    ///   when the server refused it.
    public func start(prompt: String? = nil, loginHint: String? = nil) async throws -> AuthorizationRequest {
        let pkce = PKCE.generate()
        let state = PKCE.randomValue()
        let nonce = asksForOpenID ? PKCE.randomValue() : nil
        var parameters: [(String, String)] = [
            ("response_type", "code"), ("client_id", endpoint.client.id),
            ("redirect_uri", configuration.redirectURI.absoluteString),
            ("scope", configuration.scopes.joined(separator: " ")), ("state", state),
            ("code_challenge", pkce.challenge), ("code_challenge_method", pkce.challengeMethod),
        ]
        if let nonce { parameters.append(("nonce", nonce)) }
        if let prompt { parameters.append(("prompt", prompt)) }
        if let loginHint { parameters.append(("login_hint", loginHint)) }
        // RFC 9449 section 10: the code is bound to the key, so only its holder can exchange it.
        if let dpop = configuration.dpop { parameters.append(("dpop_jkt", dpop.thumbprint)) }
        let reserved = Set(parameters.map(\.0)).union(["request_uri", "request"])
        for (name, value) in configuration.additionalParameters.sorted(by: { $0.key < $1.key })
        where !reserved.contains(name) {
            parameters.append((name, value))
        }
        let url: URL
        if configuration.usesPushedAuthorization, let par = server.pushedAuthorizationRequestEndpoint {
            let requestURI = try await push(parameters.filter { $0.0 != "client_id" }, to: par)
            url = try Self.url(
                server.authorizationEndpoint, [("client_id", endpoint.client.id), ("request_uri", requestURI)])
        } else {
            url = try Self.url(server.authorizationEndpoint, parameters)
        }
        pruneFlights(keeping: 15)
        flights[state] = Flight(pkce: pkce, nonce: nonce, redirectURI: configuration.redirectURI, startedAt: now())
        return AuthorizationRequest(url: url, redirectURI: configuration.redirectURI, state: state)
    }

    /// Finishes a sign-in with the redirect the browser came back with: checks it, exchanges the code, verifies the
    /// ID token and stores the session.
    ///
    /// - Parameters:
    ///   - redirect: The redirect URL.
    ///   - request: The request it answers.
    /// - Returns: The new session's token.
    /// - Throws: ``SignInError/foreignRedirect``, ``SignInError/stateMismatch``, ``SignInError/unknownFlight``,
    ///   ``SignInError/issuerMismatch``, ``SignInError/accessDenied``, ``SignInError/authorizationFailed``,
    ///   ``SignInError/missingCode``, ``SignInError/idTokenRejected``, ``SignInError/nonceMismatch``; a
    ///   `TokenRefreshError` from the token endpoint. Nothing is stored after a failure.
    @discardableResult
    public func finish(redirect: URL, for request: AuthorizationRequest) async throws -> AuthToken {
        let answer = try AuthorizationRedirect(redirect, redirectURI: request.redirectURI)
        guard let state = answer.state, IDTokenCheck.equal(state, request.state) else {
            throw SignInError.stateMismatch
        }
        pruneFlights()
        // Taken out before anything else: a redirect is accepted once, whatever happens next.
        guard let flight = flights.removeValue(forKey: request.state) else { throw SignInError.unknownFlight }
        if let issuer = answer.issuer {
            guard issuer == server.issuer else { throw SignInError.issuerMismatch }
        } else if server.sendsIssuerInRedirect {
            throw SignInError.issuerMismatch
        }
        if let error = answer.error {
            let code = AuthorizationRedirect.sanitizedCode(error)
            throw code == "access_denied"
                ? SignInError.accessDenied : SignInError.authorizationFailed.with(oauthError: code)
        }
        guard let code = answer.code, !code.isEmpty else { throw SignInError.missingCode }
        let parameters = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", flight.redirectURI.absoluteString),
            ("code_verifier", flight.pkce.verifier),
        ]
        let verified = VerifiedIDToken()
        let token: AuthToken
        do {
            token = try await exchange(parameters, flight: flight, code: code, verified: verified)
        } catch let error as TokenRefreshError {
            // The session client reports what the grant threw as transient; give the sign-in's own error back.
            if let inner = error.underlying as? SignInError { throw inner }
            throw error
        }
        if let idToken = verified.value {
            let kept = AuthToken(accessToken: idToken, receivedAt: now())
            try? await idTokenStore.save(
                StoredSession(token: kept, userID: tokens.currentUser?.id, generation: 0), account: idTokenAccount,
                condition: .always)
        }
        return token
    }

    /// Reads the stored session at launch, and the profile its ID token carried
    /// (``/TokenRefresh/TokenRefreshClient/currentUser``).
    ///
    /// The stored ID token is verified again before its claims are used: its signature against the server's keys,
    /// its `iss` and `aud`, as of when it arrived, and its subject must be the session's user. One that fails (or
    /// whose keys cannot be fetched, offline) supplies no profile; the session itself is restored either way.
    ///
    /// - Returns: The session's state.
    @discardableResult
    public func restoreSession() async -> AuthState {
        let state = await tokens.restoreSession()
        guard case .found(let stored) = await idTokenStore.load(account: idTokenAccount), let idTokenCheck,
            let claims = try? await idTokenCheck.asOf(stored.token.receivedAt).verify(
                stored.token.accessToken, nonce: nil, accessToken: nil, code: nil),
            claims.subject == stored.userID
        else { return state }
        await tokens.setProfile(IDTokenCheck.user(claims))
        return state
    }

    // MARK: - Signing out

    /// Signs out here and at the provider: ends the local session, revokes its refresh token when the server has a
    /// revocation endpoint (RFC 7009, best effort; skipped when the session client revokes by itself), and, with a
    /// `userAgent` and an end-session endpoint, opens the RP-initiated logout page with `id_token_hint`, `client_id`,
    /// `post_logout_redirect_uri` and `state`, waiting for the redirect back when a post-logout URI is configured
    /// (without one, it opens the page with ``AuthorizationUserAgent/open(_:)`` and returns).
    ///
    /// The local session ends first, whatever the provider answers.
    ///
    /// - Parameter userAgent: The browser for the logout page; `nil` to skip the logout at the provider.
    /// - Throws: A `TokenRefreshError` when the local session could not be removed from the store;
    ///   ``SignInError/stateMismatch`` when the post-logout redirect carries another `state`; the user agent's
    ///   errors.
    public func signOut(using userAgent: (any AuthorizationUserAgent)? = nil) async throws {
        var idToken: String?
        if case .found(let stored) = await idTokenStore.load(account: idTokenAccount) {
            idToken = stored.token.accessToken
        }
        let refreshToken = tokens.currentToken?.refreshToken
        var localFailure: (any Error)?
        do {
            try await tokens.signOut()
        } catch {
            localFailure = error
        }
        try? await idTokenStore.remove(account: idTokenAccount, condition: .always)
        if let refreshToken, tokens.configuration.revocation == nil, let url = server.revocationEndpoint {
            try? await TokenRevocation.rfc7009(url: url, using: endpoint).revoke(refreshToken)
        }
        if let userAgent, let endSession = server.endSessionEndpoint {
            let state = PKCE.randomValue()
            var parameters = [("client_id", endpoint.client.id), ("state", state)]
            if let idToken { parameters.append(("id_token_hint", idToken)) }
            if let back = configuration.postLogoutRedirectURI {
                parameters.append(("post_logout_redirect_uri", back.absoluteString))
            }
            let url = try Self.url(endSession, parameters)
            if let back = configuration.postLogoutRedirectURI {
                let redirect = try await userAgent.authorize(
                    AuthorizationRequest(url: url, redirectURI: back, state: state))
                let answer = try AuthorizationRedirect(redirect, redirectURI: back)
                if let echoed = answer.state, !IDTokenCheck.equal(echoed, state) { throw SignInError.stateMismatch }
            } else {
                // No redirect comes back without a registered post-logout URI (RP-Initiated Logout 1.0 section 3):
                // show the page and return.
                try? await userAgent.open(url)
            }
        }
        if let localFailure { throw localFailure }
    }

    // MARK: - Helpers

    /// Exchanges the code inside a sign-in of the session client, so the session is stored only after the ID token
    /// verified.
    private func exchange(
        _ parameters: [(String, String)], flight: Flight, code: String, verified: VerifiedIDToken
    ) async throws -> AuthToken {
        try await tokens.signIn(
            .custom { [endpoint, idTokenCheck, asksForOpenID] in
                let response = try await endpoint.requestToken(parameters, isSignIn: true)
                guard asksForOpenID else { return response }
                guard let idToken = response.idToken, let idTokenCheck else { throw SignInError.idTokenRejected }
                let claims = try await idTokenCheck.verify(
                    idToken, nonce: flight.nonce, accessToken: response.accessToken, code: code)
                verified.set(idToken)
                return TokenResponse(
                    accessToken: response.accessToken, refreshToken: response.refreshToken,
                    tokenType: response.tokenType, expiresIn: response.expiresIn, scope: response.scope,
                    userID: claims.subject, user: IDTokenCheck.user(claims))
            })
    }

    /// Forgets sign-ins whose redirect never came within the lifetime, and, when `limit` is given, all but the newest
    /// `limit` of the rest (an app that starts sign-ins in a loop holds a bounded number).
    private func pruneFlights(keeping limit: Int = .max) {
        let cutoff = now().addingTimeInterval(-configuration.flightLifetime)
        flights = flights.filter { $0.value.startedAt > cutoff }
        while flights.count > limit, let oldest = flights.min(by: { $0.value.startedAt < $1.value.startedAt }) {
            flights[oldest.key] = nil
        }
    }

    /// Sends a pushed authorization request (RFC 9126 section 2) and returns its `request_uri`.
    private func push(_ parameters: [(String, String)], to url: URL) async throws -> String {
        let pushEndpoint = TokenEndpoint(
            url: url, client: endpoint.client, transport: endpoint.transport, now: endpoint.now)
        let (response, body) = try await pushEndpoint.post(parameters)
        guard (200..<300).contains(response.status.code) else {
            let code = (try? JSONDecoder().decode([String: String].self, from: body))?["error"]
            throw SignInError.authorizationFailed.with(
                oauthError: AuthorizationRedirect.sanitizedCode(code ?? "server_error"))
        }
        struct Pushed: Decodable {
            // swift-format-ignore: AlwaysUseLowerCamelCase
            let request_uri: String
        }
        guard let pushed = try? JSONDecoder().decode(Pushed.self, from: body), !pushed.request_uri.isEmpty else {
            throw SignInError.authorizationFailed.with(oauthError: "invalid_response")
        }
        return pushed.request_uri
    }

    /// `base` with `parameters` added to its query.
    static func url(_ base: URL, _ parameters: [(String, String)]) throws(SignInError) -> URL {
        // Spaces as %20, not `+`: many servers read a URL query by RFC 3986 rules (Hummingbird's, for one) and keep
        // a `+` as a plus sign. A literal `+` is %2B either way.
        let query = parameters.map { FormEncoding.basicEncode($0.0) + "=" + FormEncoding.basicEncode($0.1) }
            .joined(separator: "&")
        let text = base.absoluteString
        let joined = text + (base.query(percentEncoded: true) == nil ? "?" : "&") + query
        guard let url = URL(string: joined), let origin = HTTPOrigin(url) else { throw .insecureURL }
        guard origin.allowsCredentials else { throw .insecureURL }
        return url
    }

    /// A key set fetch over `transport`.
    static func fetch(via transport: any HTTPTransport) -> RemoteJWKSSource.Fetch {
        { url in
            let (response, body) = try await HTTPGet.fetch(url, via: transport)
            guard response.status.code == 200 else { throw SignInError.discoveryFailed }
            let maxAge = HTTPGet.maxAge(response.headerFields[.cacheControl]).map { Duration.seconds($0) }
            return RemoteJWKSSource.Response(body: body, maxAge: maxAge)
        }
    }
}

extension AuthorizationCodeFlow: CustomReflectable {
    /// The issuer, the client and the redirect URI; never an open sign-in's `state`, nonce or verifier (`dump(flow)`
    /// shows this instead of the actor's fields).
    public nonisolated var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "issuer": server.issuer, "clientID": endpoint.client.id, "redirectURI": configuration.redirectURI,
                "scopes": configuration.scopes,
            ], displayStyle: .class)
    }
}

/// The ID token verified inside the grant, handed out of it.
private final class VerifiedIDToken: Sendable {
    private let stored = LockedValue<String?>(nil)
    var value: String? { stored.withLock { $0 } }
    func set(_ token: String) { stored.withLock { $0 = token } }
}
