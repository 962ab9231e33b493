public import Foundation

extension AuthToken {
    /// Creates a token whose expiry comes from the access token's JWT claims.
    ///
    /// **Fresh from an endpoint** (`receivedAt` given): with `exp` and `iat` the lifetime is `exp - iat`,
    /// measured from `receivedAt` (immune to a device clock that is off); with `exp` alone the raw `exp` is the
    /// expiry, and the time from `receivedAt` to it is the lifetime the expiry margins scale with. An `expiresIn`
    /// from the token response wins over both.
    ///
    /// **Rebuilt from stored strings** (`receivedAt` omitted): no lifetime can be measured from receipt, so the
    /// expiry is the raw `exp` against the clock (an `expiresIn` is counted from now); to inject the clock, see
    /// ``withParsedExpiration(accessToken:refreshToken:tokenType:scope:restoredAt:)``. An opaque token without
    /// `expiresIn` has no known expiry.
    ///
    /// - Parameters:
    ///   - accessToken: The access token (a JWT or opaque).
    ///   - refreshToken: The refresh token, if any.
    ///   - tokenType: The token type; defaults to `Bearer`.
    ///   - scope: The granted scope, if known.
    ///   - expiresIn: The OAuth `expires_in`, if the response carried one.
    ///   - receivedAt: When the token was received; `nil` (the default) when that is unknown.
    /// - Returns: The token.
    public static func withParsedExpiration(
        accessToken: String,
        refreshToken: String?,
        tokenType: String = "Bearer",
        scope: String? = nil,
        expiresIn: TimeInterval? = nil,
        receivedAt: Date? = nil
    ) -> AuthToken {
        guard let receivedAt else {
            let now = AuthToken.systemNow()
            if let expiresIn {
                return withParsedExpiration(
                    accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope,
                    expiresIn: expiresIn, receivedAt: now)
            }
            return withParsedExpiration(
                accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope,
                restoredAt: now)
        }
        let claims = try? JWT(parsing: accessToken).claims
        let expiration = claims?.expiration
        var lifetime = expiresIn.flatMap(AuthToken.sanitized)
        if lifetime == nil, let expiration, let issuedAt = claims?.issuedAt, expiration >= issuedAt {
            lifetime = expiration.timeIntervalSince(issuedAt)
        }
        // Fresh from an endpoint, a JWT with `exp` alone lives about from now to `exp`: the margins scale with
        // that, so a short-lived token is not "expiring soon" from the moment it arrives.
        return AuthToken(
            accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope,
            receivedAt: receivedAt, lifetime: lifetime, expirationClaim: expiration,
            knownLifetime: lifetime ?? expiration.map { max(0, $0.timeIntervalSince(receivedAt)) })
    }

    /// Rebuilds a token from stored strings (the FitIQ layout: two strings, `exp` parsed when needed), whose
    /// receipt time is unknown.
    ///
    /// The expiry is the JWT's raw `exp` compared with the clock: an `exp` in the past is expired, whatever
    /// `iat` says. No lifetime is measured from `restoredAt`, so a token stored long ago does not start a
    /// fresh lifetime. ``receivedAt`` is set to `restoredAt`, the moment of rebuilding. `exp - iat`, when the JWT
    /// carries both, is still the token's whole lifetime, which the expiry margins scale with (see
    /// ``ExpiryPolicy``).
    ///
    /// - Parameters:
    ///   - accessToken: The access token (a JWT or opaque).
    ///   - refreshToken: The refresh token, if any.
    ///   - tokenType: The token type; defaults to `Bearer`.
    ///   - scope: The granted scope, if known.
    ///   - restoredAt: Now, by the wall clock in use.
    /// - Returns: The token; an opaque token has no known expiry.
    public static func withParsedExpiration(
        accessToken: String,
        refreshToken: String?,
        tokenType: String = "Bearer",
        scope: String? = nil,
        restoredAt: Date
    ) -> AuthToken {
        let claims = try? JWT(parsing: accessToken).claims
        return AuthToken(
            accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, scope: scope,
            receivedAt: restoredAt, lifetime: nil, expirationClaim: claims?.expiration,
            knownLifetime: claims.flatMap { AuthToken.issuedLifetime(of: $0) })
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
