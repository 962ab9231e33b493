public import AuthToken
public import Foundation

extension AuthToken {
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
}
