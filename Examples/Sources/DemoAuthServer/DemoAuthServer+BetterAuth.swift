import Foundation

extension DemoAuthServer {
    /// The BetterAuth-style cookie sessions of the demo server (seed 004): `POST /api/auth/sign-up/email`,
    /// `POST /api/auth/sign-in/username` and `/sign-in/email`, `GET /api/auth/get-session`, `POST /api/auth/sign-out`,
    /// `POST /api/auth/revoke-sessions` (every session of the user: "log out on other devices"),
    /// `POST /api/auth/delete-user`, and a cookie-protected `GET /api/chat/profile`.
    ///
    /// The session is an opaque random value in an HttpOnly cookie. It lives ``sessionLifetime`` (7 days by
    /// default, seconds in the demo); a check (`get-session`) or a protected request made once ``updateAge`` has
    /// passed since the last renewal extends it and sends the cookie again (a sliding expiry, as BetterAuth's
    /// `updateAge` does). Errors are `{"error": "..."}` with seed 004's texts: `Username already exists`,
    /// `Invalid credentials`, `Session expired`.
    public struct BetterAuth: Sendable {
        /// How long a session lives after its last renewal (BetterAuth's `expiresIn`); 7 days by default.
        public var sessionLifetime: Duration
        /// How long after a renewal the next one happens (BetterAuth's `updateAge`); 1 day by default.
        public var updateAge: Duration
        /// The session cookie's name.
        public var cookieName: String
        /// Whether the cookie carries `Secure` (the demo serves plain http on loopback, so off by default).
        public var secureCookie: Bool

        /// Creates the options.
        ///
        /// - Parameters:
        ///   - sessionLifetime: How long a session lives after its last renewal; 7 days by default.
        ///   - updateAge: How long after a renewal the next one happens; 1 day by default.
        ///   - cookieName: The cookie's name; `better-auth.session_token` by default.
        ///   - secureCookie: Whether the cookie carries `Secure`; `false` by default.
        public init(
            sessionLifetime: Duration = .seconds(7 * 24 * 3600), updateAge: Duration = .seconds(24 * 3600),
            cookieName: String = "better-auth.session_token", secureCookie: Bool = false
        ) {
            self.sessionLifetime = sessionLifetime
            self.updateAge = updateAge
            self.cookieName = cookieName
            self.secureCookie = secureCookie
        }
    }

    /// The cookie-session counters (also served at `GET /debug/cookie-stats`).
    public var cookieSessionStats: CookieSessionStats { cookieSessions.stats }

    /// Ends every cookie session of a user (or of everyone), as an administrator would; the user's own route is
    /// `POST /api/auth/revoke-sessions`.
    ///
    /// - Parameter userID: The user; `nil` for everyone.
    /// - Returns: How many sessions ended.
    @discardableResult
    public func invalidateCookieSessions(userID: String? = nil) -> Int {
        cookieSessions.invalidateAll(userID: userID, reason: "administrator")
    }

    /// The ID of the cookie-session account with this username, if one signed up.
    ///
    /// - Parameter username: The username.
    /// - Returns: The account's ID.
    public func cookieAccountID(username: String) -> String? { cookieSessions.accountID(username: username) }

    /// The counters of the cookie sessions.
    public struct CookieSessionStats: Codable, Sendable, Equatable {
        /// Accounts created.
        public var signUps = 0
        /// Sign-ins accepted.
        public var signIns = 0
        /// Sign-ups and sign-ins refused (taken username, wrong password, invalid fields).
        public var refusals = 0
        /// `get-session` calls.
        public var sessionChecks = 0
        /// Sessions extended (a `Set-Cookie` sent again).
        public var renewals = 0
        /// Sessions ended by sign-out, revocation, account deletion or expiry.
        public var sessionsEnded = 0
        /// Protected requests answered 401.
        public var unauthorized = 0

        /// All zero.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case signUps = "sign_ups"
            case signIns = "sign_ins"
            case refusals
            case sessionChecks = "session_checks"
            case renewals
            case sessionsEnded = "sessions_ended"
            case unauthorized
        }
    }
}
