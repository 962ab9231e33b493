public import AuthToken
public import Foundation

extension AuthToken {
    /// The `exp` claim of the access token, or `nil` when it is not a JWT or has no valid `exp`: the FitIQ apps'
    /// name for ``/AuthToken/AuthToken/claims``'s `expiration`.
    ///
    /// - Returns: The raw expiration claim (server clock).
    public func parseExpirationFromJWT() -> Date? {
        claims?.expiration
    }

    /// The `sub` claim of the access token (the user ID), or `nil` when it is not a JWT or has none: the FitIQ
    /// apps' name for ``/AuthToken/AuthToken/claims``'s `subject`.
    ///
    /// - Returns: The subject.
    public func parseUserIdFromJWT() -> String? {
        claims?.subject
    }

    /// The problems ``/AuthToken/AuthToken/validate(now:policy:requireRefreshToken:)`` reports, under the name the FitIQ code uses:
    /// `[AuthToken.ValidationError]`.
    public typealias ValidationError = AuthTokenError

    /// Creates a token with an absolute expiry, the FitIQ and Lume apps' memberwise initializer.
    ///
    /// `expiresAt` is compared with the clock as it is (no lifetime is measured from receipt); `nil` means
    /// the expiry is unknown. To take the expiry from the access token's `exp` claim instead, use
    /// ``/AuthToken/AuthToken/withParsedExpiration(accessToken:refreshToken:tokenType:scope:expiresIn:receivedAt:)``.
    ///
    /// - Parameters:
    ///   - accessToken: The access token.
    ///   - refreshToken: The refresh token; the apps always have one, TokenKit also allows `nil`.
    ///   - expiresAt: When the token expires, by the local clock, if known.
    ///   - receivedAt: When the token was received; now by default.
    public init(
        accessToken: String, refreshToken: String?, expiresAt: Date?, receivedAt: Date = AuthToken.systemNow()
    ) {
        self.init(
            accessToken: accessToken, refreshToken: refreshToken, receivedAt: receivedAt, lifetime: nil,
            expirationClaim: expiresAt)
    }

    /// The `userInfo` key that makes an encoder write a token in exactly Lume's old shape,
    /// `{"accessToken", "refreshToken", "expiresAt"}`, when its value is `true`, for as long as readers of the old
    /// shape (a widget, an older build sharing the Keychain item) exist.
    ///
    /// ```swift
    /// let encoder = JSONEncoder()
    /// encoder.userInfo[AuthToken.lumeShapeKey] = true
    /// let data = try encoder.encode(token)  // {"accessToken", "refreshToken", "expiresAt"} only
    /// ```
    ///
    /// Encoding a token without a refresh token or a known expiry then throws `EncodingError.invalidValue` instead
    /// of writing what those readers cannot read. Decoding needs no key: TokenKit reads both shapes, Lume's with
    /// `expiresAt` as an absolute expiry (the token type, scope and receipt time are not kept).
    public static let lumeShapeKey: CodingUserInfoKey = lumeShapeUserInfoKey
}
