import AuthToken
import Crypto
import Foundation

/// The device-side checks of an Apple identity token before it is exchanged (claims read unverified: the
/// backend verifies the signature; these checks only keep a wrong or replayed token from being sent).
enum AppleIdentityToken {
    static let issuer = "https://appleid.apple.com"

    static func check(_ identityToken: String, rawNonce: String, clientID: String, now: Date) throws(TokenRefreshError)
    {
        guard let claims = AuthToken(accessToken: identityToken, receivedAt: now).claims else {
            throw TokenRefreshError.invalidArgument
        }
        guard claims.issuer == issuer, claims.audience.contains(clientID) else { throw .invalidArgument }
        guard let expiration = claims.expiration, expiration > now else { throw .invalidArgument }
        let digest = HexEncoding.encode(SHA256.hash(data: Data(rawNonce.utf8)))
        guard !rawNonce.isEmpty, claims.string("nonce") == digest else { throw .invalidArgument }
    }
}
