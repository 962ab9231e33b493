import Crypto
public import Foundation
import TokenKitLogCheck
import _CryptoExtras

/// An issuer of RS256 access tokens for the server adapters' tests, bound to a DPoP key when asked. Every token it
/// mints is registered with the log leak check.
public struct TestTokenIssuer: Sendable {
    /// The issuer (`iss`).
    public let url: String
    /// The signing key's `kid`.
    public let keyID: String
    private let key: _RSA.Signing.PrivateKey

    /// An issuer with a new 2048-bit RSA key.
    public init(url: String, keyID: String) {
        self.url = url
        self.keyID = keyID
        self.key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    }

    /// The issuer's JWKS document: its one public key.
    public var keySetJSON: Data {
        let primitives = try! key.publicKey.getKeyPrimitives()
        let jwk =
            #"{"kty":"RSA","alg":"RS256","kid":"\#(keyID)","n":"\#(Self.base64URL(primitives.modulus))","#
            + #""e":"\#(Self.base64URL(primitives.publicExponent))"}"#
        return Data(#"{"keys":[\#(jwk)]}"#.utf8)
    }

    /// An access token (`typ` `at+jwt`) for `subject`, issued now and valid for an hour.
    ///
    /// - Parameters:
    ///   - subject: The `sub` claim.
    ///   - jkt: The thumbprint of the DPoP key the token is bound to (`cnf.jkt`); none when `nil`.
    /// - Returns: The compact JWS.
    public func accessToken(subject: String, boundTo jkt: String?) -> String {
        let now = Int(Date().timeIntervalSince1970)
        let cnf = jkt.map { #","cnf":{"jkt":"\#($0)"}"# } ?? ""
        let payload = #"{"iss":"\#(url)","sub":"\#(subject)","iat":\#(now),"exp":\#(now + 3600)\#(cnf)}"#
        let input =
            Self.base64URL(Array(#"{"alg":"RS256","typ":"at+jwt","kid":"\#(keyID)"}"#.utf8)) + "."
            + Self.base64URL(Array(payload.utf8))
        let signature = try! key.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
        let token = input + "." + Self.base64URL(signature.rawRepresentation)
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    static func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
