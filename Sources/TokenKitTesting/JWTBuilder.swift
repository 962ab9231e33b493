public import Foundation

/// JWT-shaped tokens for tests of code that reads claims without verifying them, as a client does.
///
/// The signature is a placeholder, so any verifier refuses these tokens. A token is not registered with the log
/// check: register it (`TestSecrets.shared.register(_:as:)` of `TokenKitLogCheck`) when it stands for a secret.
public enum JWTBuilder: Sendable {
    /// A compact JWT: `header`, `claims` and `signature`, each base64url-encoded without padding.
    ///
    /// - Parameters:
    ///   - claims: The payload, a JSON object's text, such as `{"sub":"user-1","exp":1800000000}`.
    ///   - header: The header's JSON text; `{"alg":"none","typ":"JWT"}` by default.
    ///   - signature: The signature's bytes; none by default.
    /// - Returns: `header.claims.signature`.
    public static func token(
        claims: String, header: String = #"{"alg":"none","typ":"JWT"}"#, signature: Data = Data()
    ) -> String {
        [Data(header.utf8), Data(claims.utf8), signature].map(base64URL).joined(separator: ".")
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
