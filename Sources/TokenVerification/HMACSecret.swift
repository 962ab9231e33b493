public import Crypto
package import Foundation

/// A shared secret for `HS256`, `HS384` or `HS512` tokens, bound to the `kid` it was issued under.
///
/// A token is checked only against the secrets whose ``keyID`` equals its header's `kid`: a secret with a
/// `kid` never verifies a token that names another `kid` or none, and a secret without one (`keyID: nil`, as
/// Supabase's legacy secret) verifies only tokens without a `kid`. Rotate by listing the old and the new
/// secret under their own `kid`s in ``TokenVerifier/Configuration/hmacSecrets``.
///
/// ```swift
/// let secrets = [
///     HMACSecret(keyID: "2025-06", text: currentSecret),
///     HMACSecret(keyID: "2025-01", text: previousSecret),
/// ]
/// ```
///
/// No initializer needs swift-crypto. The description and mirror name the `kid` and the length, never the
/// secret.
public struct HMACSecret: Sendable, CustomStringConvertible, CustomReflectable {
    /// The `kid` a token must carry to be checked with this secret; `nil` for tokens without a `kid`.
    public let keyID: String?
    let key: SymmetricKey

    /// A secret from its bytes.
    ///
    /// - Parameters:
    ///   - keyID: The `kid` it was issued under, or `nil` for tokens without one.
    ///   - bytes: The secret's bytes. For `HS256` at least 32, for `HS384` 48, for `HS512` 64 (RFC 7518
    ///     section 3.2); a shorter secret makes every token fail with ``TokenVerificationError/weakKey``.
    public init(keyID: String?, bytes: [UInt8]) {
        self.keyID = keyID
        key = SymmetricKey(data: bytes)
    }

    /// A secret from its bytes.
    ///
    /// - Parameters:
    ///   - keyID: The `kid` it was issued under, or `nil`.
    ///   - data: The secret's bytes.
    package init(keyID: String?, data: Data) {
        self.init(keyID: keyID, bytes: Array(data))
    }

    /// A secret given as text (an environment variable, Supabase's JWT secret): its UTF-8 bytes are the key.
    ///
    /// - Parameters:
    ///   - keyID: The `kid` it was issued under, or `nil`.
    ///   - text: The secret.
    public init(keyID: String?, text: String) {
        self.init(keyID: keyID, bytes: Array(text.utf8))
    }

    /// A secret given in base64url, as a JWK's `k` member; `nil` when `base64URL` is not unpadded base64url.
    ///
    /// - Parameters:
    ///   - keyID: The `kid` it was issued under, or `nil`.
    ///   - base64URL: The encoded secret.
    public init?(keyID: String?, base64URL: String) {
        guard let bytes = Base64URL.decode(base64URL), !bytes.isEmpty else { return nil }
        self.init(keyID: keyID, bytes: bytes)
    }

    /// A secret from a swift-crypto key.
    ///
    /// - Parameters:
    ///   - keyID: The `kid` it was issued under, or `nil`.
    ///   - key: The key.
    public init(keyID: String?, key: SymmetricKey) {
        self.keyID = keyID
        self.key = key
    }

    /// The secret's length in bits.
    package var bitCount: Int { key.bitCount }

    /// `HMACSecret(kid: <kid>, bits: <n>)`: never the secret.
    public var description: String { "HMACSecret(kid: \(keyID ?? "none"), bits: \(key.bitCount))" }

    /// The `kid` and length only, so `dump()` does not print the secret.
    public var customMirror: Mirror { Mirror(self, children: ["keyID": keyID as Any, "bitCount": key.bitCount]) }
}
