extension DemoAuthServer {
    /// Everything that shapes the demo server's behaviour, with defaults that suit a first run.
    ///
    /// Lifetimes and the grace window are whole seconds (JWT `exp` and OAuth `expires_in` are whole seconds);
    /// a fractional part is dropped.
    public struct Configuration: Sendable {
        /// The loopback port to bind; `0` asks the system for a free one.
        public var port: Int

        /// The `iss` claim of every access token.
        public var issuer: String

        /// The `aud` claim of every access token; protected resources accept only this audience.
        public var audience: String

        /// The realm named in `WWW-Authenticate` challenges.
        public var realm: String

        /// How long an access token lives (`exp - iat`, and `expires_in` in token responses).
        public var accessTokenLifetime: Duration

        /// How long a refresh token lives from the moment it is issued.
        public var refreshTokenLifetime: Duration

        /// Whether every refresh returns a new refresh token and retires the presented one.
        ///
        /// When `false`, a refresh answers with an access token only, and the refresh token stays valid
        /// (RFC 6749 section 6 lets the server omit `refresh_token`).
        public var rotateRefreshTokens: Bool

        /// Whether presenting a retired refresh token revokes its whole family (every token descended from the
        /// same login). When `false`, a retired token is refused with `invalid_grant` and the family lives on.
        public var reuseDetection: Bool

        /// How long after a rotation the retired refresh token may still be presented; it then returns the same
        /// new pair instead of counting as reuse. `.zero` turns the grace window off.
        public var graceWindow: Duration

        /// Whether a retired refresh token presented within ``graceWindow`` gets a new rotating pair (Auth0's
        /// reuse interval) instead of the pair already issued. Only the token rotated last in its family may be
        /// presented so: once a newer token was rotated, presenting it counts as reuse. Off by default.
        public var graceIssuesNewPair = false

        /// The value the FitIQ-style endpoints require in `X-API-Key`; `nil` turns the check off.
        public var apiKey: String?

        /// The accounts that can log in.
        public var users: [User]

        /// The OAuth 2.0 clients the token and revocation endpoints accept.
        public var clients: [Client]

        /// Faults to inject from the start (see ``Faults``); also settable at run time.
        public var faults: Faults

        /// Whether the `/debug/...` endpoints (statistics, fault injection, revoking every session) are served.
        public var debugEndpoints: Bool

        /// The BetterAuth-style cookie sessions: lifetime, renewal, cookie name (see ``BetterAuth``).
        public var betterAuth = BetterAuth()

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - port: The loopback port; `0` (the default) picks a free one.
        ///   - issuer: The `iss` claim.
        ///   - audience: The `aud` claim.
        ///   - realm: The realm in `WWW-Authenticate` challenges.
        ///   - accessTokenLifetime: Access-token lifetime, 15 minutes by default.
        ///   - refreshTokenLifetime: Refresh-token lifetime, 30 days by default.
        ///   - rotateRefreshTokens: Whether refreshes rotate the refresh token (on by default).
        ///   - reuseDetection: Whether reuse of a retired refresh token revokes its family (on by default).
        ///   - graceWindow: The reuse grace window, off by default.
        ///   - apiKey: The `X-API-Key` value the FitIQ-style endpoints require.
        ///   - users: The accounts; by default ``User/demo``.
        ///   - clients: The OAuth clients; by default ``Client/publicApp`` and ``Client/confidentialBackend``.
        ///   - faults: Faults to inject from the start; none by default.
        ///   - debugEndpoints: Whether the `/debug/...` endpoints are served (on by default).
        public init(
            port: Int = 0,
            issuer: String = "http://demo-auth.tokenkit.invalid",
            audience: String = "tokenkit-demo-api",
            realm: String = "tokenkit-demo",
            accessTokenLifetime: Duration = .seconds(900),
            refreshTokenLifetime: Duration = .seconds(30 * 24 * 3600),
            rotateRefreshTokens: Bool = true,
            reuseDetection: Bool = true,
            graceWindow: Duration = .zero,
            apiKey: String? = "demo-api-key",
            users: [User] = [.demo],
            clients: [Client] = [.publicApp, .confidentialBackend],
            faults: Faults = Faults(),
            debugEndpoints: Bool = true
        ) {
            self.port = port
            self.issuer = issuer
            self.audience = audience
            self.realm = realm
            self.accessTokenLifetime = accessTokenLifetime
            self.refreshTokenLifetime = refreshTokenLifetime
            self.rotateRefreshTokens = rotateRefreshTokens
            self.reuseDetection = reuseDetection
            self.graceWindow = graceWindow
            self.apiKey = apiKey
            self.users = users
            self.clients = clients
            self.faults = faults
            self.debugEndpoints = debugEndpoints
        }
    }

    /// An account that can log in with an email address and a password.
    public struct User: Sendable, Hashable {
        /// The stable user identifier, used as the access token's `sub` claim.
        public var id: String

        /// The login name (the `email` of the JSON login, the `username` of the password grant).
        public var email: String

        /// The password. Demo only: kept in clear in memory, never logged.
        public var password: String

        /// Creates an account.
        ///
        /// - Parameters:
        ///   - id: The `sub` claim value.
        ///   - email: The login name.
        ///   - password: The password.
        public init(id: String, email: String, password: String) {
            self.id = id
            self.email = email
            self.password = password
        }

        /// The demo account: `demo@example.com` with the password `password123`.
        public static let demo = User(id: "user-1001", email: "demo@example.com", password: "password123")
    }

    /// An OAuth 2.0 client known to the token and revocation endpoints.
    public struct Client: Sendable, Hashable {
        /// The `client_id`.
        public var id: String

        /// The client secret of a confidential client; `nil` for a public client (which authenticates with its
        /// `client_id` alone and cannot use the client-credentials grant).
        public var secret: String?

        /// Creates a client.
        ///
        /// - Parameters:
        ///   - id: The `client_id`.
        ///   - secret: The secret of a confidential client, or `nil` for a public one.
        public init(id: String, secret: String? = nil) {
            self.id = id
            self.secret = secret
        }

        /// A public client, `demo-app`, as a mobile app would be.
        public static let publicApp = Client(id: "demo-app")

        /// A confidential client, `demo-backend` with the secret `demo-secret`, as a backend would be.
        public static let confidentialBackend = Client(id: "demo-backend", secret: "demo-secret")
    }
}

extension Duration {
    /// The whole seconds in this duration (fractions dropped).
    var wholeSeconds: Int { Int(components.seconds) }
}

extension DemoAuthServer.User: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The account without its password, such as `User(id: user-1001, email: demo@example.com, password: redacted)`.
    public var description: String { "User(id: \(id), email: \(email), password: redacted)" }

    /// The same as ``description``: the password never appears.
    public var debugDescription: String { description }

    /// A mirror without the password, so `dump()` does not print it.
    public var customMirror: Mirror { Mirror(self, children: ["id": id, "email": email], displayStyle: .struct) }
}

extension DemoAuthServer.Client: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The client without its secret, such as `Client(id: demo-backend, confidential)`.
    public var description: String { "Client(id: \(id), \(secret == nil ? "public" : "confidential"))" }

    /// The same as ``description``: the secret never appears.
    public var debugDescription: String { description }

    /// A mirror without the secret, so `dump()` does not print it.
    public var customMirror: Mirror {
        Mirror(self, children: ["id": id, "confidential": secret != nil], displayStyle: .struct)
    }
}
