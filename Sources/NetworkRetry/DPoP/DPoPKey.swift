public import Crypto
public import Foundation

/// The key a session proves possession of with DPoP (RFC 9449): a P-256 key that signs ES256 proofs.
///
/// TokenKit ships ``SoftwareDPoPKey`` (a P-256 key in memory, on every platform) and, on Apple platforms with a
/// Secure Enclave, `SecureEnclaveDPoPKey` (the private key never leaves the enclave). A conformance only signs; the
/// ``DPoPProver`` caches everything derived from ``publicKey`` once.
///
/// A complete small conformance, over a key kept elsewhere:
///
/// ```swift
/// struct WrappedKey: DPoPKey {
///     let key: P256.Signing.PrivateKey
///     var publicKey: P256.Signing.PublicKey { key.publicKey }
///     func signature(for message: Data) throws -> Data { try key.signature(for: message).rawRepresentation }
/// }
/// ```
public protocol DPoPKey: Sendable {
    /// The public half, for the proof's `jwk` header and the key's thumbprint.
    var publicKey: P256.Signing.PublicKey { get }

    /// Signs `message` with ECDSA P-256 and SHA-256.
    ///
    /// - Parameter message: The JWS signing input.
    /// - Returns: The signature as the 64 bytes `r || s` (the JWS form).
    /// - Throws: When the key cannot sign (a Secure Enclave key whose item is gone).
    func signature(for message: Data) throws -> Data
}

/// A P-256 DPoP key held in memory: made at random for a new session, or restored from a stored session.
///
/// Its private bytes travel only inside the session's stored record (the store's own protection applies to them as
/// to the refresh token); they never appear in a description or a log.
public struct SoftwareDPoPKey: DPoPKey, CustomStringConvertible {
    private let key: P256.Signing.PrivateKey

    /// A new random key.
    public init() {
        key = P256.Signing.PrivateKey()
    }

    /// A key restored from its ``rawRepresentation``.
    ///
    /// - Parameter rawRepresentation: The 32-byte private scalar.
    /// - Throws: When the bytes are not a P-256 private key.
    public init(rawRepresentation: Data) throws {
        key = try P256.Signing.PrivateKey(rawRepresentation: rawRepresentation)
    }

    /// The 32-byte private scalar, for the session's stored record only.
    public var rawRepresentation: Data { key.rawRepresentation }

    /// The public half.
    public var publicKey: P256.Signing.PublicKey { key.publicKey }

    /// Signs `message` with ES256.
    ///
    /// - Parameter message: The JWS signing input.
    /// - Returns: `r || s`, 64 bytes.
    /// - Throws: When signing fails.
    public func signature(for message: Data) throws -> Data {
        try key.signature(for: message).rawRepresentation
    }

    /// `SoftwareDPoPKey(P-256)`: never the key.
    public var description: String { "SoftwareDPoPKey(P-256)" }
}
