public import Foundation

/// An OAuth 2.0 access token, its optional refresh token, and what is known about its lifetime.
///
/// `AuthToken` is the vocabulary every TokenKit module speaks. It is a value: token material is `let`, and a refreshed
/// token is a new value. Its guarantees:
/// - expiry is measured from receipt when the lifetime is known (`expires_in`, or `exp - iat`), so a device clock
///   that is off does not expire every token; otherwise the raw `exp` claim (``expirationClaim``) is compared with
///   the clock, and a token with neither has no known expiry;
/// - ``willExpireSoon`` turns true 5 minutes (plus a 10-second leeway) before expiry, or a third of the lifetime before
///   it for a token that lives less than 15 minutes (``ExpiryPolicy`` holds the margins);
/// - two tokens are equal when they carry the same access token, refresh token, type, scope and ``expiresAt``;
/// - `description`, `debugDescription`, `customMirror` and ``sanitizedDescription`` never contain token text.
///
/// The expiry rules in full are in the module's overview.
public struct AuthToken: Sendable, Hashable, Codable {
    /// The access token sent as `Authorization: Bearer <accessToken>`.
    public let accessToken: String
    /// The refresh token, if the flow issued one.
    public let refreshToken: String?
    /// The token type, normally `Bearer`.
    public let tokenType: String
    /// The granted scope (space separated), if the server said.
    public let scope: String?
    /// The instant this token was received, by the local wall clock.
    public let receivedAt: Date
    /// The lifetime measured from ``receivedAt``: the OAuth `expires_in`, or `exp - iat` of a JWT.
    public let lifetime: TimeInterval?
    /// The raw `exp` claim of a JWT access token (server clock), or an absolute expiry from an older format.
    public let expirationClaim: Date?
    /// The token's whole lifetime, which the expiry margins scale with: ``lifetime``, else `exp - iat` of a JWT
    /// (also one rebuilt from storage), else the time from receipt to `exp` of a JWT fresh from an endpoint.
    /// `nil` (a token rebuilt from strings without `iat`, or from an absolute expiry) means the fixed margins.
    let knownLifetime: TimeInterval?

    /// Creates a token from its parts.
    ///
    /// - Parameters:
    ///   - accessToken: The access token.
    ///   - refreshToken: The refresh token, if any.
    ///   - tokenType: The token type; defaults to `Bearer`.
    ///   - scope: The granted scope, if known.
    ///   - receivedAt: When the token was received, by the local wall clock.
    ///   - lifetime: The lifetime from receipt (`expires_in`), if known.
    ///   - expirationClaim: An absolute expiry (a JWT `exp`), if known.
    public init(
        accessToken: String,
        refreshToken: String? = nil,
        tokenType: String = "Bearer",
        scope: String? = nil,
        receivedAt: Date,
        lifetime: TimeInterval? = nil,
        expirationClaim: Date? = nil
    ) {
        let lifetime = lifetime.flatMap(Self.sanitized)
        self.init(
            accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope,
            receivedAt: receivedAt, lifetime: lifetime, expirationClaim: expirationClaim,
            knownLifetime: lifetime ?? (expirationClaim == nil ? nil : Self.issuedLifetime(of: accessToken)))
    }

    /// Creates a token whose whole lifetime (for the expiry margins) the caller worked out already.
    init(
        accessToken: String, refreshToken: String?, tokenType: String, scope: String?, receivedAt: Date,
        lifetime: TimeInterval?, expirationClaim: Date?, knownLifetime: TimeInterval?
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenType = tokenType
        self.scope = scope
        self.receivedAt = receivedAt
        self.lifetime = lifetime
        self.expirationClaim = expirationClaim
        self.knownLifetime = knownLifetime
    }

    /// `seconds` when it is a finite, non-negative lifetime, else `nil`.
    static func sanitized(_ seconds: TimeInterval) -> TimeInterval? {
        seconds.isFinite && seconds >= 0 ? seconds : nil
    }

    /// `exp - iat` of a JWT access token that carries both (with `exp` after `iat`), else `nil`.
    static func issuedLifetime(of accessToken: String) -> TimeInterval? {
        guard let claims = try? JWT(parsing: accessToken).claims else { return nil }
        return issuedLifetime(of: claims)
    }

    /// `exp - iat` when both claims are there and `exp` is after `iat`, else `nil`.
    static func issuedLifetime(of claims: JWTClaims) -> TimeInterval? {
        guard let expiration = claims.expiration, let issuedAt = claims.issuedAt, expiration > issuedAt else {
            return nil
        }
        return expiration.timeIntervalSince(issuedAt)
    }

    /// The instant the token stops being usable: `receivedAt + lifetime` when the lifetime is known,
    /// otherwise the raw `exp` claim, otherwise `nil`.
    public var expiresAt: Date? {
        if let lifetime { return receivedAt.addingTimeInterval(lifetime) }
        return expirationClaim
    }

    /// Returns a copy with a new refresh token, keeping everything else.
    ///
    /// - Parameter refreshToken: The refresh token to carry.
    /// - Returns: The updated token.
    package func replacingRefreshToken(_ refreshToken: String?) -> AuthToken {
        AuthToken(
            accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope,
            receivedAt: receivedAt, lifetime: lifetime, expirationClaim: expirationClaim, knownLifetime: knownLifetime)
    }
}

extension AuthToken {
    /// Whether two tokens are the same token: access token, refresh token, type, scope and ``expiresAt``.
    ///
    /// ``receivedAt``, ``lifetime`` and ``expirationClaim`` are compared only through ``expiresAt``, so the
    /// same stored token read at two moments is equal.
    ///
    /// - Parameters:
    ///   - lhs: A token.
    ///   - rhs: Another token.
    /// - Returns: `true` when they are the same token.
    public static func == (lhs: AuthToken, rhs: AuthToken) -> Bool {
        lhs.accessToken == rhs.accessToken && lhs.refreshToken == rhs.refreshToken && lhs.tokenType == rhs.tokenType
            && lhs.scope == rhs.scope && lhs.expiresAt == rhs.expiresAt
    }

    /// Hashes what ``==(_:_:)`` compares.
    ///
    /// - Parameter hasher: The hasher.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(accessToken)
        hasher.combine(refreshToken)
        hasher.combine(tokenType)
        hasher.combine(scope)
        hasher.combine(expiresAt)
    }
}

extension AuthToken {
    /// The system wall clock: the one place TokenKit reads `Date()`. Inject your own `now` everywhere else.
    public static let systemNow: @Sendable () -> Date = { Date() }
}
