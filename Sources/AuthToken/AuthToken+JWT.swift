public import Foundation

extension AuthToken {
    /// Creates a token whose expiry comes from the access token's JWT claims.
    ///
    /// With `exp` and `iat` the lifetime is `exp - iat`, measured from `receivedAt` (immune to a device
    /// clock that is off); with `exp` alone the raw `exp` is the expiry. An `expiresIn` from the token
    /// response wins over both. An opaque token without `expiresIn` has no known expiry.
    ///
    /// - Parameters:
    ///   - accessToken: The access token (a JWT or opaque).
    ///   - refreshToken: The refresh token, if any.
    ///   - tokenType: The token type; defaults to `Bearer`.
    ///   - scope: The granted scope, if known.
    ///   - expiresIn: The OAuth `expires_in`, if the response carried one.
    ///   - receivedAt: When the token was received; defaults to ``systemNow``.
    /// - Returns: The token.
    public static func withParsedExpiration(
        accessToken: String,
        refreshToken: String?,
        tokenType: String = "Bearer",
        scope: String? = nil,
        expiresIn: TimeInterval? = nil,
        receivedAt: Date = AuthToken.systemNow()
    ) -> AuthToken {
        let claims = try? JWT(parsing: accessToken).claims
        let expiration = claims?.expiration
        var lifetime = expiresIn
        if lifetime == nil, let expiration, let issuedAt = claims?.issuedAt, expiration >= issuedAt {
            lifetime = expiration.timeIntervalSince(issuedAt)
        }
        return AuthToken(
            accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope,
            receivedAt: receivedAt, lifetime: lifetime, expirationClaim: expiration)
    }

    /// The `exp` claim of the access token, or `nil` when it is not a JWT or has no valid `exp`.
    ///
    /// - Returns: The raw expiration claim (server clock).
    public func parseExpirationFromJWT() -> Date? {
        try? JWT(parsing: accessToken).claims.expiration
    }

    /// The `sub` claim of the access token (the user ID), or `nil` when it is not a JWT or has none.
    ///
    /// - Returns: The subject.
    public func parseUserIdFromJWT() -> String? {
        try? JWT(parsing: accessToken).claims.subject
    }

    /// The access token's claims, or `nil` when it is not a readable JWT.
    public var claims: JWTClaims? {
        try? JWT(parsing: accessToken).claims
    }

    /// Whether the access token has the shape of a compact JWT: two dots, or a base64url JSON header.
    var looksLikeJWT: Bool {
        accessToken.utf8.starts(with: "eyJ".utf8) || accessToken.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }
}
